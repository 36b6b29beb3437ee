"""AllowSet: a filter built once and passed by reference (docs/parity.md, "Filters"). It ranks
exactly as the same ordinals given as a list, in both kernels and alike, stays right after the
index changes under it, and keeps the dense stream full above the exact threshold."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memwire._kernel.contract import Allow, BankIndex, Kernel
from memwire._kernel.vectors import quantize
from memwire.errors import InvalidInputError
from pyroaring import BitMap

from .test_dense_graph import exact
from .test_differential import SETTINGS, hexed, word_text


def searches(index: BankIndex, query: str, k: int, allow: Allow, vec: bytes | None) -> Any:
    """Every search of ``index`` with ``allow``, floats as hex."""
    out = [
        hexed(index.search_bm25(query, k, allow)),
        hexed(index.search_overlap(query, k, allow)),
        hexed(index.recall(query, k, allow=allow, vector=vec)),
    ]
    if vec is not None:
        out.append(hexed(index.search_dense(vec, k, allow)))
    return out


@SETTINGS
@given(
    docs=st.lists(word_text, min_size=1, max_size=40),
    query=word_text,
    k=st.integers(1, 15),
    dim=st.sampled_from([0, 3]),
    data=st.data(),
)
def test_a_set_ranks_as_its_list_in_both_kernels(
    both_kernels: tuple[Kernel, Kernel],
    docs: list[str],
    query: str,
    k: int,
    dim: int,
    data: st.DataObject,
) -> None:
    n = len(docs)
    allowed = data.draw(st.lists(st.integers(0, n + 5), max_size=n + 5))
    rng = np.random.default_rng(n)
    vectors: list[bytes | None] = (
        [quantize(v) for v in rng.standard_normal((n, dim))] if dim else [None] * n
    )
    qvec = quantize([1.0, -0.5, 0.25]) if dim else None
    got = []
    for kern in both_kernels:
        index = kern.BankIndex(dim)
        index.add_many(list(range(n)), docs, vectors)
        as_list = searches(index, query, k, allowed, qvec)
        assert searches(index, query, k, kern.AllowSet(allowed), qvec) == as_list
        serialized = kern.AllowSet.from_bytes(BitMap(allowed).serialize())
        assert searches(index, query, k, serialized, qvec) == as_list
        got.append(as_list)
    assert got[0] == got[1]


@SETTINGS
@given(data=st.data())
def test_a_set_stays_right_after_adds_removes_and_slot_reuse(
    both_kernels: tuple[Kernel, Kernel], data: st.DataObject
) -> None:
    n = 30
    docs = [f"alpha word{o % 4} beta{o % 3}" for o in range(n)]
    allowed = data.draw(st.sets(st.integers(0, 2 * n)))
    removed = data.draw(st.sets(st.integers(0, n - 1)))
    added = data.draw(st.sets(st.integers(n, 2 * n)))
    results = []
    for kern in both_kernels:
        index = kern.BankIndex(2)
        vec = [quantize([np.cos(o), np.sin(o)]) for o in range(2 * n + 1)]
        index.add_many(list(range(n)), docs, vec[:n])
        allow = kern.AllowSet(allowed)  # made before the index changes
        for o in sorted(removed):
            assert index.remove(o)
        # Freed slots are taken by new ordinals, and removed ordinals come back.
        again = sorted(added | set(list(removed)[:3]))
        index.add_many(again, [f"alpha again{o % 5}" for o in again], [vec[o] for o in again])
        q = vec[7]
        for query in ("alpha", "word1 beta2", "again3 alpha"):
            got = searches(index, query, 12, allow, q)
            assert got == searches(index, query, 12, sorted(allowed), q)
            results.append(got)
    assert results[: len(results) // 2] == results[len(results) // 2 :]


DIM = 8
THRESHOLD = 100


def graph_index(kernel: Kernel, n: int = 1200) -> BankIndex:
    rng = np.random.default_rng(11)
    index = kernel.BankIndex(DIM)
    index._set_dense_exact_max(THRESHOLD)
    vectors = [quantize(v) for v in rng.standard_normal((n, DIM))]
    index.add_many(list(range(n)), [f"doc {o}" for o in range(n)], vectors)
    assert index.build_dense_graph()
    return index


def test_a_selective_filter_never_empties_the_dense_stream(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    """With the graph in use: a filter leaving at most the exact threshold's vectors is
    searched exactly; a larger one that the graph's first proposals miss is widened until
    ``k`` pass. Both kernels agree."""
    rng = np.random.default_rng(5)
    queries = [quantize(v) for v in rng.standard_normal((4, DIM))]
    few = list(range(0, 1200, 13))  # 93 vectors: at most the threshold
    many = list(range(1000, 1150))  # 150: above it, an eighth of the bank
    out = []
    for kern in both_kernels:
        index = graph_index(kern)
        assert not index.dense_graph_needed()
        got = []
        for q in queries:
            small = index.search_dense(q, 20, kern.AllowSet(few))
            assert small == [row for row in exact(index, q, 1200) if row[0] in set(few)][:20]
            wide = index.search_dense(q, 30, kern.AllowSet(many))
            assert len(wide) == 30 and all(o in set(many) for o, _ in wide)
            assert wide == index.search_dense(q, 30, many)
            rows = index.recall("doc", 30, allow=kern.AllowSet(many), vector=q)
            assert sum(1 for row in rows if row[4]) == 30
            got.append((hexed(small), hexed(wide), hexed(rows)))
        out.append(got)
    assert out[0] == out[1]


def test_membership_and_size(kernel: Kernel) -> None:
    allow = kernel.AllowSet([5, 3, 5, 2**32 - 1])
    assert len(allow) == 3
    assert 5 in allow and 2**32 - 1 in allow and 4 not in allow
    assert -1 not in allow and 2**40 not in allow and "5" not in allow
    assert len(kernel.AllowSet([])) == 0
    runs = BitMap(range(100, 5000))
    runs.add(70_000)
    runs.run_optimize()
    back = kernel.AllowSet.from_bytes(runs.serialize())
    assert len(back) == len(runs) and 4999 in back and 5000 not in back and 70_000 in back


BAD = [
    ("negative", lambda k: k.AllowSet([1, -1])),
    ("big", lambda k: k.AllowSet([2**32])),
    ("garbage", lambda k: k.AllowSet.from_bytes(b"nope")),
    ("trailing", lambda k: k.AllowSet.from_bytes(BitMap([1, 2]).serialize() + b"\0")),
    ("short", lambda k: k.AllowSet.from_bytes(BitMap([1, 2]).serialize()[:-1])),
]


@pytest.mark.parametrize("name,call", BAD, ids=[n for n, _ in BAD])
def test_bad_sets_are_refused_alike(
    both_kernels: tuple[Kernel, Kernel], name: str, call: Any
) -> None:
    messages = []
    for kern in both_kernels:
        with pytest.raises(InvalidInputError) as info:
            call(kern)
        messages.append(str(info.value))
    assert messages[0] == messages[1]


def test_a_float_is_not_an_ordinal(kernel: Kernel) -> None:
    with pytest.raises(TypeError, match="expected an int, got float"):
        kernel.AllowSet([1, 2.0])  # type: ignore[list-item]
