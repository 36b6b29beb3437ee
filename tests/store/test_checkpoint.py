"""SQLite WAL checkpoints on the store's checkpoint thread, not in the commits callers wait for
(memwire/store/sqlite/checkpoint.py; docs/storage.md, "Durability").

What is observed is the database file itself: until a checkpoint copies the log back, its bytes
stay as they were whatever is committed (the rows live in the ``-wal`` file)."""

from __future__ import annotations

import gc
import hashlib
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

import pytest
from memwire import Memory
from memwire.store.sqlite import SQLiteStore, base, checkpoint
from store_support import item

NEVER = 10**9


def _digest(path: Path) -> bytes:
    return hashlib.sha256(path.read_bytes()).digest()


def _wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.01)
    return condition()


def _settings(
    monkeypatch: pytest.MonkeyPatch, *, rows: int, idle_s: float, exit_s: float = 30.0
) -> None:
    monkeypatch.setattr(checkpoint, "CHECKPOINT_ROWS", rows)
    monkeypatch.setattr(checkpoint, "CHECKPOINT_IDLE_S", idle_s)
    monkeypatch.setattr(checkpoint, "THREAD_EXIT_S", exit_s)


def _items(count: int, size: int = 1000) -> list[object]:
    # Distinct contents (no duplicates folded), each about ``size`` bytes.
    return [item(f"memory {i} " + "x" * size) for i in range(count)]


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


class Opener(Protocol):
    def __call__(self, *, rows: int, idle_s: float, exit_s: float = 30.0) -> SQLiteStore: ...


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, store_path: Path) -> Iterator[Opener]:
    """Opens the store with the checkpoint thread's settings given (closed after the test)."""
    stores: list[SQLiteStore] = []

    def open_store(*, rows: int, idle_s: float, exit_s: float = 30.0) -> SQLiteStore:
        _settings(monkeypatch, rows=rows, idle_s=idle_s, exit_s=exit_s)
        stores.append(SQLiteStore(store_path))
        return stores[-1]

    yield open_store
    for s in stores:
        s.close()


def _checkpointer(store: SQLiteStore) -> checkpoint.Checkpointer:
    found = store._checkpointer
    assert found is not None
    return found


def _unmanaged(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, *, rows: int, idle_s: float
) -> tuple[SQLiteStore, checkpoint.Checkpointer]:
    """A store the test closes (or drops) itself, and its checkpointer."""
    _settings(monkeypatch, rows=rows, idle_s=idle_s)
    store = SQLiteStore(store_path)
    return store, _checkpointer(store)


@pytest.mark.backend_independent
def test_a_commit_past_sqlites_default_is_not_checkpointed_by_the_writer(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, opened: Opener
) -> None:
    # ~6 MB of log: past the 1,000 pages at which SQLite's writer would checkpoint itself,
    # below the writer's backstop; the checkpoint thread is told never to run.
    store = opened(rows=NEVER, idle_s=3600)
    before = _digest(store_path)
    store.write("b", _items(5000))
    assert Path(f"{store_path}-wal").stat().st_size > 1000 * 4096
    assert _digest(store_path) == before
    assert _checkpointer(store).runs == 0


@pytest.mark.backend_independent
def test_the_thread_checkpoints_a_large_commit(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, opened: Opener
) -> None:
    store = opened(rows=1000, idle_s=3600)
    empty = store_path.stat().st_size
    written = store.write("b", _items(1500))
    assert _wait_for(lambda: _checkpointer(store).runs >= 1)
    assert store_path.stat().st_size > empty + 1_000_000
    first = store.get(written.ids[0])
    assert first is not None and first.content.startswith("memory 0 ")


@pytest.mark.backend_independent
def test_commits_are_checkpointed_once_writes_pause(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, opened: Opener
) -> None:
    store = opened(rows=NEVER, idle_s=0.05)
    unchanged = _digest(store_path).__eq__
    for i in range(5):
        store.write("b", [item(f"a small memory {i}")])
    assert _wait_for(lambda: _checkpointer(store).runs >= 1)
    assert not unchanged(_digest(store_path))


@pytest.mark.backend_independent
def test_the_writers_backstop_bounds_the_log_without_the_thread(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, opened: Opener
) -> None:
    monkeypatch.setattr(base, "WRITER_CHECKPOINT_PAGES", 100)
    store = opened(rows=NEVER, idle_s=3600)
    empty = store_path.stat().st_size
    store.write("b", _items(1000))  # ~1.5 MB: past 100 pages
    assert store_path.stat().st_size > empty + 1_000_000
    assert _checkpointer(store).runs == 0


@pytest.mark.backend_independent
def test_the_thread_ends_when_idle_and_the_next_commit_starts_another(
    monkeypatch: pytest.MonkeyPatch, opened: Opener
) -> None:
    store = opened(rows=NEVER, idle_s=0.01, exit_s=0.05)
    worker = _checkpointer(store)
    store.write("b", [item("first")])
    assert _wait_for(lambda: worker.runs >= 1 and not worker.running)
    store.write("b", [item("second")])
    assert _wait_for(lambda: worker.runs >= 2 and not worker.running)


@pytest.mark.backend_independent
def test_closing_stops_the_thread_and_the_store_removes_its_log(
    monkeypatch: pytest.MonkeyPatch, store_path: Path
) -> None:
    store, worker = _unmanaged(monkeypatch, store_path, rows=1, idle_s=0.01)
    store.write("b", _items(50))
    assert _wait_for(lambda: worker.runs >= 1)
    store.close()
    assert not worker.running
    # The writer was the last connection: SQLite checkpointed and deleted the log at close.
    assert not Path(f"{store_path}-wal").exists()
    reopened = SQLiteStore(store_path)
    try:
        assert reopened.stats("b").count == 50
    finally:
        reopened.close()


@pytest.mark.backend_independent
@pytest.mark.parametrize("hold_max_s", [3600.0, 0.05])
def test_a_held_section_holds_a_due_checkpoint_back_up_to_the_bound(
    monkeypatch: pytest.MonkeyPatch, opened: Opener, hold_max_s: float
) -> None:
    monkeypatch.setattr(checkpoint, "HOLD_MAX_S", hold_max_s)
    store = opened(rows=1, idle_s=0.01)
    worker = _checkpointer(store)
    with store.checkpoints_held():
        store.write("b", _items(20))
        if hold_max_s > 1:
            time.sleep(0.3)  # due for 0.3 s: held back
            assert worker.runs == 0
        else:  # held past the bound: it runs anyway
            assert _wait_for(lambda: worker.runs >= 1)
    assert _wait_for(lambda: worker.runs >= 1)


@pytest.mark.backend_independent
def test_a_failing_checkpoint_never_fails_a_write(
    monkeypatch: pytest.MonkeyPatch, store_path: Path, opened: Opener
) -> None:
    store = opened(rows=1, idle_s=0.01)
    worker = _checkpointer(store)

    def refuse(target: str, uri: bool) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    with monkeypatch.context() as patch:
        patch.setattr(base, "_connect", refuse)
        for i in range(3):
            store.write("b", [item(f"kept {i}")])
        assert _wait_for(lambda: worker.failures >= 1)
    assert worker.runs == 0
    store.write("b", [item("after the failure")])  # the next checkpoint opens afresh
    assert _wait_for(lambda: worker.runs >= 1)
    assert store.stats("b").count == 4


@pytest.mark.backend_independent
def test_an_unclosed_store_collected_stops_its_thread(
    monkeypatch: pytest.MonkeyPatch, store_path: Path
) -> None:
    store, worker = _unmanaged(monkeypatch, store_path, rows=NEVER, idle_s=3600)
    store.write("b", [item("left open")])
    assert worker.running
    del store
    gc.collect()
    assert _wait_for(lambda: not worker.running)


@pytest.mark.backend_chosen
def test_a_memory_retains_through_the_thread(
    monkeypatch: pytest.MonkeyPatch, store_path: Path
) -> None:
    # The whole path: Memory's bulk retain commits, the thread checkpoints, the rows recall.
    _settings(monkeypatch, rows=1000, idle_s=3600)
    memory = Memory(store_path)
    try:
        ids = memory.retain_many([f"deploy note {i} about service {i}" for i in range(1500)])
        store = memory._store
        assert isinstance(store, SQLiteStore)
        assert _wait_for(lambda: _checkpointer(store).runs >= 1)
        hits = memory.recall("deploy note 1234 service 1234", limit=1)
        assert [h.id for h in hits] == [ids[1234]]
    finally:
        memory.close()
