"""History and trash survive a copy (issue 17): ``Memory.export`` / ``import_`` and the store
copy of ``memwire migrate`` carry superseded and trashed memories with their links and dates,
on every store and both kernels, and an export of the version before (live memories only)
still imports."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from memwire import Memory
from memwire.errors import InvalidInputError
from memwire.store import Store
from memwire.store.copy import copy_store
from memwire.store.sqlite import SQLiteStore
from store_support import StoreFactory
from test_memory_on_stores import WordEmbedder

QUERIES = ("API port", "runbook", "VPN endpoint", "lunch", "note")


def memory_on(store: Store, backend: str) -> Memory:
    return Memory(store=store, backend=backend, embedder=WordEmbedder())


def build(mem: Memory) -> list[str]:
    """A bank with every kind of version: a chain of updates (one in place), a document
    replaced, memories trashed, one restored, and a version whose successor was purged (it
    is superseded by nothing); a second bank with trash. The ids that are not purged."""
    a = mem.retain("the API port is 8080", tags=["infra"])
    b = mem.update(a, content="the API port is 9090")
    c = mem.update(b, content="the API port is 9191", context="after the move")
    assert mem.update(c, tags=["infra", "net"]) == c
    d = mem.retain("the old VPN endpoint is vpn1")
    mem.forget(d)
    r1 = mem.retain("runbook v1", document_id="runbook")
    r2 = mem.retain("runbook v2: page the on-call first", document_id="runbook")
    e = mem.retain("lunch is at noon")
    mem.forget(e)
    mem.restore(e)
    s1 = mem.retain("a note that was replaced")
    s2 = mem.update(s1, content="a note whose new version was purged")
    assert mem.purge(s2)
    other = mem.retain("a note in another bank", bank="other")
    kept = mem.retain("another note kept", bank="other")
    mem.forget(other, bank="other")
    return [a, b, c, d, r1, r2, e, s1, other, kept]


def picture(mem: Memory, ids: list[str]) -> dict[str, Any]:
    """What the history, trash, reads and recalls (now and as of every instant a version
    began or ended) answer."""
    records = [mem.get(i) for i in ids]
    instants = sorted(
        {r.retained_at for r in records} | {r.archived_at for r in records if r.archived_at}
    )
    return {
        "get": records,
        "history": {i: mem.history(i) for i in ids},
        "trash": {bank: mem.trash(bank=bank) for bank in ("default", "other")},
        "live": {bank: mem.memories(bank=bank) for bank in ("default", "other")},
        "recall": [mem.recall(q, limit=20) for q in QUERIES],
        "as_of": [[mem.recall(q, as_of=t, limit=20) for q in QUERIES] for t in instants],
    }


@pytest.fixture
def source(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with memory_on(store_factory.make(tmp_path / "source"), backend) as mem:
        yield mem


def test_the_history_is_what_it_should_be(source: Memory) -> None:
    # The picture compared below holds every kind of version (so a copy that dropped one
    # would differ).
    ids = build(source)
    statuses = [source.get(i).status for i in ids]
    assert statuses == [
        "superseded",
        "superseded",
        "live",
        "trashed",
        "superseded",
        "live",
        "live",
        "superseded",
        "trashed",
        "live",
    ]
    assert source.get(ids[7]).superseded_by is None  # its successor was purged
    assert [r.id for r in source.history(ids[0])] == ids[:3]


def test_export_and_import_keep_history_and_trash(
    source: Memory, tmp_path: Path, backend: str
) -> None:
    ids = build(source)
    expected = picture(source, ids)
    path = tmp_path / "dump.jsonl"
    assert source.export(path) == 10
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert (header["format"], header["version"]) == ("memwire.export", 2)
    with memory_on(SQLiteStore(tmp_path / "copy.db"), backend) as copy:
        assert copy.import_(path) == 10
        assert picture(copy, ids) == expected
        assert copy.import_(path) == 0  # every id is there already, live or archived
        assert picture(copy, ids) == expected
        again = tmp_path / "again.jsonl"
        assert copy.export(again) == 10
    # The same lines but the header's (it carries a timestamp).
    assert again.read_text().splitlines()[1:] == path.read_text().splitlines()[1:]


def test_a_half_imported_file_completes_on_a_second_import(
    source: Memory, tmp_path: Path, backend: str
) -> None:
    ids = build(source)
    expected = picture(source, ids)
    buffer = io.StringIO()
    source.export(buffer)
    lines = buffer.getvalue().splitlines(keepends=True)
    with memory_on(SQLiteStore(tmp_path / "copy.db"), backend) as copy:
        assert copy.import_(io.StringIO("".join(lines[:7]))) == 5  # header, bank and 5
        assert copy.import_(io.StringIO(buffer.getvalue())) == 5
        assert picture(copy, ids) == expected


def test_migrate_keeps_history_and_trash_both_ways(
    store_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    store = store_factory.make(tmp_path / "source")
    with memory_on(store, backend) as mem:
        ids = build(mem)
        expected = picture(mem, ids)
        sqlite = SQLiteStore(tmp_path / "copy.db")
        reports = copy_store(store, sqlite)
        assert [(r.bank, r.total, r.archived, r.copied, r.skipped) for r in reports] == [
            ("default", 8, 5, 8, 0),
            ("other", 2, 1, 2, 0),
        ]
        again = copy_store(store, sqlite)  # a second run copies nothing twice
        assert [(r.copied, r.skipped) for r in again] == [(0, 8), (0, 2)]
    with memory_on(sqlite, backend) as copy:
        assert picture(copy, ids) == expected
    back_store = store_factory.make(tmp_path / "back")
    copied = SQLiteStore(tmp_path / "copy.db")
    try:
        copy_store(copied, back_store)
    finally:
        copied.close()
    with memory_on(back_store, backend) as back:
        assert picture(back, ids) == expected


# An export written by memwire before the archive (version 1): live memories only.
VERSION_1 = (
    '{"format":"memwire.export","version":1,"exported_at":"2024-05-01T09:30:00.000000Z"}\n'
    '{"type":"bank","bank":"default","config":{"trash_days":7}}\n'
    '{"type":"memory","bank":"default","id":"mem_0000000000000000000000000000000a",'
    '"content":"the API port is 9090","context":null,"tags":["infra"],'
    '"created_at":"2024-04-01T00:00:00.000000Z","retained_at":"2024-04-01T00:00:00.000000Z",'
    '"document_id":null}\n'
    '{"type":"memory","bank":"default","id":"mem_0000000000000000000000000000000b",'
    '"content":"runbook v2","context":"ops","tags":[],'
    '"created_at":"2024-04-02T00:00:00.000000Z","retained_at":"2024-04-02T00:00:00.000000Z",'
    '"document_id":"runbook"}\n'
)


def test_an_export_of_version_1_still_imports(source: Memory) -> None:
    assert source.import_(io.StringIO(VERSION_1)) == 2
    assert source.import_(io.StringIO(VERSION_1)) == 0
    assert source.get_config("default")["trash_days"] == 7
    first = source.get("mem_0000000000000000000000000000000a")
    assert (first.content, first.tags, first.status, first.archived_at) == (
        "the API port is 9090",
        ("infra",),
        "live",
        None,
    )
    assert source.history(first.id) == [first]
    assert source.trash() == []
    assert [h.id for h in source.recall("runbook")] == ["mem_0000000000000000000000000000000b"]


HEADER_2 = '{"format":"memwire.export","version":2}\n'
LINE = (
    '{"type":"memory","bank":"b","id":"mem_1","content":"x","created_at":'
    '"2024-04-01T00:00:00.000000Z","retained_at":"2024-04-01T00:00:00.000000Z"'
)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        (
            '{"format":"memwire.export","version":3}\n',
            "this export is of version 3, written by a newer memwire; this one reads versions "
            "1 to 2",
        ),
        ('{"format":"memwire.export","version":true}\n', "unsupported export version True"),
        ('{"format":"memwire.export","version":"2"}\n', "unsupported export version '2'"),
        (
            '{"format":"memwire.export","version":1}\n'
            + LINE
            + ',"status":"trashed","archived_at":"2024-04-02T00:00:00Z"}\n',
            "line 2: unknown keys: archived_at, status",
        ),
        (HEADER_2 + LINE + ',"status":"gone"}\n', "line 2: status must be"),
        (HEADER_2 + LINE + ',"status":"trashed"}\n', "line 2: a trashed memory needs archived_at"),
        (
            HEADER_2 + LINE + ',"status":"trashed","archived_at":"soon"}\n',
            "line 2: ",
        ),
        (
            HEADER_2 + LINE + ',"status":"superseded","superseded_by":7,"archived_at":'
            '"2024-04-02T00:00:00Z"}\n',
            "line 2: id must be",
        ),
        (
            HEADER_2 + LINE + ',"archived_at":"2024-04-02T00:00:00Z"}\n',
            "line 2: a live memory has no superseded_by or archived_at",
        ),
    ],
)
def test_import_refuses_what_it_cannot_read_and_writes_nothing(
    source: Memory, text: str, match: str
) -> None:
    good = HEADER_2 + LINE.replace("mem_1", "mem_0") + "}\n"
    with pytest.raises(InvalidInputError, match=match.replace("(", r"\(")):
        source.import_(io.StringIO(text + good.split("\n", 1)[1]))
    assert source.banks() == []


def test_an_archived_line_imports_with_its_link_and_date(source: Memory) -> None:
    text = (
        HEADER_2
        + LINE.replace("mem_1", "mem_2").replace('"x"', '"the API port is 9090"')
        + "}\n"
        + LINE.replace('"x"', '"the API port is 8080"')
        + ',"status":"superseded","superseded_by":"mem_2",'
        '"archived_at":"2024-04-01T00:00:00.000001+00:00"}\n'
    )
    assert source.import_(io.StringIO(text)) == 2
    old = source.get("mem_1", bank="b")
    assert (old.status, old.superseded_by, old.archived_at.isoformat()) == (
        "superseded",
        "mem_2",
        "2024-04-01T00:00:00.000001+00:00",
    )
    assert [r.id for r in source.history("mem_2")] == ["mem_1", "mem_2"]
    assert [h.id for h in source.recall("API port", bank="b")] == ["mem_2"]
