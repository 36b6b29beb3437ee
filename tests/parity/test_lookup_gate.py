"""``recall_gated`` (docs/parity.md, "The lookup gate") is the gate decided by
``search_bm25(query, 2, allow)`` followed by ``recall``: the same rows and the same decision,
for every query, weight, filter, depth and ratio drawn, on each backend; and the same rows on
both backends (the differential tests compare ``recall`` itself)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwire._kernel.constants import DEFAULT_WEIGHTS
from memwire._kernel.contract import Kernel, RecallRow
from memwire._kernel.vectors import quantize
from memwire.errors import InvalidInputError

WORDS = ["alpha", "beta", "gamma", "delta", "src/main.rs", "東京都", "k8s-node-17"]
DIM = 3
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

docs_strategy = st.lists(
    st.tuples(
        st.one_of(
            st.lists(st.sampled_from(WORDS), max_size=5),
            st.lists(st.sampled_from(WORDS), min_size=15, max_size=40),
        ).map(" ".join),
        st.one_of(
            st.none(), st.lists(st.sampled_from([-1.0, 0.0, 2.0]), min_size=DIM, max_size=DIM)
        ),
    ),
    min_size=1,
    max_size=40,
)


def composed(
    index: object,
    query: str,
    limit: int,
    ratio: float,
    weights: tuple[float, float, float],
    depth: int | None,
    allow: list[int] | None,
    vector: bytes | None,
) -> tuple[list[RecallRow], bool]:
    """The gate as memwire decided it before the kernel did: a BM25 top two, then recall."""
    lexical = weights[0] > 0 or weights[1] > 0
    if vector is not None and ratio > 0 and lexical:
        top = index.search_bm25(query, 2, allow)  # type: ignore[attr-defined]
        if len(top) == 2 and top[0][1] >= ratio * top[1][1]:
            rows = index.recall(  # type: ignore[attr-defined]
                query, limit, [weights[0], weights[1], 0.0], depth, allow
            )
            return rows, True
    rows = index.recall(query, limit, list(weights), depth, allow, vector)  # type: ignore[attr-defined]
    return rows, False


def _index(kernel: Kernel, docs: list[tuple[str, list[float] | None]]) -> object:
    vectors = [quantize(v) if v is not None and any(v) else None for _, v in docs]
    index = kernel.BankIndex(DIM)
    index.add_many(list(range(len(docs))), [t for t, _ in docs], vectors)
    return index


@SETTINGS
@given(
    docs=docs_strategy,
    query=st.lists(st.sampled_from([*WORDS, "absent"]), max_size=4).map(" ".join),
    weights=st.sampled_from([DEFAULT_WEIGHTS, (1.0, 0.0, 1.0), (0.0, 1.0, 0.5), (1.0, 1.0, 0.0)]),
    ratio=st.sampled_from([0.0, 1.0, 1.1, 1.5, 3.0]),
    depth=st.sampled_from([None, 1, 2, 5]),
    limit=st.sampled_from([1, 3, 300]),
    with_vector=st.booleans(),
    data=st.data(),
)
def test_the_gated_recall_is_the_gate_then_recall(
    kernel: Kernel,
    docs: list[tuple[str, list[float] | None]],
    query: str,
    weights: tuple[float, float, float],
    ratio: float,
    depth: int | None,
    limit: int,
    with_vector: bool,
    data: st.DataObject,
) -> None:
    index = _index(kernel, docs)
    allow = data.draw(st.one_of(st.none(), st.lists(st.integers(0, len(docs) - 1), max_size=30)))
    vector = quantize([1.0, 0.5, -1.0]) if with_vector else None
    got = index.recall_gated(  # type: ignore[attr-defined]
        query, limit, ratio, list(weights), depth, allow, vector
    )
    want = composed(index, query, limit, ratio, weights, depth, allow, vector)
    assert got[1] is want[1]
    assert [(o, s.hex(), *r) for o, s, *r in got[0]] == [(o, s.hex(), *r) for o, s, *r in want[0]]


@SETTINGS
@given(
    docs=docs_strategy,
    query=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join),
    ratio=st.sampled_from([1.0, 1.2, 2.0]),
)
def test_both_kernels_gate_alike(
    both_kernels: tuple[Kernel, Kernel],
    docs: list[tuple[str, list[float] | None]],
    query: str,
    ratio: float,
) -> None:
    vector = quantize([1.0, 0.5, -1.0])
    rust, python = (_index(k, docs) for k in both_kernels)
    a = rust.recall_gated(query, 50, ratio, vector=vector)  # type: ignore[attr-defined]
    b = python.recall_gated(query, 50, ratio, vector=vector)  # type: ignore[attr-defined]
    assert a[1] is b[1]
    assert [(o, s.hex(), *r) for o, s, *r in a[0]] == [(o, s.hex(), *r) for o, s, *r in b[0]]


def test_a_lookup_leaves_the_dense_stream_out(kernel: Kernel) -> None:
    texts = ["the k8s-node-17 runbook alpha", "alpha beta", "alpha gamma", "beta gamma delta"]
    index = _index(kernel, [(t, [1.0, 0.5, -1.0]) for t in texts])
    vector = quantize([1.0, 0.5, -1.0])
    # The first memory leads the second by far: a lookup, only the lexical matches come back.
    rows, lookup = index.recall_gated("k8s-node-17 alpha", 10, 1.5, vector=vector)  # type: ignore[attr-defined]
    assert lookup and rows[0][0] == 0 and {r[0] for r in rows} == {0, 1, 2}
    assert all(r[4] == 0 for r in rows)  # no dense rank
    # No lead (two equal hits), or no gate (ratio 0): the vectors bring the fourth in too.
    rows, lookup = index.recall_gated("alpha", 10, 1.5, vector=vector)  # type: ignore[attr-defined]
    assert not lookup and {r[0] for r in rows} == {0, 1, 2, 3}
    rows, lookup = index.recall_gated("k8s-node-17 alpha", 10, 0.0, vector=vector)  # type: ignore[attr-defined]
    assert not lookup and {r[0] for r in rows} == {0, 1, 2, 3}


@pytest.mark.parametrize("ratio", [-1.0, float("nan"), float("inf")])
def test_a_bad_ratio_is_refused(kernel: Kernel, ratio: float) -> None:
    index = _index(kernel, [("alpha", None)])
    with pytest.raises(InvalidInputError, match=r"^lookup_ratio must be finite and non-negative$"):
        index.recall_gated("alpha", 10, ratio)  # type: ignore[attr-defined]
