"""The Memory API: every method, every error, every bad input."""

from __future__ import annotations

import io
import json
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import memwire
import pytest
from api_support import lexical
from memwire import Memory
from memwire.errors import (
    BackendError,
    ConflictError,
    InvalidInputError,
    MemwireError,
    NotFoundError,
    StorageError,
)
from memwire.memory import default_path


def test_public_exports() -> None:
    assert memwire.Memory is Memory
    assert memwire.Hit.__name__ == "Hit"
    assert issubclass(memwire.InvalidInputError, ValueError)
    assert issubclass(memwire.NotFoundError, LookupError)


# -- opening -------------------------------------------------------------------------------


def test_default_path_prefers_memwire_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "home"))
    assert default_path() == tmp_path / "home" / "memory.db"
    monkeypatch.delenv("MEMWIRE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "memwire" / "memory.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_path() == Path.home() / ".local" / "share" / "memwire" / "memory.db"


def test_none_path_opens_the_default_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, backend: str
) -> None:
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "nested" / "dir"))
    with Memory(backend=backend) as m:
        m.retain("hello there")
    assert (tmp_path / "nested" / "dir" / "memory.db").exists()


def test_ephemeral_store_forgets_at_close(backend: str) -> None:
    with Memory(":memory:", backend=backend) as m:
        m.retain("ephemeral fact")
        assert m.recall("ephemeral")[0].content == "ephemeral fact"
    with Memory(":memory:", backend=backend) as m:
        assert m.recall("ephemeral") == []


@pytest.mark.parametrize("bad", ["", "   ", 42])
def test_bad_path(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="path"):
        Memory(bad, backend="python")  # type: ignore[arg-type]


def test_unopenable_path_is_an_opaque_storage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(StorageError) as info:
        Memory(blocker / "memory.db", backend="python")
    assert str(blocker) not in str(info.value)
    assert "tmp" not in str(info.value)


def test_not_a_database_is_an_opaque_storage_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError) as info:
        Memory(path, backend="python")
    message = str(info.value)
    assert "garbage" not in message and "SELECT" not in message and "PRAGMA" not in message


def test_unknown_backend(db_path: Path) -> None:
    with pytest.raises(BackendError):
        Memory(db_path, backend="fortran")
    with pytest.raises(InvalidInputError):
        Memory(db_path, backend=3)  # type: ignore[arg-type]


def test_closed_memory_refuses_calls(db_path: Path, backend: str) -> None:
    m = Memory(db_path, backend=backend)
    assert m.backend == backend
    m.close()
    m.close()  # idempotent
    with pytest.raises(StorageError, match="closed"):
        m.retain("x")
    with pytest.raises(StorageError, match="closed"):
        m.recall("x")


# -- retain ----------------------------------------------------------------------------------


def test_retain_returns_an_id_and_get_returns_the_memory(mem: Memory) -> None:
    when = datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)
    mid = mem.retain(
        "The API gateway runs on port 8443",
        tags=["infra", "api"],
        context="from the runbook",
        created_at=when,
    )
    assert mid.startswith("mem_") and len(mid) == 36
    record = mem.get(mid)
    assert record.id == mid
    assert record.bank == "default"
    assert record.content == "The API gateway runs on port 8443"
    assert record.context == "from the runbook"
    assert record.tags == ("infra", "api")
    assert record.created_at == when
    assert record.document_id is None
    assert record.retained_at.tzinfo is not None
    assert mem.get(mid, bank="default") == record


def test_created_at_defaults_to_now_and_is_utc(mem: Memory) -> None:
    before = datetime.now(timezone.utc)
    record = mem.get(mem.retain("now-ish"))
    assert before - timedelta(seconds=5) <= record.created_at <= datetime.now(timezone.utc)
    other = mem.get(mem.retain("offset date", created_at="2024-01-01T12:00:00+05:00"))
    assert other.created_at == datetime(2024, 1, 1, 7, 0, tzinfo=timezone.utc)


def test_identical_content_returns_the_existing_id(mem: Memory) -> None:
    first = mem.retain("same words")
    assert mem.retain("same words", tags=["other"]) == first
    assert mem.retain("same words ") != first  # not byte-identical
    assert mem.retain("same words", bank="elsewhere") != first
    assert mem.stats()["count"] == 2


def test_nfkc_equivalent_content_is_the_same_memory(mem: Memory) -> None:
    first = mem.retain("\uff43\uff41\uff46\uff45 menu")
    assert mem.retain("cafe menu") == first
    assert mem.get(first).content == "cafe menu"


def test_banks_are_created_by_first_retain_and_kept_apart(mem: Memory) -> None:
    assert mem.banks() == []
    a = mem.retain("alpha secret plan", bank="project-a")
    mem.retain("beta launch plan", bank="project-b")
    assert mem.banks() == ["project-a", "project-b"]
    assert [h.id for h in mem.recall("alpha plan", bank="project-a")] == [a]
    assert all(h.id != a for h in mem.recall("alpha plan", bank="project-b"))
    with pytest.raises(NotFoundError):
        mem.get(a, bank="project-b")


def test_document_replace_swaps_the_revision(mem: Memory) -> None:
    v1 = mem.retain("release checklist version one", document_id="doc-1")
    v2 = mem.retain("release checklist version two", document_id="doc-1")
    assert v1 != v2
    old = mem.get(v1)  # superseded: kept in the history, out of recall and listings
    assert (old.status, old.superseded_by) == ("superseded", v2)
    assert [r.id for r in mem.history(v2)] == [v1, v2]
    assert mem.get(v2).document_id == "doc-1"
    hits = mem.recall("release checklist")
    assert [h.id for h in hits] == [v2]
    assert mem.retain("release checklist version two", document_id="doc-1") == v2
    assert mem.stats()["count"] == 1


def test_document_append_refuses_a_second_row(mem: Memory) -> None:
    v1 = mem.retain("first note", document_id="doc-2", update_mode="append")
    with pytest.raises(ConflictError, match="already"):
        mem.retain("second note", document_id="doc-2", update_mode="append")
    assert mem.retain("first note", document_id="doc-2", update_mode="append") == v1
    assert [r.id for r in mem.memories()] == [v1]


def test_documents_are_not_deduplicated_against_loose_memories(mem: Memory) -> None:
    loose = mem.retain("shared text")
    doc = mem.retain("shared text", document_id="d")
    assert loose != doc


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"content": ""}, "content must not be blank"),
        ({"content": "   \n"}, "content must not be blank"),
        ({"content": None}, "content must be a string"),
        ({"content": b"bytes"}, "content must be a string"),
        ({"content": "x" * 100_001}, "content is too long"),
        ({"content": "bad \ud83d surrogate"}, "surrogate"),
        ({"content": "ok", "bank": ""}, "bank must not be blank"),
        ({"content": "ok", "bank": "  "}, "bank must not be blank"),
        ({"content": "ok", "bank": None}, "bank must be a string"),
        ({"content": "ok", "bank": "a\nb"}, "control"),
        ({"content": "ok", "tags": [""]}, "tag must not be blank"),
        ({"content": "ok", "tags": [7]}, "tag must be a string"),
        ({"content": "ok", "tags": 7}, "tags must be a list"),
        ({"content": "ok", "context": 5}, "context must be a string"),
        ({"content": "ok", "context": "x" * 20_001}, "context is too long"),
        ({"content": "ok", "created_at": "not a date"}, "created_at"),
        ({"content": "ok", "created_at": 1714550000}, "created_at"),
        ({"content": "ok", "document_id": ""}, "document_id must not be blank"),
        ({"content": "ok", "document_id": 12}, "document_id must be a string"),
        ({"content": "ok", "update_mode": "merge"}, "update_mode"),
    ],
)
def test_retain_rejects_bad_input_and_writes_nothing(
    mem: Memory, kwargs: dict[str, object], match: str
) -> None:
    kwargs = dict(kwargs)  # the parametrized dict is shared between backends
    content = kwargs.pop("content")
    with pytest.raises(InvalidInputError, match=match) as info:
        mem.retain(content, **kwargs)  # type: ignore[arg-type]
    assert isinstance(info.value, ValueError)
    assert mem.banks() == []


def test_redaction_happens_before_storage(mem: Memory, db_path: Path) -> None:
    mid = mem.retain(
        "ping alice@example.com with key sk-" + "a" * 40,
        context="<private>she lives at 12 Elm St</private> and Bearer abcdefghijk123",
    )
    record = mem.get(mid)
    assert record.content == "ping [REDACTED:email] with key [REDACTED:api_key]"
    assert record.context == "[REDACTED:private] and Bearer [REDACTED:bearer_token]"
    mem.close()
    raw = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    for secret in (b"alice@example.com", b"sk-aaaa", b"Elm St", b"abcdefghijk123"):
        assert secret not in raw


def test_redacted_text_is_what_recall_finds(mem: Memory) -> None:
    mem.retain("reach bob@example.org about invoices")
    assert lexical(mem.recall("example.org")) == []
    hits = mem.recall("invoices")
    assert hits[0].content == "reach [REDACTED:email] about invoices"


# -- retain_many -----------------------------------------------------------------------------


def test_retain_many_mixes_strings_and_dicts(mem: Memory) -> None:
    ids = mem.retain_many(
        [
            "plain string memory",
            {
                "content": "dict memory",
                "tags": ["t"],
                "context": "ctx",
                "created_at": "2023-02-03",
                "document_id": "doc",
            },
            "plain string memory",
        ],
        bank="bulk",
    )
    assert len(ids) == 3 and ids[0] == ids[2]
    record = mem.get(ids[1], bank="bulk")
    assert record.tags == ("t",) and record.context == "ctx" and record.document_id == "doc"
    assert record.created_at == datetime(2023, 2, 3, tzinfo=timezone.utc)
    assert mem.retain_many([], bank="bulk") == []


def test_retain_many_same_document_twice_keeps_the_last(mem: Memory) -> None:
    ids = mem.retain_many(
        [{"content": "draft one", "document_id": "d"}, {"content": "draft two", "document_id": "d"}]
    )
    assert mem.stats()["count"] == 1
    assert mem.get(ids[1]).content == "draft two"


@pytest.mark.parametrize(
    ("items", "match"),
    [
        (["fine", ""], r"items\[1\]: content must not be blank"),
        (["fine", 3], r"items\[1\]: each item must be a string or a dict"),
        ([{"content": "x", "colour": "red"}], "unknown item keys: colour"),
        ([{"tags": ["x"]}], "no 'content'"),
        ([{"content": "x", "created_at": "never"}], "created_at"),
    ],
)
def test_retain_many_validates_everything_first(
    mem: Memory, items: list[object], match: str
) -> None:
    with pytest.raises(InvalidInputError, match=match):
        mem.retain_many(items)
    assert mem.banks() == []


@pytest.mark.parametrize("bad", ["a string", b"bytes", {"content": "x"}])
def test_retain_many_wants_a_list(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="list"):
        mem.retain_many(bad)  # type: ignore[arg-type]


def test_retain_many_append_conflict_writes_nothing_of_its_batch(mem: Memory) -> None:
    mem.retain("original", document_id="d", update_mode="append")
    with pytest.raises(ConflictError):
        mem.retain_many(
            ["new one", {"content": "other", "document_id": "d", "update_mode": "append"}]
        )
    assert [r.content for r in mem.memories()] == ["original"]
    assert lexical(mem.recall("new one")) == []


# -- get / forget / memories / stats / banks / delete_bank ------------------------------------


def test_get_errors(mem: Memory) -> None:
    with pytest.raises(NotFoundError) as info:
        mem.get("mem_DOESNOTEXIST")
    assert isinstance(info.value, LookupError)
    for bad in ("", None, 5, "x" * 65):
        with pytest.raises(InvalidInputError):
            mem.get(bad)  # type: ignore[arg-type]


def test_forget_is_idempotent_and_hides_the_memory(mem: Memory) -> None:
    mid = mem.retain("the wifi password rotates monthly")
    keep = mem.retain("the wifi router is in the closet")
    assert mem.forget(mid) is True
    assert mem.forget(mid) is False
    assert mem.get(mid).status == "trashed"  # in the trash (trash_days, default 30)
    assert [r.id for r in mem.memories()] == [keep]
    assert [h.id for h in mem.recall("wifi")] == [keep]
    assert mem.forget(keep, bank="other") is False
    assert mem.get(keep).id == keep
    assert mem.forget(keep, bank="default") is True
    with pytest.raises(InvalidInputError):
        mem.forget("")


def test_forgotten_content_can_be_retained_again(mem: Memory) -> None:
    first = mem.retain("coffee at nine")
    mem.forget(first)
    second = mem.retain("coffee at nine")
    assert second != first
    assert [h.id for h in mem.recall("coffee")] == [second]


def test_memories_pages_newest_first(mem: Memory) -> None:
    ids = [mem.retain(f"note number {i}", created_at=f"2024-01-{i + 1:02d}") for i in range(5)]
    assert [r.id for r in mem.memories(limit=2)] == [ids[4], ids[3]]
    assert [r.id for r in mem.memories(limit=2, offset=2)] == [ids[2], ids[1]]
    assert [r.id for r in mem.memories(offset=4)] == [ids[0]]
    assert mem.memories(bank="nothing-here") == []
    for kwargs in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "5"}, {"limit": True}):
        with pytest.raises(InvalidInputError):
            mem.memories(**kwargs)  # type: ignore[arg-type]


def test_stats(mem: Memory) -> None:
    mem.retain("one", tags=["a", "b"], created_at="2024-01-01")
    mem.retain("two", tags=["a"], created_at="2024-03-01T10:00:00Z")
    stats = mem.stats()
    assert stats == {
        "bank": "default",
        "count": 2,
        "tags": {"a": 2, "b": 1},
        "oldest": datetime(2024, 1, 1, tzinfo=timezone.utc),
        "newest": datetime(2024, 3, 1, 10, tzinfo=timezone.utc),
    }
    with pytest.raises(NotFoundError):
        mem.stats(bank="missing")


def test_stats_of_an_emptied_bank(mem: Memory) -> None:
    mem.forget(mem.retain("short lived"))
    assert mem.stats() == {
        "bank": "default",
        "count": 0,
        "tags": {},
        "oldest": None,
        "newest": None,
    }


def test_delete_bank(mem: Memory) -> None:
    mid = mem.retain("doomed memory", bank="tmp")
    mem.retain("survivor memory", bank="keep")
    assert mem.recall("doomed", bank="tmp")
    assert mem.delete_bank("tmp") is True
    assert mem.delete_bank("tmp") is False
    assert mem.banks() == ["keep"]
    assert mem.recall("doomed", bank="tmp") == []
    with pytest.raises(NotFoundError):
        mem.get(mid)
    again = mem.retain("doomed memory", bank="tmp")
    assert [h.id for h in mem.recall("doomed", bank="tmp")] == [again]
    with pytest.raises(InvalidInputError):
        mem.delete_bank("")


# -- config / sweep --------------------------------------------------------------------------


def test_config_round_trip(mem: Memory) -> None:
    with pytest.raises(NotFoundError):
        mem.get_config("fresh")
    with pytest.raises(InvalidInputError, match="unknown config key 'owner'"):
        mem.set_config("fresh", {"recall_max_tokens": 100, "owner": {"team": "infra"}})
    assert mem.banks() == []  # refused whole: no bank was created
    config = mem.set_config("fresh", {"recall_max_tokens": 100, "memory_wire": {"team": "x"}})
    assert config == {"recall_max_tokens": 100, "memory_wire": {"team": "x"}}
    assert mem.banks() == ["fresh"]
    assert mem.get_config("fresh") == config
    assert mem.set_config("fresh", {"memory_wire": None, "ttl_days": 3}) == {
        "recall_max_tokens": 100,
        "ttl_days": 3,
    }


def test_set_config_rejects_bad_values_and_writes_nothing(mem: Memory) -> None:
    mem.set_config("b", {"recall_max_tokens": 10})
    for bad in ({"recall_max_tokens": -1}, {"ttl_days": 0}, {"x": {1, 2}}, "not a dict"):
        with pytest.raises(InvalidInputError):
            mem.set_config("b", bad)  # type: ignore[arg-type]
    assert mem.get_config("b") == {"recall_max_tokens": 10}
    with pytest.raises(InvalidInputError):
        mem.set_config("", {})


def test_retain_tags_config_tags_every_new_memory(mem: Memory) -> None:
    mem.set_config("tagged", {"retain_tags": ["auto", "proj"]})
    mid = mem.retain("tagged memory", bank="tagged", tags=["mine", "auto"])
    assert mem.get(mid).tags == ("mine", "auto", "proj")
    assert [h.id for h in mem.recall("memory", bank="tagged", tags=["proj"])] == [mid]


def test_ttl_hides_and_sweep_removes_old_memories(mem: Memory) -> None:
    now = datetime.now(timezone.utc)
    old = mem.retain("ancient fact about llamas", created_at=now - timedelta(days=40))
    new = mem.retain("recent fact about llamas", created_at=now - timedelta(days=1))
    other = mem.retain("old llamas elsewhere", bank="no-ttl", created_at=now - timedelta(days=400))
    assert {h.id for h in mem.recall("llamas")} == {old, new}
    mem.set_config("default", {"ttl_days": 30})
    # Before any recall meets it (a recall hands the bank to the background sweep, below).
    assert mem.sweep(dry_run=True) == [old]
    assert mem.get(old).id == old
    assert mem.sweep() == [old]
    assert mem.sweep() == []
    with pytest.raises(NotFoundError):
        mem.get(old)
    assert [h.id for h in mem.recall("llamas")] == [new]
    # An expired memory is hidden from recall at once, and the recall that met it has the
    # background thread sweep it.
    aged = mem.retain("aged fact about llamas", created_at=now - timedelta(days=50))
    assert [h.id for h in mem.recall("llamas")] == [new]
    mem._snapshotter.drain()
    with pytest.raises(NotFoundError):
        mem.get(aged)
    assert mem.sweep() == []
    assert mem.get(other).id == other
    assert [h.id for h in mem.recall("llamas", bank="no-ttl")] == [other]


# -- errors are opaque -----------------------------------------------------------------------


def test_storage_errors_hide_sql_and_paths(db_path: Path, backend: str) -> None:
    m = Memory(db_path, backend=backend)
    m.retain("something")
    m._store.conn.execute("DROP TABLE memory_tags")  # type: ignore[attr-defined]
    with pytest.raises(StorageError) as info:
        m.retain("something else", tags=["x"])
    message = str(info.value)
    assert isinstance(info.value, MemwireError)
    assert "memory_tags" not in message and "INSERT" not in message and str(db_path) not in message
    m.close()


# -- threads ---------------------------------------------------------------------------------


def test_many_threads_share_one_memory(mem: Memory) -> None:
    errors: list[BaseException] = []
    ids: list[str] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        try:
            for i in range(25):
                mid = mem.retain(f"thread {n} note {i} shared-topic", bank="threads")
                with lock:
                    ids.append(mid)
                mem.recall("shared-topic", bank="threads", limit=5)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 200
    assert mem.stats(bank="threads")["count"] == 200
    assert len(mem.recall("shared-topic", bank="threads", limit=100)) == 100


# -- export / import -------------------------------------------------------------------------


def test_export_import_round_trips_exactly(mem: Memory, tmp_path: Path, backend: str) -> None:
    mem.set_config("a", {"recall_max_tokens": 123, "memory_wire": {"custom": [1, "two"]}})
    mem.retain(
        "alpha memory about rivers",
        bank="a",
        tags=["x", "y"],
        context="ctx one",
        created_at="2020-02-02T02:02:02.123456Z",
    )
    mem.retain("beta memory about rivers", bank="a", document_id="doc-7")
    mem.retain("gamma memory", bank="b")
    path = tmp_path / "dump.jsonl"
    assert mem.export(path) == 3
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["format"] == "memwire.export" and lines[0]["version"] == 2
    with Memory(tmp_path / "copy.db", backend=backend) as copy:
        assert copy.import_(path) == 3
        assert copy.import_(path) == 0  # ids already present are skipped
        assert copy.banks() == ["a", "b"]
        assert copy.get_config("a") == mem.get_config("a")
        for bank in ("a", "b"):
            assert copy.memories(bank=bank) == mem.memories(bank=bank)
        assert copy.recall("rivers memory", bank="a") == mem.recall("rivers memory", bank="a")
        again = tmp_path / "again.jsonl"
        copy.export(again)
    strip = lambda text: text.splitlines()[1:]  # noqa: E731 - the header carries a timestamp
    assert strip(again.read_text(encoding="utf-8")) == strip(path.read_text(encoding="utf-8"))


def test_export_one_bank_to_a_file_object_and_import_elsewhere(mem: Memory) -> None:
    mid = mem.retain("only this bank", bank="one", tags=["t"])
    mem.retain("not exported", bank="two")
    buffer = io.StringIO()
    assert mem.export(buffer, bank="one") == 1
    with pytest.raises(NotFoundError):
        mem.export(io.StringIO(), bank="missing")
    buffer.seek(0)
    with Memory(":memory:", backend=mem.backend) as other:
        assert other.import_(buffer, bank="renamed") == 1
        record = other.get(mid)
        assert record.bank == "renamed" and record.tags == ("t",)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("", "empty"),
        ("not json\n", "line 1: not valid JSON"),
        ('{"format": "other", "version": 1}\n', "not a memwire export"),
        ('{"format": "memwire.export", "version": 99}\n', "version 99, written by a newer"),
        ('{"format": "memwire.export", "version": 0}\n', "unsupported export version 0"),
        ('{"format": "memwire.export", "version": 1}\n[1]\n', "line 3: expected a JSON object"),
        (
            '{"format": "memwire.export", "version": 1}\n{"type": "what", "bank": "b"}\n',
            "unknown line type",
        ),
        (
            '{"format": "memwire.export", "version": 1}\n'
            '{"type": "memory", "bank": "b", "id": "m1", "content": ""}\n',
            "line 3: content",
        ),
        (
            '{"format": "memwire.export", "version": 1}\n'
            '{"type": "memory", "bank": "b", "content": "x"}\n',
            "line 3: id",
        ),
        (
            '{"format": "memwire.export", "version": 1}\n'
            '{"type": "memory", "bank": "b", "id": "m1", "content": "x", "extra": 1}\n',
            "unknown keys",
        ),
    ],
)
def test_import_rejects_bad_files_and_writes_nothing(mem: Memory, text: str, match: str) -> None:
    good = '{"type": "memory", "bank": "b", "id": "m0", "content": "fine"}\n'
    body = (
        text
        if not text.startswith('{"format": "memwire.export", "version": 1}')
        else (text.replace("\n", "\n" + good, 1))
    )
    with pytest.raises(InvalidInputError, match=match):
        mem.import_(io.StringIO(body))
    assert mem.banks() == []


def test_import_redacts(mem: Memory) -> None:
    body = (
        '{"format": "memwire.export", "version": 1}\n'
        '{"type": "memory", "bank": "b", "id": "m1", "content": "mail carol@example.com"}\n'
    )
    assert mem.import_(io.StringIO(body)) == 1
    assert mem.get("m1").content == "mail [REDACTED:email]"


def test_import_missing_file(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="cannot open"):
        mem.import_(tmp_path / "absent.jsonl")


def test_reflect_dates_every_memory_it_serves(mem: Memory) -> None:
    ids = [
        mem.retain("the billing API listens on port 8080", created_at="2025-05-17"),
        mem.retain("the billing API moved to port 9090", created_at="2026-02-03T23:30:00-02:00"),
    ]
    lines = [
        line for line in mem.reflect("billing API port").splitlines() if line.startswith("- [")
    ]
    assert sorted(lines) == sorted(
        [
            f"- [{ids[0]}] (2025-05-17) the billing API listens on port 8080",
            f"- [{ids[1]}] (2026-02-04) the billing API moved to port 9090",  # in UTC
        ]
    )
