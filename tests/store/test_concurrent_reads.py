"""Reads in parallel (issue 18): recalls on one bank share its lock, store reads use their own
SQLite connections, and neither waits for a write stuck on another process's lock nor for a
snapshot being encoded. Every wait here is on an event; the timeouts only keep a broken build
from hanging the suite, they measure nothing."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from memwire import Memory
from memwire.memory.bank_state import ReadWriteLock
from memwire.records import Hit
from memwire.store.sqlite import SQLiteStore
from store_support import item

HANG_GUARD_S = 60.0  # never reached when the code is right

TOPICS = ["database", "deploy", "lunch", "kernel", "snapshot", "budget", "graph", "port"]


def _fill(mem: Memory, n: int = 240) -> None:
    mem.retain_many(
        [
            {
                "content": f"note {i}: the {TOPICS[i % 8]} and {TOPICS[i * 3 % 8]} item {i % 17}",
                "tags": [TOPICS[i % 8]],
            }
            for i in range(n)
        ]
    )


def _queries() -> list[str]:
    return [f"{a} {b}" for a in TOPICS for b in TOPICS[:3]] + ["item 5", "note 7 kernel"]


def _key(hits: list[Hit]) -> list[tuple[str, float, int, int, int]]:
    return [(h.id, h.score, h.bm25_rank, h.overlap_rank, h.dense_rank) for h in hits]


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    out: dict[str, Any] = {}

    def run() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:  # reported by the test that joins
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


@pytest.fixture
def mem(tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(tmp_path / "m.db", backend=backend) as memory:
        yield memory


def _blocked_writer(path: Path, store: SQLiteStore) -> tuple[sqlite3.Connection, threading.Event]:
    """Another process's write lock on ``path`` (a second connection holding BEGIN IMMEDIATE)
    and an event set when this store's writer starts its own BEGIN IMMEDIATE (then waiting)."""
    other = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    started = threading.Event()

    def trace(statement: str) -> None:
        if statement.startswith("BEGIN IMMEDIATE"):
            started.set()

    store.conn.set_trace_callback(trace)
    return other, started


def test_recall_while_a_write_waits_on_another_process(mem: Memory, tmp_path: Path) -> None:
    _fill(mem)
    expected = _key(mem.recall("database deploy"))
    store = mem._store
    assert isinstance(store, SQLiteStore)
    other, started = _blocked_writer(tmp_path / "m.db", store)
    try:
        writer, wrote = _in_thread(lambda: mem.retain("a new database note"))
        assert started.wait(HANG_GUARD_S)
        # The writer now holds the writer connection, busy-waiting on the other lock.
        reader, read = _in_thread(lambda: mem.recall("database deploy"))
        reader.join(HANG_GUARD_S)
        assert not reader.is_alive(), "recall waited for a write blocked elsewhere"
        assert "error" not in read
        assert _key(read["value"]) == expected
        assert writer.is_alive()  # still waiting: the other lock was never released
    finally:
        other.execute("ROLLBACK")
        other.close()
    writer.join(HANG_GUARD_S)
    assert "error" not in wrote
    assert wrote["value"] in [h.id for h in mem.recall("new database note")]


def test_store_reads_while_a_write_waits(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "s.db")
    try:
        first = store.write("b", [item("alpha beta")], None)
        other, started = _blocked_writer(tmp_path / "s.db", store)
        try:
            writer, wrote = _in_thread(lambda: store.write("b", [item("gamma")], None))
            assert started.wait(HANG_GUARD_S)
            reader, read = _in_thread(
                lambda: (
                    store.head("b"),
                    store.rows_by_ordinal(first.bank_id, [first.added.ordinals[0]]),
                    store.changes_since(first.bank_id, 0),
                    store.bank_names(),
                )
            )
            reader.join(HANG_GUARD_S)
            assert not reader.is_alive(), "a store read waited for the writer connection"
            head, rows, changes, names = read["value"]
            assert head is not None and head.last_seq == first.last_seq
            assert [r.content for r in rows.values()] == ["alpha beta"]
            assert changes is not None and changes.added.contents == ["alpha beta"]
            assert names == ["b"]
            assert writer.is_alive()
        finally:
            other.execute("ROLLBACK")
            other.close()
        writer.join(HANG_GUARD_S)
        assert "error" not in wrote
        assert store.head("b").last_seq > first.last_seq  # type: ignore[union-attr]
    finally:
        store.close()


def test_concurrent_recalls_equal_serial_ones(mem: Memory) -> None:
    _fill(mem)
    queries = _queries()
    serial = {q: _key(mem.recall(q, limit=10)) for q in queries}
    filtered = {q: _key(mem.recall(q, exclude_tags=["deploy"])) for q in queries}
    start = threading.Barrier(4)

    def worker(shift: int) -> list[tuple[str, list[Any], list[Any]]]:
        start.wait()
        order = queries[shift:] + queries[:shift]
        return [
            (q, _key(mem.recall(q, limit=10)), _key(mem.recall(q, exclude_tags=["deploy"])))
            for q in order
        ]

    threads = [_in_thread(lambda s=s: worker(s * 5)) for s in range(4)]
    for thread, _ in threads:
        thread.join(HANG_GUARD_S)
    for thread, out in threads:
        assert not thread.is_alive() and "error" not in out
        for query, plain, excluded in out["value"]:
            assert plain == serial[query]
            assert excluded == filtered[query]


def test_recall_while_a_snapshot_encodes(mem: Memory) -> None:
    """A recall runs while the background snapshot encodes the index, even with a write
    waiting for the encode to end; the write lands after it."""
    _fill(mem)
    expected = _key(mem.recall("kernel graph"))
    state = mem._bank("default")
    encoding, finish = threading.Event(), threading.Event()

    class SlowEncode:
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        def __len__(self) -> int:
            return len(self._inner)

        def to_bytes(self) -> bytes:
            encoding.set()
            assert finish.wait(HANG_GUARD_S)
            return bytes(self._inner.to_bytes())

    with state.lock.write():
        state.index = SlowEncode(state.index)  # type: ignore[assignment]
        state.graph_unsaved = True  # due a snapshot (and not handed to the background)
    snapper, snapped = _in_thread(lambda: mem._snapshot("default"))
    try:
        assert encoding.wait(HANG_GUARD_S)
        writer, wrote = _in_thread(lambda: mem.retain("a kernel graph note written meanwhile"))
        _until(lambda: state.lock._waiting == 1 or not writer.is_alive())
        assert writer.is_alive()  # its index update waits for the encode
        reader, read = _in_thread(lambda: mem.recall("kernel graph"))
        reader.join(HANG_GUARD_S)
        assert not reader.is_alive(), "recall waited for the snapshot encode"
        assert _key(read["value"]) == expected
    finally:
        finish.set()
    snapper.join(HANG_GUARD_S)
    writer.join(HANG_GUARD_S)
    assert "error" not in snapped and "error" not in wrote
    assert wrote["value"] in [h.id for h in mem.recall("kernel graph note written meanwhile")]
    assert state.snap_seq < state.applied  # the snapshot is of the index before the write


def _until(condition: Callable[[], bool]) -> None:
    """Wait (on events, not a clock) until ``condition`` holds."""
    tick = threading.Event()
    for _ in range(int(HANG_GUARD_S * 1000)):
        if condition():
            return
        tick.wait(0.001)
    raise AssertionError("condition never held")


@pytest.mark.backend_independent
def test_read_write_lock_orders_writers_and_long_readers() -> None:
    lock = ReadWriteLock()
    log: list[str] = []
    # A writer waits for readers; readers share the lock.
    with lock.read(), lock.read():
        writer, _ = _in_thread(lambda: _locked(lock.write(), log, "w1"))
        _until(lambda: lock._waiting == 1)
        assert log == []
    writer.join(HANG_GUARD_S)
    assert log == ["w1"]
    # While a long reader holds the lock, a new reader gets in past a waiting writer.
    release = threading.Event()
    long_reader, _ = _in_thread(lambda: _held(lock.read(long=True), release))
    _until(lambda: lock._readers == 1)
    writer, _ = _in_thread(lambda: _locked(lock.write(), log, "w2"))
    _until(lambda: lock._waiting == 1)
    reader, _ = _in_thread(lambda: _locked(lock.read(), log, "r"))
    reader.join(HANG_GUARD_S)
    assert log == ["w1", "r"]
    release.set()
    long_reader.join(HANG_GUARD_S)
    writer.join(HANG_GUARD_S)
    assert log == ["w1", "r", "w2"]


def _locked(cm: Any, log: list[str], name: str) -> None:
    with cm:
        log.append(name)


def _held(cm: Any, release: threading.Event) -> None:
    with cm:
        release.wait(HANG_GUARD_S)


def test_recalls_and_writes_interleaved_leave_a_consistent_index(
    mem: Memory, tmp_path: Path, backend: str
) -> None:
    """Readers (plain and filtered) and a writer (retains, forgets) at once: nothing fails,
    every filtered hit passes its filter, and afterwards the index answers as one rebuilt from
    the store by a fresh Memory."""
    _fill(mem, 120)
    start = threading.Barrier(4)
    stop = threading.Event()

    def read(avoid: list[str]) -> int:
        start.wait()
        done = 0
        while not stop.is_set() or done < 20:
            for hit in mem.recall("database deploy kernel", exclude_tags=avoid, limit=20):
                assert not set(avoid) & set(hit.tags)
            done += 1
        return done

    def write() -> None:
        start.wait()
        try:
            for i in range(40):
                new = mem.retain(f"written meanwhile {i} database", tags=[TOPICS[i % 8]])
                if i % 3 == 0:
                    mem.forget(new)
        finally:
            stop.set()

    readers = [_in_thread(lambda a=a: read(a)) for a in ([], ["database"], ["deploy", "port"])]
    writer, wrote = _in_thread(write)
    for thread, _ in [*readers, (writer, wrote)]:
        thread.join(HANG_GUARD_S)
    assert "error" not in wrote
    for thread, out in readers:
        assert not thread.is_alive() and "error" not in out, out.get("error")
    queries = _queries()
    ours = {q: _key(mem.recall(q, limit=10, exclude_tags=["lunch"])) for q in queries}
    with Memory(tmp_path / "m.db", backend=backend) as fresh:
        for q in queries:
            assert _key(fresh.recall(q, limit=10, exclude_tags=["lunch"])) == ours[q]


def test_concurrent_readers_keep_their_connections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight reads at once (a server's eight clients) each need a connection; the pool keeps
    them all, so the next eight open none (a fresh connection starts with a cold page cache)."""
    from memwire.store.sqlite import base

    store = SQLiteStore(tmp_path / "s.db")
    try:
        first = store.write("b", [item("alpha beta")], None)
        opened: list[object] = []
        connect = base._connect

        def counting(target: str, uri: bool) -> sqlite3.Connection:
            opened.append(target)
            return connect(target, uri)

        monkeypatch.setattr(base, "_connect", counting)
        readers = 8
        for round_ in range(2):
            together = threading.Barrier(readers, timeout=HANG_GUARD_S)

            def read(conn: sqlite3.Connection, together: threading.Barrier = together) -> int:
                together.wait()  # every reader holds its connection at the same time
                return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])

            threads = [_in_thread(lambda: store._read(read, "read")) for _ in range(readers)]
            for thread, out in threads:
                thread.join(HANG_GUARD_S)
                assert out.get("value") == 1, out
            if round_ == 0:
                assert 1 <= len(opened) <= readers
                first_round = len(opened)
        assert len(opened) == first_round, "the second round opened new connections"
        assert store.rows_by_ordinal(first.bank_id, first.added.ordinals)  # the pool still reads
    finally:
        store.close()
