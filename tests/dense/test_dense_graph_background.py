"""A bank that crosses the exact dense threshold gets its HNSW graph from the background thread,
never from a recall; the graph is persisted in the snapshot and loaded by the next process, and
close() abandons a build under way instead of waiting for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import msgpack
from dense_support import TinyEmbedder
from memwire import Memory
from memwire.memory import SHELL_FORMAT
from memwire.memory.snapshot_check import unseal

THRESHOLD = 40


def notes(n: int, start: int = 0) -> list[str]:
    return [f"note {i} about topic{i % 7} and item{i}" for i in range(start, start + n)]


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Poll until ``condition`` holds (the background thread works at its own pace)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.02)


def stored_graph(m: Memory, bank: str = "default") -> bytes | None:
    state = m._bank(bank)
    snap = m._store.load_snapshot(state.bank_id, SHELL_FORMAT)
    if snap is None:
        return None
    graph: bytes | None = msgpack.unpackb(unseal(snap.seq, snap.data))["hnsw"]
    return graph


def lowered(m: Memory, bank: str = "default") -> None:
    """Load the bank's index and lower its exact threshold (the test hook)."""
    m.recall("note", bank=bank)
    state = m._bank(bank)
    with state.lock.write():
        assert state.index is not None
        state.index._set_dense_exact_max(THRESHOLD)


def test_crossing_the_threshold_builds_the_graph_in_the_background(
    db_path: Path, any_backend: str
) -> None:
    embedder = TinyEmbedder()
    with Memory(db_path, backend=any_backend, embedder=embedder) as m:
        m.retain_many(notes(10))
        lowered(m)
        state = m._bank("default")
        m.retain_many(notes(THRESHOLD, start=10))  # crosses the threshold
        hits = m.recall("topic3 item17")  # answered, exact dense, whatever the graph's state
        assert hits and hits[0].content == "note 17 about topic3 and item17"
        wait_for(lambda: stored_graph(m) is not None, "the graph in a stored snapshot")
        index = state.index
        assert index is not None and not index.dense_graph_needed()
        assert not state.graph_unsaved
        before = [(h.id, h.score) for h in m.recall("topic3 item17")]
    with Memory(db_path, backend=any_backend, embedder=embedder) as m:
        assert [(h.id, h.score) for h in m.recall("topic3 item17")] == before
        index = m._bank("default").index
        assert index is not None
        assert msgpack.unpackb(index.to_bytes())["hnsw"] is not None, "loaded from the snapshot"


def test_the_graph_snapshot_replaces_one_of_the_same_changes(
    db_path: Path, any_backend: str
) -> None:
    """A snapshot without the graph is stored, then the bank needs a graph with no memory
    changed: the snapshot with the graph, of the same changes, replaces it."""
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        m.retain_many(notes(THRESHOLD + 10))
        m.recall("note")
        state = m._bank("default")
        m._snapshot("default")
        first = m._store.load_snapshot(state.bank_id, SHELL_FORMAT)
        assert first is not None and first.seq == state.applied
        assert stored_graph(m) is None
        with state.lock.write():
            assert state.index is not None
            state.index._set_dense_exact_max(THRESHOLD)
        m.recall("note")  # hands the bank to the background thread
        wait_for(lambda: stored_graph(m) is not None, "the graph in a stored snapshot")
        second = m._store.load_snapshot(state.bank_id, SHELL_FORMAT)
        assert second is not None and second.seq == first.seq


def test_close_abandons_a_build_under_way(db_path: Path, any_backend: str) -> None:
    """close() cancels the graph being built rather than waiting for it; nothing half-built is
    installed or saved."""
    m = Memory(db_path, backend=any_backend, embedder=TinyEmbedder())
    m.retain_many(notes(10))
    m.recall("note")
    state = m._bank("default")
    with state.lock.write():
        assert state.index is not None
        state.index._set_dense_exact_max(5)
        plan = state.index.plan_dense_graph()
    assert plan is not None
    assert m._snapshotter.building(plan)
    m.close()
    assert plan.build() is False, "cancelled by close()"
    assert not m._snapshotter.building(plan), "no build starts after close()"
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as again:
        again.recall("note")
        index = again._bank("default").index
        assert index is not None
        assert msgpack.unpackb(index.to_bytes())["hnsw"] is None


def test_an_ephemeral_store_builds_the_graph_too(any_backend: str) -> None:
    with Memory(":memory:", backend=any_backend, embedder=TinyEmbedder()) as m:
        m.retain_many(notes(10))
        lowered(m)
        m.retain_many(notes(THRESHOLD, start=10))
        index = m._bank("default").index
        assert index is not None
        wait_for(lambda: not index.dense_graph_needed(), "the graph")
        assert m.recall("topic3 item17")[0].content == "note 17 about topic3 and item17"


def test_a_job_that_fails_once_does_not_stop_the_graph_nor_the_snapshot(
    db_path: Path, any_backend: str
) -> None:
    """The graph build raises an unexpected error once (issue 19): the thread survives, health()
    reports the failure, the retry builds the graph and the snapshot that holds it is stored,
    and health() is clean again. Waits on events (the stored graph), never on a duration."""
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        worker = m._snapshotter
        worker.retry_base = 0.001
        real = worker._build_graph
        failed: list[str] = []

        def build_graph(bank: str) -> None:
            if not failed:
                failed.append(bank)
                raise RuntimeError("injected failure")
            real(bank)

        worker._build_graph = build_graph
        m.retain_many(notes(THRESHOLD + 10))
        lowered(m)
        m.recall("note")  # hands the bank to the background thread
        wait_for(lambda: stored_graph(m) is not None, "the graph in a stored snapshot")
        assert failed == ["default"]
        wait_for(lambda: m.health().ok, "the failure cleared")
        assert m.health().background in ("idle", "working")
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as again:
        hits = again.recall("topic3 item17")
        assert hits and hits[0].content == "note 17 about topic3 and item17"
        assert stored_graph(again) is not None
