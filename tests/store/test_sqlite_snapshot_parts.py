"""SQLite snapshots past one stored value: SQLite holds at most ~1 GB in a value, less than a
1M-memory bank's snapshot with vectors and graph, so a snapshot is stored in parts of
``SNAPSHOT_PART`` bytes (here made tiny) and read back whole; no part outlives its snapshot."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwire import Memory
from memwire.store.sqlite import SCHEMA_VERSION, SQLiteStore
from memwire.store.sqlite import snapshots as sqlite_snapshots
from store_support import item

PART = 7


@pytest.fixture
def small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_snapshots, "SNAPSHOT_PART", PART)


@pytest.fixture
def opened(tmp_path: Path, small_parts: None) -> Iterator[tuple[Path, SQLiteStore]]:
    """A new SQLite store (its file, and the store) with tiny snapshot parts."""
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    yield path, store
    store.close()


def parts(path: Path) -> list[tuple[int, int, int]]:
    """(bank_id, part, bytes) of every stored part past the first."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT bank_id, part, length(data) FROM snapshot_parts ORDER BY bank_id, part"
        ).fetchall()
    conn.close()
    return [(r[0], r[1], r[2]) for r in rows]


@pytest.mark.backend_independent
def test_a_snapshot_in_several_parts_reads_back_whole(opened: tuple[Path, SQLiteStore]) -> None:
    path, store = opened
    bank_id = store.write("b", [item("one")]).bank_id
    data = bytes(range(256)) * 3
    assert store.save_snapshot(bank_id, 1, data, "s")
    loaded = store.load_snapshot(bank_id, "s")
    assert loaded is not None and (loaded.seq, loaded.data) == (1, data)
    stored = parts(path)
    assert [p for _, p, _ in stored] == list(range(1, -(-len(data) // PART)))
    assert {size for _, _, size in stored[:-1]} == {PART}
    # A refused snapshot leaves the stored one whole; a smaller replacement leaves no part.
    assert not store.save_snapshot(bank_id, 0, b"older", "s")
    assert parts(path) == stored
    assert store.save_snapshot(bank_id, 1, b"newer", "s", replace_same=True)
    assert parts(path) == []
    loaded = store.load_snapshot(bank_id, "s")
    assert loaded is not None and loaded.data == b"newer"


@pytest.mark.backend_independent
def test_no_part_outlives_its_snapshot(opened: tuple[Path, SQLiteStore]) -> None:
    path, store = opened
    kept = store.write("kept", [item("kept")]).bank_id
    gone = store.write("gone", [item("gone")])
    purged = store.write("purged", [item("purged")])
    for bank_id in (kept, gone.bank_id, purged.bank_id):
        assert store.save_snapshot(bank_id, 1, b"a snapshot of three parts", "s")
    assert store.delete_bank("gone")
    assert store.purge(purged.ids[0], "purged") is not None
    assert {bank_id for bank_id, _, _ in parts(path)} == {kept}
    assert store.load_snapshot(purged.bank_id, "s") is None


@pytest.mark.backend_independent
def test_a_version_4_file_gains_the_parts_table(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE snapshot_parts")
        conn.execute("PRAGMA user_version=4")
    conn.close()
    store = SQLiteStore(path)
    bank_id = store.write("b", [item("one")]).bank_id
    assert store.save_snapshot(bank_id, 1, b"x" * 1000, "s")
    store.close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    conn.close()


@pytest.mark.usefixtures("small_parts")
def test_a_bank_reopens_from_a_snapshot_in_parts(
    tmp_path: Path, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "m.db"
    with Memory(path, backend=backend) as memory:
        ids = [memory.retain(f"note {i}: token{i}x{i * 3}") for i in range(30)]
        memory.recall("note")  # loads the index: close() then snapshots it
    assert len(parts(path)) > 10  # the kernel's snapshot, many parts of 7 bytes
    with caplog.at_level(logging.WARNING, logger="memwire"), Memory(path, backend=backend) as m:
        assert [m.recall(f"token{i}x{i * 3}", limit=1)[0].id for i in range(30)] == ids
    assert not caplog.records  # read whole: not refused as corrupt and rebuilt
