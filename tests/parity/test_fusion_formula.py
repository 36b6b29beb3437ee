"""Every fused score equals docs/parity.md's "Fusion" formula evaluated directly, document at a
time, in this file: both kernels reuse the lexical pass's accumulators where they can, so the
differential tests alone would not see a shortcut that both take wrongly. Long documents (the
length cap), absent query terms, zero weights and small filters (the kernels' document-at-a-time
path) are all drawn."""

from __future__ import annotations

import math
from collections.abc import Mapping

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwire._kernel.constants import BM25_B, BM25_K1, DEFAULT_WEIGHTS, DENSE_SCALE
from memwire._kernel.contract import Kernel
from memwire._kernel.vectors import quantize

WORDS = ["alpha", "beta", "gamma", "delta", "src/main.rs", "東京都"]
DIM = 3
# The `kernel` fixture is a module, which no example changes.
SETTINGS = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def fused_by_formula(
    kernel: Kernel,
    docs: Mapping[int, tuple[str, bytes | None]],
    query: str,
    weights: tuple[float, float, float],
    qvec: bytes | None,
) -> dict[int, float]:
    """ordinal -> fused score for every live document (docs/parity.md, "Fusion" steps 4-6)."""
    tokens = {o: kernel.tokenize(text) for o, (text, _) in docs.items()}
    total_len = sum(len(t) for t in tokens.values())
    n = len(docs)
    terms = list(dict.fromkeys(kernel.tokenize(query))) if n and total_len else []
    idfs = []
    for t in terms:
        df = sum(1 for toks in tokens.values() if t in toks)
        idfs.append(math.log(1.0 + ((n - df) + 0.5) / (df + 0.5)))
    q_idf = 0.0
    for idf in idfs:
        q_idf = q_idf + idf
    w_dense = weights[2] if qvec is not None else 0.0
    total = (weights[0] + weights[1]) + w_dense
    out = {}
    for o, toks in tokens.items():
        bm25, hits = 0.0, 0
        if terms:
            norm = BM25_K1 * ((1.0 - BM25_B) + BM25_B * (float(len(toks)) / (total_len / n)))
            cap = min(norm, BM25_K1)
            for t, idf in zip(terms, idfs, strict=True):
                tf = float(toks.count(t))
                if tf:
                    bm25 = bm25 + idf * ((tf * (BM25_K1 + 1.0)) / (tf + cap))
                    hits += 1
        lex = bm25 / ((BM25_K1 + 1.0) * q_idf) if hits else 0.0
        frac = float(hits) / float(len(terms)) if hits else 0.0
        cos = 0.0
        vec = docs[o][1]
        if qvec is not None and vec is not None:
            a = memoryview(qvec).cast("h")
            b = memoryview(vec).cast("h")
            dot = sum(int(x) * int(y) for x, y in zip(a, b, strict=True))
            cos = dot / float(DENSE_SCALE * DENSE_SCALE) if dot > 0 else 0.0
        out[o] = (((weights[0] * lex) + (weights[1] * frac)) + (w_dense * cos)) / total
    return out


@SETTINGS
@given(
    docs=st.lists(
        st.tuples(
            # Mostly short documents, some many times the average: the cap's two sides.
            st.one_of(
                st.lists(st.sampled_from(WORDS), max_size=4),
                st.lists(st.sampled_from(WORDS), min_size=20, max_size=60),
            ).map(" ".join),
            st.one_of(
                st.none(), st.lists(st.sampled_from([-1.0, 0.0, 2.0]), min_size=DIM, max_size=DIM)
            ),
        ),
        min_size=1,
        max_size=40,
    ),
    query=st.lists(st.sampled_from([*WORDS, "absent", "missing"]), max_size=4).map(" ".join),
    weights=st.sampled_from([DEFAULT_WEIGHTS, (1.0, 0.0, 1.0), (0.0, 1.0, 0.5), (1.0, 1.0, 0.0)]),
    with_vector=st.booleans(),
    data=st.data(),
)
def test_fused_scores_follow_the_formula(
    kernel: Kernel,
    docs: list[tuple[str, list[float] | None]],
    query: str,
    weights: tuple[float, float, float],
    with_vector: bool,
    data: st.DataObject,
) -> None:
    vectors = [quantize(v) if v is not None and any(v) else None for _, v in docs]
    live = {o: (text, vec) for o, ((text, _), vec) in enumerate(zip(docs, vectors, strict=True))}
    index = kernel.BankIndex(DIM)
    index.add_many(list(live), [t for t, _ in live.values()], [v for _, v in live.values()])
    qvec = quantize([1.0, 0.5, -1.0]) if with_vector else None
    # None, a small filter (scored document at a time when postings are long) or a large one.
    allow = data.draw(st.one_of(st.none(), st.lists(st.sampled_from(list(live)), max_size=40)))
    want = fused_by_formula(kernel, live, query, weights, qvec)
    rows = index.recall(query, 1000, weights=list(weights), allow=allow, vector=qvec)
    for ordinal, score, *_ in rows:
        assert score.hex() == want[ordinal].hex(), ordinal
    # Below the stream depth every allowed document is a candidate of the streams that can give
    # it a positive score, so exactly those come back, best first.
    allowed = set(live) if allow is None else set(allow)
    positive = sorted(
        (o for o, s in want.items() if s > 0.0 and o in allowed), key=lambda o: (-want[o], o)
    )
    assert [r[0] for r in rows] == positive


def test_a_small_filter_scores_by_the_formula(kernel: Kernel) -> None:
    """A filter much smaller than the query terms' postings is scored document at a time by
    the kernels (no accumulators to reuse): the fused scores are still the formula's."""
    texts = [
        " ".join(["alpha"] * (1 + o % 5) + ["beta"] * (o % 3) + ["gamma"] * o) for o in range(200)
    ]
    vectors = [quantize([1.0, float(o % 4), -1.0]) for o in range(200)]
    live = {o: (t, v) for o, (t, v) in enumerate(zip(texts, vectors, strict=True))}
    index = kernel.BankIndex(DIM)
    index.add_many(list(live), texts, vectors)
    qvec = quantize([1.0, 0.5, -1.0])
    want = fused_by_formula(kernel, live, "alpha beta missing", DEFAULT_WEIGHTS, qvec)
    allow = [3, 4, 150, 199]
    rows = index.recall("alpha beta missing", 10, allow=allow, vector=qvec)
    assert [r[0] for r in rows] == sorted(allow, key=lambda o: (-want[o], o))
    assert [r[1].hex() for r in rows] == [want[r[0]].hex() for r in rows]
