"""Hypothesis differential tests: the Rust and Python kernels agree bit for bit."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from memwire._kernel.contract import Kernel
from memwire._kernel.vectors import quantize
from memwire.errors import MemwireError

# Tiny vocabularies force ties; arbitrary text exercises the tokenizer tables.
WORDS = ["alpha", "beta", "gamma", "src/main.rs", "E0502", "東京都", "café", "Straße", "v1.2.3"]
word_text = st.lists(st.sampled_from(WORDS), max_size=10).map(" ".join)
any_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=60)
texts = st.one_of(word_text, any_text)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hexed(rows: list[Any]) -> list[Any]:
    return [tuple(x.hex() if isinstance(x, float) else x for x in row) for row in rows]


@SETTINGS
@given(text=any_text)
def test_tokenize_any_unicode(both_kernels: tuple[Kernel, Kernel], text: str) -> None:
    rust, py = both_kernels
    assert rust.tokenize(text) == py.tokenize(text)


@SETTINGS
@given(
    docs=st.lists(texts, min_size=1, max_size=40),
    query=texts,
    k=st.integers(1, 20),
    dim=st.sampled_from([0, 3]),
    data=st.data(),
)
def test_search_agrees(
    both_kernels: tuple[Kernel, Kernel],
    docs: list[str],
    query: str,
    k: int,
    dim: int,
    data: st.DataObject,
) -> None:
    rust, py = both_kernels
    vectors: list[bytes | None] = []
    for _ in docs:
        if dim:
            comps = data.draw(
                st.lists(st.sampled_from([-1.0, 0.0, 1.0, 2.0]), min_size=3, max_size=3)
            )
            vectors.append(quantize(comps) if any(comps) else None)
        else:
            vectors.append(None)
    qvec = quantize([1.0, 0.0, -1.0]) if dim else None
    indexes = []
    for kern in (rust, py):
        index = kern.BankIndex(dim)
        index.add_many(list(range(len(docs))), docs, vectors)
        indexes.append(index)
    a, b = indexes
    assert hexed(a.search_bm25(query, k)) == hexed(b.search_bm25(query, k))
    assert hexed(a.search_overlap(query, k)) == hexed(b.search_overlap(query, k))
    assert hexed(a.recall(query, k, vector=qvec)) == hexed(b.recall(query, k, vector=qvec))
    # Filters, weights and stream depths change which candidates the fusion scores (the pure
    # kernel scores only those, by binary search in the postings) and where the overlap
    # stream's top-depth cut falls among ties.
    allow = data.draw(st.none() | st.lists(st.integers(-1, len(docs)), max_size=len(docs)))
    weights = data.draw(st.sampled_from([None, (1.0, 0.0, 0.0), (0.0, 1.0, 0.5), (0.0, 0.0, 1.0)]))
    depth = data.draw(st.integers(1, 6))
    assert hexed(a.search_overlap(query, depth, allow=allow)) == hexed(
        b.search_overlap(query, depth, allow=allow)
    )
    assert hexed(a.recall(query, k, weights, depth, allow, qvec)) == hexed(
        b.recall(query, k, weights, depth, allow, qvec)
    )
    # Snapshots cross over: each backend loads the other's bytes and ranks identically.
    a2 = py.BankIndex.from_bytes(a.to_bytes())
    b2 = rust.BankIndex.from_bytes(b.to_bytes())
    assert hexed(a2.recall(query, k, vector=qvec)) == hexed(b.recall(query, k, vector=qvec))
    assert hexed(b2.recall(query, k, vector=qvec)) == hexed(a.recall(query, k, vector=qvec))


@SETTINGS
@given(
    streams=st.lists(
        st.lists(st.integers(0, 30), max_size=20, unique=True), min_size=1, max_size=3
    ),
    data=st.data(),
)
def test_rrf_agrees(
    both_kernels: tuple[Kernel, Kernel], streams: list[list[int]], data: st.DataObject
) -> None:
    rust, py = both_kernels
    weights = data.draw(
        st.lists(
            st.sampled_from([0.0, 0.25, 1.0, 1.5]), min_size=len(streams), max_size=len(streams)
        )
    )
    assert hexed(rust.rrf(streams, weights)) == hexed(py.rrf(streams, weights))


@SETTINGS
@given(texts=st.lists(any_text, min_size=1, max_size=8), budget=st.integers(1, 40))
def test_budget_agrees(both_kernels: tuple[Kernel, Kernel], texts: list[str], budget: int) -> None:
    rust, py = both_kernels
    assert rust.trim_to_budget(texts, budget) == py.trim_to_budget(texts, budget)


BAD_CALLS = [
    ("add", lambda ix: ix.add(-1, "x")),
    ("add-big", lambda ix: ix.add(2**32, "x")),
    ("dup", lambda ix: (ix.add(1, "x"), ix.add(1, "y"))),
    ("dup-batch", lambda ix: ix.add_many([5, 5], ["a", "b"])),
    ("lengths", lambda ix: ix.add_many([5, 6], ["a"])),
    ("vector-no-dim", lambda ix: ix.add(3, "x", b"\x01\x00")),
    ("k", lambda ix: ix.search_bm25("x", 0)),
    ("limit", lambda ix: ix.recall("x", 0)),
    ("depth", lambda ix: ix.recall("x", 3, depth=0)),
    ("weights-len", lambda ix: ix.recall("x", 3, weights=[1.0])),
    ("weights-nan", lambda ix: ix.recall("x", 3, weights=[1.0, float("nan"), 1.0])),
    ("weights-neg", lambda ix: ix.recall("x", 3, weights=[1.0, -1.0, 1.0])),
]


@pytest.mark.parametrize("name,call", BAD_CALLS, ids=[n for n, _ in BAD_CALLS])
def test_errors_agree(both_kernels: tuple[Kernel, Kernel], name: str, call: Any) -> None:
    outcomes = []
    for kern in both_kernels:
        index = kern.BankIndex(0)
        with pytest.raises(MemwireError) as info:
            call(index)
        outcomes.append((type(info.value), str(info.value), index.stats()))
    assert outcomes[0] == outcomes[1]


class IndexMachine(RuleBasedStateMachine):
    """Interleave add/remove/search on both kernels; they must never disagree."""

    def __init__(self) -> None:
        super().__init__()
        from memwire._kernel.backend import load_kernel

        self.rust = load_kernel("rust").BankIndex(0)
        self.py = load_kernel("python").BankIndex(0)
        self.live: set[int] = set()

    @rule(ordinal=st.integers(0, 60), text=texts)
    def add(self, ordinal: int, text: str) -> None:
        if ordinal in self.live:
            return
        self.rust.add(ordinal, text)
        self.py.add(ordinal, text)
        self.live.add(ordinal)

    @precondition(lambda self: bool(self.live))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        ordinal = data.draw(st.sampled_from(sorted(self.live)))
        assert self.rust.remove(ordinal) and self.py.remove(ordinal)
        self.live.discard(ordinal)

    @rule()
    def reload(self) -> None:
        from memwire._kernel.backend import load_kernel

        self.rust, self.py = (
            load_kernel("rust").BankIndex.from_bytes(self.py.to_bytes()),
            load_kernel("python").BankIndex.from_bytes(self.rust.to_bytes()),
        )

    @rule(query=word_text, k=st.integers(1, 10))
    def search(self, query: str, k: int) -> None:
        # Both orders: the pure kernel reuses a query's lexical pass until the next change.
        assert hexed(self.rust.search_bm25(query, k)) == hexed(self.py.search_bm25(query, k))
        assert hexed(self.rust.recall(query, k)) == hexed(self.py.recall(query, k))
        assert hexed(self.rust.search_overlap(query, k)) == hexed(self.py.search_overlap(query, k))

    @invariant()
    def same_stats(self) -> None:
        assert self.rust.stats() == self.py.stats()
        assert len(self.rust) == len(self.py) == len(self.live)


def test_a_repeated_query_sees_every_change(both_kernels: tuple[Kernel, Kernel]) -> None:
    """The same query before and after an add, a remove and an add of the removed ordinal
    ranks as on an index freshly built with the same documents."""
    query = "alpha beta"
    docs = {0: "alpha beta", 1: "beta gamma", 2: "alpha alpha"}
    changes: list[tuple[str, int, str]] = [
        ("add", 3, "alpha beta beta"),
        ("remove", 0, ""),
        ("add", 0, "gamma beta"),
    ]
    for kern in both_kernels:
        index = kern.BankIndex(0)
        index.add_many(list(docs), list(docs.values()))
        live = dict(docs)
        for op, ordinal, text in changes:
            index.search_bm25(query, 2)
            index.recall(query, 5)
            if op == "add":
                index.add(ordinal, text)
                live[ordinal] = text
            else:
                assert index.remove(ordinal)
                del live[ordinal]
            fresh = kern.BankIndex(0)
            fresh.add_many(list(live), list(live.values()))
            for k in (1, 5):
                assert hexed(index.search_bm25(query, k)) == hexed(fresh.search_bm25(query, k))
                assert hexed(index.search_overlap(query, k)) == hexed(
                    fresh.search_overlap(query, k)
                )
                assert hexed(index.recall(query, k)) == hexed(fresh.recall(query, k))


def test_stateful(both_kernels: tuple[Kernel, Kernel]) -> None:
    from hypothesis.stateful import run_state_machine_as_test

    run_state_machine_as_test(
        IndexMachine, settings=settings(max_examples=60, stateful_step_count=40, deadline=None)
    )


def test_hnsw_above_the_exact_threshold_agrees_and_survives_snapshots(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    """Above the exact threshold (lowered here) a built graph proposes candidates; both kernels
    build from the same vectors in the same order (ascending ordinals, one thread), save the
    graph in snapshots, and load each other's."""
    import numpy as np

    rng = np.random.default_rng(7)
    n, dim, threshold = 2200, 8, 2000
    vectors = [quantize(v) for v in rng.standard_normal((n, dim))]
    queries = [quantize(v) for v in rng.standard_normal((5, dim))]
    indexes = []
    for kern in both_kernels:
        index = kern.BankIndex(dim)
        index._set_dense_exact_max(threshold)
        index.add_many(list(range(n)), [""] * n, vectors)
        assert index.build_dense_graph()
        indexes.append(index)
    rust, py = indexes
    for q in queries:
        assert hexed(rust.search_dense(q, 10)) == hexed(py.search_dense(q, 10))
    snapshot = rust.to_bytes()
    assert msgpack_field(snapshot, "hnsw") is not None
    for kern in both_kernels:
        loaded = kern.BankIndex.from_bytes(snapshot)
        loaded._set_dense_exact_max(threshold)
        assert not loaded.dense_graph_needed()
        for q in queries:
            assert hexed(loaded.search_dense(q, 10)) == hexed(rust.search_dense(q, 10))


def msgpack_field(snapshot: bytes, key: str) -> Any:
    import msgpack

    return msgpack.unpackb(snapshot)[key]


def test_a_bad_hnsw_graph_is_refused_alike(both_kernels: tuple[Kernel, Kernel]) -> None:
    import msgpack
    from memwire.errors import SnapshotError

    rust, py = both_kernels
    index = py.BankIndex(2)
    index.add(1, "x", quantize([1.0, 0.0]))
    doc = msgpack.unpackb(index.to_bytes())
    for graph in (b"not a graph", rust.BankIndex(0).to_bytes()):
        bad = msgpack.packb(dict(doc, hnsw=graph), use_bin_type=True)
        messages = []
        for kern in both_kernels:
            with pytest.raises(SnapshotError) as info:
                kern.BankIndex.from_bytes(bad)
            messages.append(str(info.value).split(":")[0])
        assert messages == ["corrupt snapshot", "corrupt snapshot"]
