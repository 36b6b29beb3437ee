"""``memwire migrate``: SQLite to PostgreSQL and back, resumable (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from backends import require
from memwire import Memory
from memwire.cli import main
from memwire.store import Store, open_store
from memwire.store import copy as store_copy
from memwire.store.postgres import PostgresStore
from pg_servers import Proxy, proxied, scratch_url
from postgres_support import postgres_url


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    return require(request.param)


def fill(memory: Memory) -> None:
    memory.set_config("infra", {"retain_tags": ["team"], "recall_max_tokens": 500})
    memory.retain("the staging database listens on port 5433", bank="infra", tags=["db"])
    gone = memory.retain("the old VPN endpoint is vpn1", bank="infra")
    memory.retain("deploys freeze on fridays", bank="infra", context="asked about deploys")
    memory.retain("runbook v1", bank="infra", document_id="runbook")
    memory.retain("runbook v2: page the on-call first", bank="infra", document_id="runbook")
    memory.forget(gone)  # to the trash
    port = memory.retain("the API listens on 8080", bank="infra")
    memory.update(port, content="the API listens on 9090", bank="infra")
    for n in range(30):
        memory.retain(f"lunch option {n} near the office", bank="life", tags=[f"t{n % 3}"])


def content_of(store: Store) -> dict[str, Any]:
    """Each bank's config, rows (without ordinals: the target numbers its own) and vectors."""
    out: dict[str, Any] = {}
    for name in store.bank_names():
        head = store.head(name)
        assert head is not None
        changes = store.changes_since(head.bank_id, 0)
        assert changes is not None
        rows = list(store.iter_rows(name))
        vectors = dict(zip(changes.added.ordinals, changes.added.vectors, strict=True))
        out[name] = {
            "config": head.config,
            "space": head.space,
            "rows": [
                (r.id, r.content, r.context, r.tags, r.created_at, r.retained_at, r.document_id)
                for r in rows
            ],
            "vectors": [vectors[r.ordinal] for r in rows],
            # The archive in its order, with its links and dates (ordinals are the target's).
            "archive": [
                (
                    v.row.id,
                    v.row.content,
                    v.row.tags,
                    v.row.retained_at,
                    v.row.document_id,
                    v.row.status,
                    v.row.superseded_by,
                    v.row.archived_at,
                    v.vector,
                )
                for v in store.archive_page(head.bank_id, 0, 1000)
            ],
        }
    return out


def history_of(memory: Memory) -> dict[str, Any]:
    """Every memory's history and every bank's trash, as the Memory API reads them."""
    ids = [r.id for bank in ("infra", "life") for r in memory.memories(bank=bank, limit=100)]
    ids += [r.id for r in memory.trash(bank="infra")]
    return {
        "history": {i: memory.history(i) for i in ids},
        "trash": memory.trash(bank="infra"),
    }


def recalls(memory: Memory) -> list[list[tuple[str, float]]]:
    queries = [("infra", "staging database port"), ("infra", "runbook"), ("life", "lunch")]
    return [[(h.id, h.score) for h in memory.recall(q, bank=b, limit=20)] for b, q in queries]


def test_sqlite_to_postgresql_and_back_keeps_everything(
    tmp_path: Path, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memory.db"
    with Memory(db, backend=backend) as memory:
        fill(memory)
        expected = recalls(memory)
        versions = history_of(memory)
        assert len(versions["history"]) == 35 and len(versions["trash"]) == 1
    url = scratch_url()

    assert main(["migrate", "--json", "--no-progress", "--from", f"sqlite:{db}", "--to", url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["bank"], r["total"], r["archived"], r["copied"], r["skipped"]) for r in report] == [
        ("infra", 7, 3, 7, 0),
        ("life", 30, 0, 30, 0),
    ]
    source = open_store(db)
    target = PostgresStore(url)
    try:
        assert content_of(target) == content_of(source)
    finally:
        source.close()
        target.close()
    with Memory(url, backend=backend) as memory:
        assert recalls(memory) == expected
        assert history_of(memory) == versions

    back = tmp_path / "back.db"
    assert main(["migrate", "--no-progress", "--from", url, "--to", str(back)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "infra: 7 copied, 0 already there (of 7, 3 of them superseded or trashed)",
        "life: 30 copied, 0 already there (of 30)",
    ]
    with Memory(back, backend=backend) as memory:
        assert recalls(memory) == expected
        assert history_of(memory) == versions
    back_store, source = open_store(back), open_store(db)
    try:
        assert content_of(back_store) == content_of(source)
    finally:
        back_store.close()
        source.close()

    # Running it again copies nothing twice.
    assert main(["migrate", "--json", "--no-progress", "--from", str(db), "--to", url]) == 0
    again = json.loads(capsys.readouterr().out)
    assert [(r["copied"], r["skipped"]) for r in again] == [(0, 7), (0, 30)]


@pytest.mark.backend_independent  # stores only, no kernel
def test_an_interrupted_migration_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memory.db"
    with Memory(db, backend="python") as memory:
        notes = memory.retain_many([f"note number {n}" for n in range(250)], bank="big")
        for note in notes[200:]:  # the archive comes after the first 200 (in ordinal order)
            memory.forget(note, bank="big")
    url = scratch_url()
    monkeypatch.setattr(store_copy, "BATCH", 100)

    def stop_after_first_batch(report: store_copy.BankCopy, done: int) -> None:
        raise KeyboardInterrupt

    source, target = open_store(db), PostgresStore(url)
    with pytest.raises(KeyboardInterrupt):
        store_copy.copy_store(source, target, progress=stop_after_first_batch)
    assert target.count_rows(target.head("big").bank_id) == 100  # type: ignore[union-attr]
    source.close()
    target.close()

    assert main(["migrate", "--json", "--no-progress", "--from", str(db), "--to", url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["total"], r["archived"], r["copied"], r["skipped"]) for r in report] == [
        (250, 50, 150, 100)
    ]
    source, target = open_store(db), PostgresStore(url)
    try:
        assert content_of(target) == content_of(source)
    finally:
        source.close()
        target.close()


@pytest.mark.backend_independent
def test_migrate_refuses_bad_locations_and_never_shows_the_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nothing.db"
    assert main(["migrate", "--from", str(missing), "--to", str(tmp_path / "t.db")]) == 2
    assert "no store file" in capsys.readouterr().err
    assert not missing.exists()  # nothing created
    db = tmp_path / "memory.db"
    open_store(db).close()
    assert main(["migrate", "--from", str(db), "--to", f"sqlite:{db}"]) == 2
    assert "the same store" in capsys.readouterr().err
    assert main(["migrate", "--to", str(db)]) == 2
    assert "--from is required" in capsys.readouterr().err

    relay: Proxy = proxied(postgres_url())
    url = relay.url(scratch_url())
    relay.cut()
    assert main(["migrate", "--from", str(db), "--to", url]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "memwire: storage error: the database cannot be reached; try again later"


@pytest.mark.backend_independent
def test_a_missing_source_bank_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(db, backend="python") as memory:
        memory.retain("x", bank="a")
    source, target = open_store(db), PostgresStore(scratch_url())
    try:
        with pytest.raises(LookupError):
            store_copy.copy_store(source, target, banks=["a", "nope"])
        assert target.bank_names() == []
    finally:
        source.close()
        target.close()
