"""The per-bank index of the pure kernel: inverted lexical index plus optional dense vectors.

Scoring is vectorised with numpy but stays bit-identical to the Rust kernel: every element is
computed by the same sequence of single IEEE-754 operations (docs/parity.md, "BM25"), and a
document's score is accumulated term by term in query order.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from memwire._kernel.pack_rule import PackTerms, pack_order_with
from memwire._kernel.pure import _checks
from memwire._kernel.pure._generated import (
    BM25_B,
    BM25_K1,
    DEFAULT_DEPTH,
    DEFAULT_WEIGHTS,
    DENSE_SCALE,
    DENSE_SIGN_CANDIDATES,
    DENSE_SIGN_RESCORED,
    MAX_ORDINAL,
)
from memwire._kernel.pure.allow import AllowSet, as_bitmap
from memwire._kernel.pure.dense import DenseStore, GraphBuild, decode
from memwire._kernel.pure.ranking import top_k
from memwire._kernel.pure.tokenizer import tokenize
from memwire.errors import InvalidInputError

if TYPE_CHECKING:
    from memwire._kernel.contract import Allow

__all__ = ["BankIndex"]

_K1_PLUS_1 = BM25_K1 + 1.0
_DENSE_DIVISOR = float(DENSE_SCALE * DENSE_SCALE)

_PostingArrays = tuple[
    npt.NDArray[np.intp], npt.NDArray[np.float64], npt.NDArray[np.intp], npt.NDArray[np.float64]
]


class _Lexical(NamedTuple):
    """A query's lexical pass: its distinct terms (postings, None when absent), their idf
    and the sum of those, then the matching ordinals (any order) with their BM25 scores and
    the number of query terms each contains."""

    terms: list[Postings | None]
    idfs: list[float]
    q_idf: float
    ords: npt.NDArray[np.intp]
    scores: npt.NDArray[np.float64]
    counts: npt.NDArray[np.float64]


class Postings:
    """One term's documents (roaring bitmap of ordinals) with, aligned in ordinal order, their
    term frequencies and the internal slots that index the per-document arrays."""

    __slots__ = ("_arrays", "docs", "slots", "tfs")

    def __init__(self) -> None:
        self.docs = BitMap()
        self.tfs = array("I")
        self.slots = array("I")
        self._arrays: _PostingArrays | None = None

    def add(self, ordinal: int, tf: int, slot: int) -> None:
        if not self.docs or ordinal > self.docs.max():
            self.docs.add(ordinal)
            self.tfs.append(tf)
            self.slots.append(slot)
        else:
            self.docs.add(ordinal)
            at = self.docs.rank(ordinal) - 1
            self.tfs.insert(at, tf)
            self.slots.insert(at, slot)
        self._arrays = None

    def remove(self, ordinal: int) -> None:
        at = self.docs.rank(ordinal) - 1
        del self.tfs[at]
        del self.slots[at]
        self.docs.remove(ordinal)
        self._arrays = None

    def arrays(self) -> _PostingArrays:
        """(slots, term frequencies as f64, ordinals, ``tf * (K1 + 1.0)``), aligned, in
        ordinal order."""
        if self._arrays is None:
            slots = np.frombuffer(self.slots, dtype=np.uint32).astype(np.intp)
            tfs = np.frombuffer(self.tfs, dtype=np.uint32).astype(np.float64)
            ords = np.frombuffer(self.docs.to_array(), dtype=np.uint32).astype(np.intp)
            self._arrays = (slots, tfs, ords, tfs * _K1_PLUS_1)
        return self._arrays


class BankIndex:
    """One bank's derived index (see ``memwire._kernel.BankIndex``)."""

    def __init__(self, dim: int = 0) -> None:
        self._dense = DenseStore(_checks.dim(dim)) if dim else None
        self._dim = dim
        self._live = BitMap()
        self._vocab: dict[str, Postings] = {}
        # Per-document arrays are indexed by a dense internal slot, not by ordinal: ordinals
        # may be anywhere in 0..=MAX_ORDINAL. Slots of removed documents are reused.
        self._slot_of: dict[int, int] = {}
        self._ordinal_of = np.zeros(16, dtype=np.int64)
        self._doc_len = np.zeros(16, dtype=np.uint32)
        self._free_slots: list[int] = []
        self._total_len = 0
        # Distinct terms per document, needed only by remove(); rebuilt lazily after a load.
        self._doc_terms: dict[int, tuple[str, ...]] | None = {}
        self._norm_cache: npt.NDArray[np.float64] | None = None
        # The last unfiltered lexical pass, keyed by (query, generation): the shell's lookup
        # gate runs search_bm25 and then recall on the same query, and the pass is the cost.
        # Bumped by every add and remove, so a hit always describes the current index.
        self._generation = 0
        self._last: tuple[str, int, _Lexical] | None = None
        self._pack_terms = PackTerms()  # the served pack's terms of recent candidates

    # -- size ----------------------------------------------------------------------------
    @property
    def dim(self) -> int:
        return self._dim

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, ordinal: object) -> bool:
        return isinstance(ordinal, int) and 0 <= ordinal <= MAX_ORDINAL and ordinal in self._live

    def stats(self) -> dict[str, int]:
        return {
            "docs": len(self._live),
            "terms": len(self._vocab),
            "total_len": self._total_len,
            "vectors": len(self._dense) if self._dense is not None else 0,
            "dim": self._dim,
        }

    # -- writes --------------------------------------------------------------------------
    def _vector(self, vector: bytes | None) -> npt.NDArray[np.int16] | None:
        if vector is None:
            return None
        return decode(bytes(vector), self._dim)

    def add(self, ordinal: int, text: str, vector: bytes | None = None) -> None:
        self.add_many([ordinal], [text], [vector])

    def add_many(
        self,
        ordinals: Sequence[int],
        texts: Sequence[str],
        vectors: Sequence[bytes | None] | None = None,
    ) -> None:
        if len(ordinals) != len(texts) or (vectors is not None and len(vectors) != len(texts)):
            raise InvalidInputError("ordinals, texts and vectors must have the same length")
        seen: set[int] = set()
        for o in ordinals:
            _checks.ordinal(o)
            if o in self._live or o in seen:
                raise InvalidInputError(f"ordinal {o} is already indexed")
            seen.add(o)
        decoded = [self._vector(v) for v in vectors] if vectors is not None else None
        for i, (o, text) in enumerate(zip(ordinals, texts, strict=True)):
            self._add_one(o, text)
            vec = decoded[i] if decoded is not None else None
            if vec is not None and self._dense is not None:
                self._dense.add(o, vec)

    def _add_one(self, ordinal: int, text: str) -> None:
        counts: dict[str, int] = {}
        tokens = tokenize(text)
        for tok in tokens:
            counts[tok] = counts.get(tok, 0) + 1
        slot = self._new_slot(ordinal)
        vocab = self._vocab
        for term, tf in counts.items():
            postings = vocab.get(term)
            if postings is None:
                postings = vocab[term] = Postings()
            postings.add(ordinal, tf, slot)
        self._doc_len[slot] = len(tokens)
        self._total_len += len(tokens)
        self._live.add(ordinal)
        self._norm_cache = None
        self._generation += 1
        if self._doc_terms is not None:
            self._doc_terms[ordinal] = tuple(counts)

    def _new_slot(self, ordinal: int) -> int:
        if self._free_slots:
            slot = self._free_slots.pop()
        else:
            slot = len(self._slot_of)
            if slot >= len(self._doc_len):
                size = 2 * len(self._doc_len)
                self._doc_len = np.resize(self._doc_len, size)
                self._ordinal_of = np.resize(self._ordinal_of, size)
        self._slot_of[ordinal] = slot
        self._ordinal_of[slot] = ordinal
        return slot

    def pack_order(
        self,
        contents: Sequence[str],
        created: Sequence[str],
        ordinals: Sequence[int],
        limit: int,
        num: int,
        den: int,
        prefer_newest: bool,
    ) -> list[int] | None:
        """The served pack's choice among recall's candidates (docs/parity.md, "The relevance
        floor and the dense rescue", step 5), with the terms this index keeps; never None
        here."""
        kept = self._pack_terms
        return pack_order_with(
            tokenize, contents, created, ordinals, limit, num, den, prefer_newest, kept
        )

    def remove(self, ordinal: int) -> bool:
        _checks.ordinal(ordinal)
        if ordinal not in self._live:
            return False
        if self._doc_terms is None:
            self._rebuild_doc_terms()
        assert self._doc_terms is not None
        for term in self._doc_terms.pop(ordinal):
            postings = self._vocab[term]
            postings.remove(ordinal)
            if not postings.docs:
                del self._vocab[term]
        self._pack_terms.remove(ordinal)
        slot = self._slot_of.pop(ordinal)
        self._total_len -= int(self._doc_len[slot])
        self._doc_len[slot] = 0
        self._free_slots.append(slot)
        self._live.remove(ordinal)
        self._norm_cache = None
        self._generation += 1
        if self._dense is not None:
            self._dense.remove(ordinal)
        return True

    def _rebuild_doc_terms(self) -> None:
        terms: dict[int, list[str]] = {o: [] for o in self._live}
        for term in sorted(self._vocab, key=lambda t: t.encode()):
            for o in self._vocab[term].docs:
                terms[o].append(term)
        self._doc_terms = {o: tuple(ts) for o, ts in terms.items()}

    # -- lexical search ------------------------------------------------------------------
    def _norms(self) -> npt.NDArray[np.float64]:
        """norm(d) per slot, recomputed after any add or remove (N and avgdl change)."""
        if self._norm_cache is None:
            avgdl = self._total_len / len(self._live)
            dl = self._doc_len.astype(np.float64)
            self._norm_cache = BM25_K1 * ((1.0 - BM25_B) + BM25_B * (dl / avgdl))
        return self._norm_cache

    def _lexical(self, query: str, allow: AllowSet | None) -> _Lexical:
        """The query's terms and the matching ordinals with their BM25 scores and overlap
        counts (any order); an unfiltered pass is kept for the next call on the same query."""
        last = self._last
        if allow is None and last is not None and last[:2] == (query, self._generation):
            return last[2]
        generation = self._generation
        terms, idfs, q_idf = self._query_terms(query)
        if not terms:
            empty = np.zeros(0)
            found = _Lexical(terms, idfs, q_idf, np.zeros(0, dtype=np.intp), empty, empty)
        else:
            hits, acc = self._accumulate(terms, idfs, allow, self._norms())
            matched = np.flatnonzero(hits != 0.0)  # a bool scan is ~8x faster than a float one
            ords = self._ordinal_of[matched].astype(np.intp)
            found = _Lexical(terms, idfs, q_idf, ords, acc[matched], hits[matched])
        if allow is None:
            self._last = (query, generation, found)
        return found

    def _accumulate(
        self,
        terms: list[Postings | None],
        idfs: list[float],
        allow: AllowSet | None,
        norm: npt.NDArray[np.float64],
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per slot: the number of query terms matched and the BM25 score, term at a time in
        query order (absent terms, None, are skipped)."""
        size = len(self._doc_len)
        hits = np.zeros(size, dtype=np.float64)
        acc = np.zeros(size, dtype=np.float64)
        for postings, idf in zip(terms, idfs, strict=True):
            if postings is None:
                continue
            slots, tfs, ords, tfs_k1 = postings.arrays()
            if allow is not None:
                keep = allow.keep(ords)
                slots, tfs, tfs_k1 = slots[keep], tfs[keep], tfs_k1[keep]
            hits[slots] += 1.0
            acc[slots] += idf * (tfs_k1 / (tfs + norm[slots]))
        return hits, acc

    def _fusion_lexical(
        self, found: _Lexical, cands: npt.NDArray[np.intp]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """Per candidate (docs/parity.md, "Fusion", step 5): the number of query terms it
        contains and its BM25 with the length normalisation capped at K1, document at a time,
        terms in query order. Only the candidates are scored: the streams' pass does not
        need the capped sum, and a term's postings are found by binary search."""
        hits = np.zeros(len(cands), dtype=np.float64)
        capped = np.zeros(len(cands), dtype=np.float64)
        if not found.terms or not len(cands):
            return hits, capped
        slot_of = self._slot_of
        slots = np.fromiter((slot_of[o] for o in cands.tolist()), dtype=np.intp, count=len(cands))
        cap = np.minimum(self._norms()[slots], BM25_K1)
        for postings, idf in zip(found.terms, found.idfs, strict=True):
            if postings is None:
                continue
            _, tfs, ords, tfs_k1 = postings.arrays()
            at = np.minimum(np.searchsorted(ords, cands), len(ords) - 1)
            present = ords[at] == cands
            at = at[present]
            hits[present] += 1.0
            capped[present] += idf * (tfs_k1[at] / (tfs[at] + cap[present]))
        return hits, capped

    def search_bm25(
        self, query: str, k: int, allow: Allow | None = None
    ) -> list[tuple[int, float]]:
        _checks.at_least_one("k", k)
        found = self._lexical(query, _allow(allow))
        return top_k(found.ords, found.scores, k)

    def search_overlap(
        self, query: str, k: int, allow: Allow | None = None
    ) -> list[tuple[int, float]]:
        _checks.at_least_one("k", k)
        found = self._lexical(query, _allow(allow))
        return _overlap_top(found.ords, found.scores, found.counts, k)

    def search_dense(
        self, vector: bytes, k: int, allow: Allow | None = None
    ) -> list[tuple[int, float]]:
        _checks.at_least_one("k", k)
        return self._dense_top(vector, k, _allow(allow))

    def _dense_top(self, vector: bytes, k: int, allow: AllowSet | None) -> list[tuple[int, float]]:
        query = decode(bytes(vector), self._dim)
        if self._dense is None:
            return []
        return self._dense.search(query, k, allow)

    # -- the HNSW graph (docs/parity.md, "Dense stream") -------------------------------
    def dense_graph_needed(self) -> bool:
        return self._dense is not None and self._dense.needs_graph()

    def plan_dense_graph(self) -> GraphBuild | None:
        return self._dense.plan_graph() if self._dense is not None else None

    def install_dense_graph(self, plan: object) -> bool:
        # Any object, as in the Rust kernel: one that is not this kernel's plan is another
        # index's, never installed.
        if not isinstance(plan, GraphBuild):
            return False
        return self._dense is not None and self._dense.install_graph(plan)

    def build_dense_graph(self) -> bool:
        plan = self.plan_dense_graph()
        return plan is not None and plan.build() and self.install_dense_graph(plan)

    def _set_dense_exact_max(self, n: int) -> None:
        """Test hook: lowers the exact dense threshold of this index, and the graph's with it."""
        self._set_dense_tiers(n, n, DENSE_SIGN_CANDIDATES, DENSE_SIGN_RESCORED)

    def _set_dense_tiers(
        self, exact_max: int, graph_min: int, sign_candidates: int, sign_rescored: int
    ) -> None:
        """Test hook: sets the dense search tiers' bounds (exact, sign scan, graph)."""
        if self._dense is not None:
            self._dense.set_tiers(exact_max, graph_min, sign_candidates, sign_rescored)

    def recall(
        self,
        query: str,
        limit: int,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
        allow: Allow | None = None,
        vector: bytes | None = None,
    ) -> list[tuple[int, float, int, int, int]]:
        return self.recall_gated(query, limit, 0.0, weights, depth, allow, vector)[0]

    def recall_gated(
        self,
        query: str,
        limit: int,
        lookup_ratio: float,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
        allow: Allow | None = None,
        vector: bytes | None = None,
    ) -> tuple[list[tuple[int, float, int, int, int]], bool]:
        _checks.at_least_one("k", limit)
        ws = _checks.weights(DEFAULT_WEIGHTS if weights is None else weights, 3)
        depth = _checks.at_least_one("depth", DEFAULT_DEPTH if depth is None else depth)
        ratio = _checks.lookup_ratio(lookup_ratio)
        allowed = _allow(allow)
        qvec = None if vector is None else decode(bytes(vector), self._dim).astype(np.int64)
        if (ws[0] + ws[1]) + (ws[2] if vector is not None else 0.0) == 0.0:
            return [], False
        # The query is tokenised once: the lexical streams read its present terms, the fused
        # score all of them (absent ones count in Q and T).
        found = self._lexical(query, allowed)
        # The lookup gate (docs/parity.md): BM25's two best scores from the same pass.
        gated = False
        if ratio > 0.0 and vector is not None and (ws[0] > 0.0 or ws[1] > 0.0):
            top = top_k(found.ords, found.scores, 2)
            gated = len(top) == 2 and top[0][1] >= ratio * top[1][1]
        dense: list[tuple[int, float]] = []
        if vector is not None and not gated:
            dense = self._dense_top(vector, depth, allowed)
        else:
            qvec = None
        w_dense = ws[2] if qvec is not None else 0.0
        total = (ws[0] + ws[1]) + w_dense
        streams = [
            [o for o, _ in top_k(found.ords, found.scores, depth)],
            [o for o, _ in _overlap_top(found.ords, found.scores, found.counts, depth)],
            [o for o, _ in dense],
        ]
        ranks = [{o: r for r, o in enumerate(s, 1)} for s in streams]
        # Candidates: the union of the weighted streams' top-depth (docs/parity.md, "Fusion").
        union: dict[int, None] = {}
        for stream, w in zip(streams, (ws[0], ws[1], w_dense), strict=True):
            if w != 0.0:
                union.update(dict.fromkeys(stream))
        cands = np.fromiter(union, dtype=np.intp, count=len(union))
        hits, capped = self._fusion_lexical(found, cands)
        matched = hits != 0.0
        lex = np.zeros(len(cands), dtype=np.float64)
        frac = np.zeros(len(cands), dtype=np.float64)
        if matched.any():
            lex[matched] = capped[matched] / (_K1_PLUS_1 * found.q_idf)
            frac[matched] = hits[matched] / float(len(found.idfs))
        cos = self._cosines(cands, qvec)
        # One binary64 operation at a time, elementwise: the order step 6 fixes.
        fused = (((ws[0] * lex) + (ws[1] * frac)) + (w_dense * cos)) / total
        keep = fused > 0.0
        cands, fused = cands[keep], fused[keep]
        order = np.lexsort((cands, -fused))[:limit]
        rows = [
            (o, score, ranks[0].get(o, 0), ranks[1].get(o, 0), ranks[2].get(o, 0))
            for o, score in zip(cands[order].tolist(), fused[order].tolist(), strict=True)
        ]
        return rows, gated

    def _cosines(
        self, cands: npt.NDArray[np.intp], qvec: npt.NDArray[np.int64] | None
    ) -> npt.NDArray[np.float64]:
        """Per candidate, ``dot / (DENSE_SCALE * DENSE_SCALE)`` of its vector with the query's
        when the exact integer dot is positive, else 0.0 (for a member of the dense stream's
        list, the same division as that list's score)."""
        cos = np.zeros(len(cands), dtype=np.float64)
        store = self._dense
        if qvec is None or store is None or not len(cands):
            return cos
        has, found = store.some_of(cands.tolist())
        if has.any():
            dots = found.astype(np.int64) @ qvec
            cos[has] = np.where(dots > 0, dots.astype(np.float64) / _DENSE_DIVISOR, 0.0)
        return cos

    def _query_terms(self, query: str) -> tuple[list[Postings | None], list[float], float]:
        """The query's distinct terms (postings, None when absent), their idf and the sum of
        those idf in query order; no terms when the index has no tokens."""
        n = len(self._live)
        if n == 0 or self._total_len == 0:
            return [], [], 0.0
        postings: list[Postings | None] = []
        idfs: list[float] = []
        q_idf = 0.0
        for term in dict.fromkeys(tokenize(query)):
            p = self._vocab.get(term)
            df = len(p.docs) if p is not None else 0
            idf = math.log(1.0 + ((n - df) + 0.5) / (df + 0.5))
            postings.append(p)
            idfs.append(idf)
            q_idf = q_idf + idf
        return postings, idfs, q_idf

    # -- snapshots -----------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        from memwire._kernel.pure.snapshot import dump

        return dump(self)

    @staticmethod
    def from_bytes(data: bytes | memoryview) -> BankIndex:
        from memwire._kernel.pure.snapshot import load

        return load(data)


def _allow(allow: Allow | None) -> AllowSet | None:
    return None if allow is None else as_bitmap(allow)


def _overlap_top(
    ords: npt.NDArray[np.intp],
    scores: npt.NDArray[np.float64],
    counts: npt.NDArray[np.float64],
    k: int,
) -> list[tuple[int, float]]:
    if len(ords) == 0:
        return []
    scores = scores + 0.0  # -0.0 + 0.0 == +0.0
    if len(ords) > k:
        # Only documents that may be among the k best are sorted: those with more query
        # terms than the k-th best count, and of those with as many, the best by BM25
        # (ties with the cut kept, the sort orders them exactly).
        kth = np.partition(counts, len(counts) - k)[len(counts) - k]
        above = np.flatnonzero(counts > kth)
        tie = np.flatnonzero(counts == kth)
        room = k - len(above)  # >= 1: fewer than k counts exceed the k-th best
        if len(tie) > room:
            tied = scores[tie]
            tie = tie[tied >= np.partition(tied, len(tie) - room)[len(tie) - room]]
        keep = np.concatenate((above, tie))
        ords, scores, counts = ords[keep], scores[keep], counts[keep]
    order = np.lexsort((ords, -scores, -counts))[:k]
    return [(int(o), float(c)) for o, c in zip(ords[order], counts[order], strict=True)]
