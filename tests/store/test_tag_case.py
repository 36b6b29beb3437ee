"""Tags are case-insensitive: stored casefolded, so filters, exclusions and stats agree on
every store and both kernels; and the migration that folds the tags an older memwire stored
with capitals (SQLite schema 2 -> 3, PostgreSQL 1 -> 2)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import postgres_support
import pytest
from memwire import Memory
from memwire.store.postgres import SCHEMA_VERSION as POSTGRES_SCHEMA
from memwire.store.sqlite import SCHEMA_VERSION as SQLITE_SCHEMA
from memwire.store.sqlite import SQLiteStore
from store_support import StoreFactory


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(store=store_factory.make(tmp_path), backend=backend) as memory:
        yield memory


def test_tags_are_stored_casefolded_and_match_any_case(mem: Memory) -> None:
    a = mem.retain("deploys go through the release train", tags=["Deploy", "OPS"])
    b = mem.retain("the deploy key rotates monthly", tags=["deploy", "Straße"])
    c = mem.retain("lunch is at noon", tags=["Social"])
    assert mem.get(a).tags == ("deploy", "ops")
    assert mem.get(b).tags == ("deploy", "strasse")  # full case folding
    assert mem.stats()["tags"] == {"deploy": 2, "ops": 1, "strasse": 1, "social": 1}
    for spelling in (["DEPLOY"], ["deploy"], ["DePloY"]):
        assert {h.id for h in mem.recall("deploy", tags=spelling)} == {a, b}
    assert {h.id for h in mem.recall("deploy", tags=["STRASSE"])} == {b}
    kept = {h.id for h in mem.recall("deploy", exclude_tags=["Ops"])}
    assert b in kept and a not in kept
    assert [h.id for h in mem.recall("lunch noon", tags=["SOCIAL"])] == [c]
    # one tag after folding: kept once
    d = mem.retain("a note", tags=["Ops", "ops", "OPS"])
    assert mem.get(d).tags == ("ops",)


def test_retain_tags_config_is_folded(mem: Memory) -> None:
    mem.set_config("default", {"retain_tags": ["Team-A"]})
    assert mem.get_config()["retain_tags"] == ["team-a"]
    memory_id = mem.retain("standup moved to ten", tags=["TEAM-A", "Notes"])
    assert mem.get(memory_id).tags == ("team-a", "notes")


def _capitalise_sqlite(path: Path, version: int) -> None:
    """Make the file look written by an older memwire: capital and duplicate tags."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT bank_id, ordinal, tags FROM memories").fetchall()
        conn.execute("DELETE FROM memory_tags")
        for bank_id, ordinal, raw in rows:
            old = [t.upper() for t in json.loads(raw)] + [t.title() for t in json.loads(raw)]
            conn.execute(
                "UPDATE memories SET tags = ? WHERE bank_id = ? AND ordinal = ?",
                (json.dumps(old), bank_id, ordinal),
            )
            conn.executemany(
                "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)",
                [(bank_id, t, ordinal) for t in old],
            )
        conn.execute(f"PRAGMA user_version={version}")


def _seed(memory: Memory) -> dict[str, str]:
    return {
        "a": memory.retain("deploys go through the release train", tags=["deploy", "ops"]),
        "b": memory.retain("lunch is at noon", tags=["social"]),
        "c": memory.retain("no tags here"),
    }


def _assert_folded(memory: Memory, ids: dict[str, str]) -> None:
    assert memory.get(ids["a"]).tags == ("deploy", "ops")
    assert memory.get(ids["b"]).tags == ("social",)
    assert memory.get(ids["c"]).tags == ()
    assert memory.stats()["tags"] == {"deploy": 1, "ops": 1, "social": 1}
    assert [h.id for h in memory.recall("deploys", tags=["Deploy"])] == [ids["a"]]
    kept = [h.id for h in memory.recall("lunch", exclude_tags=["OPS"])]
    assert kept[0] == ids["b"] and ids["a"] not in kept


@pytest.mark.parametrize("version", [1, 2])
def test_sqlite_migration_folds_old_tags(tmp_path: Path, backend: str, version: int) -> None:
    path = tmp_path / "old.db"
    with Memory(path, backend=backend) as memory:
        ids = _seed(memory)
    _capitalise_sqlite(path, version)
    with sqlite3.connect(path) as conn:  # the capitals are really there
        assert ("DEPLOY",) in conn.execute("SELECT tag FROM memory_tags").fetchall()
    with Memory(path, backend=backend) as memory:
        _assert_folded(memory, ids)
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SQLITE_SCHEMA
        tags = sorted(r[0] for r in conn.execute("SELECT tag FROM memory_tags"))
    assert tags == ["deploy", "ops", "social"]
    SQLiteStore(path).close()  # opening again migrates nothing more


def test_postgres_migration_folds_old_tags(tmp_path: Path, backend: str) -> None:
    store = postgres_support.make_store(tmp_path)
    schema = store._schema  # type: ignore[attr-defined]
    with Memory(store=store, backend=backend) as memory:
        ids = _seed(memory)
    with postgres_support.connect() as conn:
        rows = conn.execute(f"SELECT bank_id, ordinal, tags FROM {schema}.memories").fetchall()
        conn.execute(f"DELETE FROM {schema}.memory_tags")
        for bank_id, ordinal, raw in rows:
            old = [t.upper() for t in json.loads(raw)] + [t.title() for t in json.loads(raw)]
            conn.execute(
                f"UPDATE {schema}.memories SET tags = %s WHERE bank_id = %s AND ordinal = %s",
                (json.dumps(old), bank_id, ordinal),
            )
            for tag in old:
                conn.execute(
                    f"INSERT INTO {schema}.memory_tags (bank_id, tag, ordinal) VALUES (%s, %s, %s)",
                    (bank_id, tag, ordinal),
                )
        conn.execute(f"UPDATE {schema}.memwire_meta SET value = '1' WHERE key = 'schema_version'")
        conn.commit()
    with Memory(store=postgres_support.reopen_store(tmp_path), backend=backend) as memory:
        _assert_folded(memory, ids)
    with postgres_support.connect() as conn:
        version = conn.execute(
            f"SELECT value FROM {schema}.memwire_meta WHERE key = 'schema_version'"
        ).fetchone()
        tags = sorted(r[0] for r in conn.execute(f"SELECT tag FROM {schema}.memory_tags"))
    assert version == (str(POSTGRES_SCHEMA),) and tags == ["deploy", "ops", "social"]
