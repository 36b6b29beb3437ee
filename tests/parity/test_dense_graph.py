"""The HNSW graph is never built by a search: exact meanwhile, built detached (plan, build with
no lock held, install with the changes made meanwhile replayed), on each backend and alike."""

from __future__ import annotations

import os
import threading
from typing import Any

import msgpack
import numpy as np
import pytest
from memwire._kernel.contract import BankIndex, Kernel
from memwire._kernel.pure._generated import DENSE_SCALE
from memwire._kernel.vectors import quantize

from .test_differential import hexed

DIM = 8
N = 600
THRESHOLD = 100


def vectors(n: int, seed: int, dim: int = DIM) -> list[bytes]:
    rng = np.random.default_rng(seed)
    return [quantize(v) for v in rng.standard_normal((n, dim))]


def large(kernel: Kernel, n: int = N, dim: int = DIM, seed: int = 1) -> BankIndex:
    """An index above its (lowered) exact threshold, without a graph."""
    index = kernel.BankIndex(dim)
    index._set_dense_exact_max(THRESHOLD)
    index.add_many(list(range(n)), [f"doc {o}" for o in range(n)], vectors(n, seed, dim))
    return index


def graph_bytes(index: BankIndex) -> bytes | None:
    graph: bytes | None = msgpack.unpackb(index.to_bytes())["hnsw"]
    return graph


def exact(index: BankIndex, query: bytes, k: int) -> list[tuple[int, float]]:
    """Brute force over the index's own vectors, read back from its snapshot."""
    doc = msgpack.unpackb(index.to_bytes())
    from pyroaring import BitMap

    ords = list(BitMap.deserialize(doc["vec_docs"]))
    mat = np.frombuffer(doc["vectors"], dtype="<i2").reshape(len(ords), doc["dim"])
    q = np.frombuffer(query, dtype="<i2").astype(np.int64)
    dots = mat.astype(np.int64) @ q
    order = sorted(range(len(ords)), key=lambda i: (-int(dots[i]), ords[i]))[:k]
    return [(ords[i], int(dots[i]) / float(DENSE_SCALE * DENSE_SCALE)) for i in order]


def test_search_above_the_threshold_without_a_graph_is_exact(kernel: Kernel) -> None:
    index = large(kernel)
    assert index.dense_graph_needed()
    allow = list(range(50, 400, 3))
    for q in vectors(5, seed=2):
        assert index.search_dense(q, 10) == exact(index, q, 10)
        got = index.search_dense(q, 5, allow)
        assert [o for o, _ in got] == [o for o, _ in exact(index, q, N) if o in allow][:5]
    assert index.recall("doc", 5, vector=vectors(1, seed=3)[0])
    assert index.dense_graph_needed(), "a search never builds the graph"
    assert graph_bytes(index) is None


def test_at_or_below_the_threshold_no_graph_is_built(kernel: Kernel) -> None:
    index = kernel.BankIndex(DIM)
    index._set_dense_exact_max(THRESHOLD)
    index.add_many(list(range(THRESHOLD)), [""] * THRESHOLD, vectors(THRESHOLD, seed=1))
    assert not index.dense_graph_needed()
    assert index.plan_dense_graph() is None
    assert index.build_dense_graph() is False
    assert not kernel.BankIndex(0).dense_graph_needed()
    assert kernel.BankIndex(0).build_dense_graph() is False


def test_a_built_graph_proposes_candidates_rescored_exactly(kernel: Kernel) -> None:
    index = large(kernel)
    assert index.build_dense_graph() is True
    assert not index.dense_graph_needed()
    assert index.build_dense_graph() is False, "a graph already exists"
    assert graph_bytes(index) is not None
    for q in vectors(5, seed=2):
        got = index.search_dense(q, 10)
        truth = dict(exact(index, q, N))
        assert len(got) == 10
        assert all(score == truth[o] for o, score in got), "proposals are re-scored exactly"
        assert got == sorted(got, key=lambda e: (-e[1], e[0]))
        assert got[0] == exact(index, q, 1)[0]


def test_changes_during_a_detached_build_are_replayed_at_install(kernel: Kernel) -> None:
    extra = vectors(6, seed=9)
    reference = large(kernel)
    assert reference.build_dense_graph()
    index = large(kernel)
    plan = index.plan_dense_graph()  # phase 1
    assert plan is not None
    index.add(1000, "new", extra[0])
    index.remove(7)
    reference.add(1000, "new", extra[0])
    reference.remove(7)
    assert plan.build()  # phase 2
    index.remove(1000)
    index.add(7, "back", extra[1])
    index.add(1001, "newer", extra[2])
    reference.remove(1000)
    reference.add(7, "back", extra[1])
    reference.add(1001, "newer", extra[2])
    q = extra[2]
    assert index.dense_graph_needed(), "exact until the install"
    assert index.search_dense(q, 1)[0][0] == 1001
    assert index.install_dense_graph(plan)  # phase 3
    assert not index.dense_graph_needed()
    # The same graph as one built at once that then followed the same changes.
    assert graph_bytes(index) == graph_bytes(reference)
    for query in [*extra, *vectors(3, seed=4)]:
        assert index.search_dense(query, 5) == reference.search_dense(query, 5)
    assert index.search_dense(q, 1)[0][0] == 1001
    assert 1000 not in [o for o, _ in index.search_dense(extra[0], N)]
    index.add(1002, "after", extra[3])  # goes to the graph directly now
    reference.add(1002, "after", extra[3])
    assert graph_bytes(index) == graph_bytes(reference)


def test_the_build_catches_up_with_a_bulk_import(kernel: Kernel) -> None:
    """Many changes made during the build (a bulk import) give the same graph as changes made
    after an immediate build; the build itself replays most of them."""
    bulk = vectors(300, seed=12)
    reference = large(kernel)
    assert reference.build_dense_graph()
    index = large(kernel)
    plan = index.plan_dense_graph()
    assert plan is not None
    for target in (index, reference):
        target.add_many(list(range(2000, 2300)), ["bulk"] * 300, bulk)
        target.remove(2100)
    assert plan.build()
    index.add(3000, "late", bulk[0])
    reference.add(3000, "late", bulk[0])
    assert index.install_dense_graph(plan)
    assert graph_bytes(index) == graph_bytes(reference)


def test_a_stale_cancelled_or_foreign_plan_is_not_installed(kernel: Kernel) -> None:
    index = large(kernel)
    older, newer = index.plan_dense_graph(), index.plan_dense_graph()
    assert older is not None and newer is not None
    assert older.build() and newer.build()
    assert not index.install_dense_graph(older), "superseded by a newer plan"
    other = large(kernel)
    foreign = other.plan_dense_graph()
    assert foreign is not None and foreign.build()
    assert not index.install_dense_graph(foreign)
    assert index.install_dense_graph(newer)
    assert not index.install_dense_graph(newer), "installed once"

    index = large(kernel)
    unbuilt = index.plan_dense_graph()
    assert unbuilt is not None
    assert not index.install_dense_graph(unbuilt)
    cancelled = index.plan_dense_graph()
    assert cancelled is not None
    cancelled.cancel()
    assert cancelled.build() is False
    assert not index.install_dense_graph(cancelled)
    assert index.dense_graph_needed() and graph_bytes(index) is None


def test_recall_and_retain_go_on_while_the_graph_is_built(kernel: Kernel) -> None:
    """Phase 2 holds no index lock (and not the GIL): searches and writes complete during it.
    Each operation is counted only if the build was still running after it returned."""
    n, dim = 12_000, 32
    index = large(kernel, n=n, dim=dim)
    plan = index.plan_dense_graph()
    assert plan is not None
    result: list[Any] = []
    builder = threading.Thread(target=lambda: result.append(plan.build()))
    fresh = vectors(200, seed=5, dim=dim)
    during = 0
    added: list[int] = []
    builder.start()
    try:
        for i, vec in enumerate(fresh):
            index.add(n + i, f"fresh{i}", vec)
            rows = index.recall(f"fresh{i}", 3, vector=vec)
            assert rows[0][0] == n + i
            if not builder.is_alive():
                break
            added.append(n + i)
            during += 1
    finally:
        builder.join()
    assert result == [True]
    assert during >= 1, "no recall completed while the graph was being built"
    assert index.install_dense_graph(plan)
    for i, o in enumerate(added):
        assert index.search_dense(fresh[i], 1)[0][0] == o


def test_a_graph_built_detached_agrees_across_backends(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    """Both kernels build from the same vectors in the same order, replay the same changes,
    and rank alike; each reads the other's graph."""
    extra = vectors(4, seed=8)
    indexes = []
    for kern in both_kernels:
        index = large(kern)
        plan = index.plan_dense_graph()
        assert plan is not None
        index.add(5000, "x", extra[0])
        index.remove(3)
        assert plan.build()
        index.add(5001, "y", extra[1])
        assert index.install_dense_graph(plan)
        indexes.append(index)
    rust, py = indexes
    for q in [*extra, *vectors(8, seed=6)]:
        assert hexed(rust.search_dense(q, 10)) == hexed(py.search_dense(q, 10))
        assert rust.search_dense(q, 10) == exact(rust, q, 10)
        assert hexed(rust.recall("x y", 5, vector=q)) == hexed(py.recall("x y", 5, vector=q))
    for source in indexes:
        for kern in both_kernels:
            loaded = kern.BankIndex.from_bytes(source.to_bytes())
            loaded._set_dense_exact_max(THRESHOLD)
            assert not loaded.dense_graph_needed()
            for q in extra:
                assert hexed(loaded.search_dense(q, 10)) == hexed(source.search_dense(q, 10))


def test_both_backends_build_byte_identical_graphs(both_kernels: tuple[Kernel, Kernel]) -> None:
    """The same insertions and removals give the same serialised graph on both kernels: built
    detached with changes made before and during the build, then following changes with
    searches in between (a search takes a thread slot of the C++ index, an insertion must not
    depend on which), and after a snapshot is loaded by either kernel."""
    extra = vectors(40, seed=21)
    indexes = []
    for kern in both_kernels:
        index = large(kern)
        plan = index.plan_dense_graph()
        assert plan is not None
        index.add(5000, "a", extra[0])
        index.remove(3)
        index.remove(250)
        assert plan.build()
        index.add(3, "back", extra[1])
        index.add(5001, "b", extra[2])
        index.remove(5000)
        assert index.install_dense_graph(plan)
        indexes.append(index)
    rust, py = indexes
    assert graph_bytes(rust) == graph_bytes(py)
    for i, vec in enumerate(extra[3:23]):
        for index in indexes:
            index.search_dense(vec, 3 + i % 4)
            index.add(6000 + i, "c", vec)
            if i % 3 == 0:
                index.remove(10 * i + 1)
    assert graph_bytes(rust) == graph_bytes(py)
    snapshots = [index.to_bytes() for index in indexes]
    loaded = [kern.BankIndex.from_bytes(snap) for snap in snapshots for kern in both_kernels]
    for index in loaded:
        index._set_dense_exact_max(THRESHOLD)
        for i, vec in enumerate(extra[23:]):
            index.add(7000 + i, "d", vec)
            index.search_dense(vec, 2)
        index.remove(6001)
    after = [graph_bytes(index) for index in loaded]
    assert after[0] is not None and after.count(after[0]) == len(after)


def test_hnsw_rankings_agree_where_the_graph_misses_true_neighbours(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    """High-dimensional data on which the graph misses some of the exact top `k`: the
    proposals then depend on the graph itself, and both kernels still rank alike (they would
    not if their graphs differed)."""
    n, dim, k = 3000, 256, 50
    data = vectors(n, seed=31, dim=dim)
    queries = vectors(60, seed=32, dim=dim)
    results, graphs = [], []
    for kern in both_kernels:
        index = kern.BankIndex(dim)
        index._set_dense_exact_max(THRESHOLD)
        index.add_many(list(range(n)), [""] * n, data)
        truth = [index.search_dense(q, k) for q in queries]  # exact: no graph yet
        assert index.build_dense_graph()
        got = [index.search_dense(q, k) for q in queries]
        misses = sum(g != t for g, t in zip(got, truth, strict=True))
        assert misses >= 10, f"only {misses} queries miss a true neighbour"
        results.append([hexed(g) for g in got])
        graphs.append(graph_bytes(index))
    assert results[0] == results[1]
    assert graphs[0] == graphs[1]


@pytest.mark.parametrize("dim", [0, DIM])
def test_dense_graph_needed_is_false_for_an_empty_index(kernel: Kernel, dim: int) -> None:
    assert not kernel.BankIndex(dim).dense_graph_needed()


def test_concurrent_searches_of_one_graph_all_answer(kernel: Kernel) -> None:
    """More threads than usearch has thread contexts search one graph at once (the Rust kernel
    releases the GIL and shares a read lock): each gets the serial answer, none an error."""
    index = large(kernel, n=2000, dim=32)
    assert index.build_dense_graph()
    queries = vectors(24, seed=5, dim=32)

    def answer(q: bytes) -> tuple[Any, Any]:
        return index.recall("doc", 30, vector=q), index.search_dense(q, 10)

    serial = [answer(q) for q in queries]
    threads = 2 * (os.cpu_count() or 1) + 8
    start = threading.Barrier(threads)
    failures: list[BaseException] = []
    answers: list[list[tuple[Any, Any]]] = []

    def worker(shift: int) -> None:
        try:
            start.wait()
            order = list(range(shift, len(queries))) + list(range(shift))
            got = [(i, answer(queries[i])) for _ in range(4) for i in order]
            answers.append(got)
        except BaseException as exc:  # reported below
            failures.append(exc)

    pool = [threading.Thread(target=worker, args=(t % len(queries),)) for t in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    assert not failures, f"{len(failures)} threads failed, first: {failures[0]!r}"
    assert len(answers) == threads
    for got in answers:
        assert all(a == serial[i] for i, a in got)
