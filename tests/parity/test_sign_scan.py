"""The sign-bit scan (docs/parity.md, "Dense stream"): above the exact threshold and up to the
graph's, the dense stream re-scores exactly the vectors nearest to the query by the Hamming
distance of their sign bits, narrowed by the sum of the query's components at their positive
ones, ties by ascending ordinal in both. Each kernel against a reference written here, and the
two kernels against each other, bit for bit."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwire._kernel.contract import BankIndex, Kernel
from memwire._kernel.pure._generated import DENSE_SCALE
from memwire._kernel.vectors import quantize

from .test_differential import hexed

EXACT_MAX = 40
GRAPH_MIN = 1_000_000
CANDIDATES = 40
RESCORED = 25


def coarse_vectors(n: int, dim: int, seed: int) -> list[bytes]:
    """Vectors of few distinct sign patterns, so that many tie on their Hamming distance."""
    rng = np.random.default_rng(seed)
    comps = rng.choice([-2.0, -1.0, 0.0, 1.0, 3.0], size=(n, dim))
    comps[~comps.any(axis=1), 0] = 1.0
    return [quantize(v) for v in comps]


def sign_reference(
    index: BankIndex, query: bytes, k: int, allow: list[int] | None, c1: int, c2: int
) -> list[tuple[int, float]]:
    """The contract spelled out: distances by counting differing signs one component at a
    time; the ``max(c1, c2, k)`` nearest by (distance, ordinal); of those the ``max(c2, k)``
    best by (-sum of the query at positive components, ordinal); exact scores by (-score,
    ordinal)."""
    doc = msgpack.unpackb(index.to_bytes())
    from pyroaring import BitMap

    ords = list(BitMap.deserialize(doc["vec_docs"]))
    mat = np.frombuffer(doc["vectors"], dtype="<i2").reshape(len(ords), doc["dim"])
    q = [int(x) for x in np.frombuffer(query, dtype="<i2")]
    rows = [r for r, o in enumerate(ords) if allow is None or o in allow]
    signs = {r: [int(x) > 0 for x in mat[r]] for r in rows}
    dist = {r: sum(a != (b > 0) for a, b in zip(signs[r], q, strict=True)) for r in rows}
    c2 = max(c2, k)
    chosen = sorted(rows, key=lambda r: (dist[r], ords[r]))[: max(c1, c2)]
    asym = {r: sum(b for a, b in zip(signs[r], q, strict=True) if a) for r in chosen}
    chosen = sorted(chosen, key=lambda r: (-asym[r], ords[r]))[:c2]
    dots = {r: sum(int(a) * b for a, b in zip(mat[r], q, strict=True)) for r in chosen}
    best = sorted(chosen, key=lambda r: (-dots[r], ords[r]))[:k]
    return [(ords[r], dots[r] / float(DENSE_SCALE * DENSE_SCALE)) for r in best]


def sign_index(kernel: Kernel, vectors: list[bytes], dim: int) -> BankIndex:
    index = kernel.BankIndex(dim)
    index._set_dense_tiers(EXACT_MAX, GRAPH_MIN, CANDIDATES, RESCORED)
    index.add_many(list(range(len(vectors))), [f"doc {o}" for o in range(len(vectors))], vectors)
    return index


@pytest.mark.parametrize("dim", [8, 70])
def test_the_scan_matches_the_reference(kernel: Kernel, dim: int) -> None:
    """Two words of sign bits and a partial one (dim 70) alike; removals move rows (the last
    fills the gap), re-adding an ordinal gives it a new row; neither changes a result."""
    data = coarse_vectors(300, dim, seed=dim)
    index = sign_index(kernel, data, dim)
    for o in range(0, 300, 7):
        index.remove(o)
    for o in (14, 21):
        index.add(o, "back", data[o + 1])
    assert not index.dense_graph_needed(), "no graph below graph_min"
    allow = list(range(3, 300, 2))
    few = list(range(10))
    for q in coarse_vectors(6, dim, seed=100 + dim):
        for k in (1, 10, 40):
            assert index.search_dense(q, k) == sign_reference(
                index, q, k, None, CANDIDATES, RESCORED
            )
            got = index.search_dense(q, k, allow)
            assert got == sign_reference(index, q, k, allow, CANDIDATES, RESCORED)
        # A filter leaving at most the exact threshold is searched exactly.
        assert index.search_dense(q, 5, few) == sign_reference(index, q, 5, few, len(few), len(few))


def test_the_scan_misses_what_the_exact_search_finds(kernel: Kernel) -> None:
    """The scan is a real approximation: on random 64-d data, some queries' exact top 10 holds
    a vector outside the candidates (else this file would not test the scan at all)."""
    rng = np.random.default_rng(3)
    data = [quantize(v) for v in rng.standard_normal((400, 64))]
    index = sign_index(kernel, data, 64)
    exact = kernel.BankIndex(64)
    exact.add_many(list(range(400)), [""] * 400, data)
    queries = [quantize(v) for v in rng.standard_normal((30, 64))]
    missed = sum(index.search_dense(q, 10) != exact.search_dense(q, 10) for q in queries)
    assert missed >= 5
    assert all(
        index.search_dense(q, 10) == sign_reference(index, q, 10, None, CANDIDATES, RESCORED)
        for q in queries
    )


def test_a_snapshot_searches_alike_on_both_kernels(both_kernels: tuple[Kernel, Kernel]) -> None:
    data = coarse_vectors(200, 16, seed=9)
    queries = coarse_vectors(8, 16, seed=10)
    rust, py = (sign_index(kern, data, 16) for kern in both_kernels)
    for index in (rust, py):
        index.remove(5)
        index.remove(199)
    assert rust.to_bytes() == py.to_bytes()
    for source in (rust, py):
        for kern in both_kernels:
            loaded = kern.BankIndex.from_bytes(source.to_bytes())
            loaded._set_dense_tiers(EXACT_MAX, GRAPH_MIN, CANDIDATES, RESCORED)
            for q in queries:
                assert hexed(loaded.search_dense(q, 10)) == hexed(rust.search_dense(q, 10))
                assert hexed(loaded.recall("doc", 5, vector=q)) == hexed(
                    rust.recall("doc", 5, vector=q)
                )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(EXACT_MAX + 1, 160),
    dim=st.sampled_from([3, 64, 65]),
    k=st.integers(1, 40),
    candidates=st.integers(1, 60),
    rescored=st.integers(1, 60),
    seed=st.integers(0, 2**16),
    removed=st.lists(st.integers(0, 159), max_size=20),
    filtered=st.booleans(),
)
def test_kernels_agree(
    both_kernels: tuple[Kernel, Kernel],
    n: int,
    dim: int,
    k: int,
    candidates: int,
    rescored: int,
    seed: int,
    removed: list[int],
    filtered: bool,
) -> None:
    data = coarse_vectors(n, dim, seed)
    queries = coarse_vectors(3, dim, seed + 1)
    allow = list(range(0, n, 3)) if filtered else None
    results = []
    for kern in both_kernels:
        index = kern.BankIndex(dim)
        index._set_dense_tiers(EXACT_MAX // 4, GRAPH_MIN, candidates, rescored)
        index.add_many(list(range(n)), [""] * n, data)
        for o in removed:
            if o < n:
                index.remove(o)
        results.append([hexed(index.search_dense(q, k, allow)) for q in queries])
    assert results[0] == results[1]


def test_a_graph_is_used_above_graph_min_and_shed_below_half(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    """Above graph_min the graph proposes (once built); a bank that shrinks to half of it drops
    the graph on its next write, on both kernels, and its snapshot then holds none."""
    data = coarse_vectors(120, 8, seed=4)
    graphs = []
    for kern in both_kernels:
        index = kern.BankIndex(8)
        index._set_dense_tiers(10, 100, 8, 5)
        index.add_many(list(range(120)), [""] * 120, data)
        assert index.dense_graph_needed()
        assert index.build_dense_graph()
        assert msgpack.unpackb(index.to_bytes())["hnsw"] is not None
        for o in range(60):
            index.remove(o)
        graphs.append(msgpack.unpackb(index.to_bytes())["hnsw"])  # 60 left: kept
        assert not index.dense_graph_needed()
        for o in range(60, 70):
            index.remove(o)  # 50 left: half of graph_min
        assert msgpack.unpackb(index.to_bytes())["hnsw"] is None
        assert not index.dense_graph_needed()
    assert graphs[0] is not None and graphs[0] == graphs[1]
