"""The relevance floor and the dense rescue (memory/relevance.py): the rule on made-up rows, then
through Memory on both kernels, which must return the same hits bit for bit.

Rows without an embedder id (or with one the rescue has no calibration for) get
:data:`UNCALIBRATED`, the lead alone; the calibrated rule (a close neighbour, a far crowd) has
its own tests below."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from backends import require
from dense_support import NOTES
from memwire import Memory
from memwire.config import DEFAULT_MIN_SCORE
from memwire.embed import minilm, static
from memwire.memory.relevance import (
    CALIBRATION,
    RESCUE_AT,
    RESCUE_CROWD,
    RESCUE_DEPTH,
    RESCUE_REFERENCE,
    UNCALIBRATED,
    Calibration,
    calibration,
    judge,
)

RESCUE_MARGIN = UNCALIBRATED.margin

SHARE = 0.5 / 1.7  # the default weights' dense share


def _crowd(n: int, cos: float, first_rank: int) -> list[tuple[int, float, int, int, int]]:
    """``n`` dense-only rows of cosine ``cos`` at dense ranks ``first_rank`` on."""
    return [(100 + i, SHARE * cos, 0, 0, first_rank + i) for i in range(n)]


def _lexical(n: int, score: float) -> list[tuple[int, float, int, int, int]]:
    return [(200 + i, score - i * 0.01, i + 1, i + 1, 0) for i in range(n)]


def _ords(rows: Sequence[tuple[int, float, int, int, int]]) -> list[int]:
    return [r[0] for r in rows]


def test_the_floor_alone_drops_what_is_below_it() -> None:
    rows = _lexical(3, 0.4) + _crowd(RESCUE_CROWD, 0.6, 1)
    assert _ords(judge(rows, 0.395, SHARE, True)) == [200]
    assert judge(rows, 0.0, SHARE, True) == rows  # a flat crowd is never rescued
    assert judge(rows, 0.5, 0.0, True) == []  # no query vector: the floor only


def test_a_standout_neighbour_is_kept_after_the_first_hits() -> None:
    standout = (7, SHARE * (0.6 + RESCUE_MARGIN), 0, 0, 1)
    rows = [*_lexical(4, 0.5), standout, *_crowd(RESCUE_CROWD, 0.6, 2)]
    got = judge(rows, 0.45, SHARE, True)
    assert _ords(got) == [200, 201, 7, 202, 203]
    assert got.index(standout) == RESCUE_AT
    # a hair less of a lead is the crowd
    weaker = (7, SHARE * (0.6 + RESCUE_MARGIN) - 1e-9, 0, 0, 1)
    rows = sorted([weaker, *rows[:4], *rows[5:]], key=lambda r: (-r[1], r[0]))  # best first
    assert 7 not in _ords(judge(rows, 0.45, SHARE, True))


def test_the_walk_passes_lexical_hits_and_stops_at_the_first_crowd_member() -> None:
    high = 0.6 + RESCUE_MARGIN + 0.1
    crowd = _crowd(RESCUE_CROWD, 0.6, 4)
    lexical = (2, 0.4, 1, 1, 2)  # in the lexical lists: ranked by its own score, walked past
    got = judge(
        [lexical, (1, SHARE * high, 0, 0, 1), (3, SHARE * high, 0, 0, 3), *crowd], 0.45, SHARE, True
    )
    assert _ords(got) == [1, 3]
    got = judge([(1, SHARE * 0.6, 0, 0, 1), (3, SHARE * high, 0, 0, 3), *crowd], 0.45, SHARE, True)
    assert got == []  # the first dense-only neighbour is the crowd: the walk ends there
    assert RESCUE_DEPTH == 3
    beyond = (4, SHARE * high, 0, 0, RESCUE_DEPTH + 1)
    assert judge([beyond, *_crowd(RESCUE_CROWD, 0.6, 5)], 0.45, SHARE, True) == []


def test_no_rescue_without_a_crowd_to_compare_or_every_candidate() -> None:
    standout = (7, SHARE * 0.95, 0, 0, 1)
    few = [standout, *_crowd(RESCUE_CROWD - 2, 0.3, 2)]
    assert judge(few, 0.5, SHARE, True) == []  # too few neighbours to call it a standout
    many = [standout, *_crowd(RESCUE_CROWD, 0.3, 2)]
    assert _ords(judge(many, 0.5, SHARE, True)) == [7]
    assert judge(many, 0.5, SHARE, False) == []  # rows cut short: no rescue
    assert RESCUE_REFERENCE < RESCUE_CROWD


# -- the calibrated rule: a close neighbour and a far crowd ---------------------------------

HALF = 0.5  # a dense share that keeps dyadic cosines exact: fused / HALF is the cosine again


def _rows(best: float, level: float, share: float = HALF) -> list[tuple[int, float, int, int, int]]:
    """A dense-only neighbour of cosine ``best`` at dense rank 1 over a crowd of cosine
    ``level``, behind one lexical hit that clears the floor."""
    crowd = [(100 + i, share * level, 0, 0, 2 + i) for i in range(RESCUE_CROWD)]
    return [(200, 0.75, 1, 1, 0), (7, share * best, 0, 0, 1), *crowd]


def test_a_calibrated_neighbour_must_be_close_lead_and_have_a_far_crowd(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(CALIBRATION, "dyadic", Calibration(cosine=0.375, margin=0.25, crowd=0.25))
    lexical = [(200, 0.75, 1, 1, 0)]

    def kept(best: float, level: float, embedder: str | None = "dyadic") -> list[int]:
        return _ords(judge(_rows(best, level), 0.5, HALF, True, embedder))

    # Each bound is reached exactly (dyadic values: no rounding anywhere).
    assert kept(0.5, 0.25) == [200, 7]  # lead 0.25, level 0.25
    assert kept(0.375, 0.125) == [200, 7]  # cosine 0.375
    assert kept(0.5 - 2**-20, 0.25) == [200]  # too little lead
    assert kept(0.375 - 2**-20, 0.0625) == [200]  # not close enough
    assert kept(0.75, 0.25 + 2**-20) == [200]  # the crowd is close
    assert judge(_rows(0.75, 0.25 + 2**-20), 0.5, HALF, True, "dyadic") == lexical
    # Another embedder, or none, reads the same rows with the lead alone.
    assert calibration("a user's own") == calibration(None) == UNCALIBRATED
    assert kept(0.375, 0.25, "a user's own") == kept(0.375, 0.25, None) == [200, 7]
    assert kept(0.375, 0.26, None) == [200]  # lead 0.115 < 0.12
    assert kept(0.375, 0.25) == [200]  # calibrated: lead 0.125 < 0.25


def test_the_shipped_embedders_are_calibrated() -> None:
    # The bundled table and the [embed] tier, by the ids their banks record.
    for embedder in (static.MODEL_ID, minilm.MODEL_ID):
        cal = calibration(embedder)
        assert cal is CALIBRATION[embedder] and cal != UNCALIBRATED
        assert 0.0 < cal.cosine < 1.0 and 0.0 <= cal.margin < cal.cosine
        assert cal.cosine - cal.margin > 0.0 and 0.0 < cal.crowd < 1.0
        # A paraphrase-like neighbour over a far crowd is kept; the same over a close crowd,
        # or a neighbour that is not close, is not.
        best = cal.cosine + 0.1
        rows = _rows(best, min(cal.crowd, best - cal.margin, cal.cosine) - 0.05, SHARE)
        assert _ords(judge(rows, 0.5, SHARE, True, embedder)) == [200, 7]
        rows = _rows(0.95, cal.crowd + 0.05, SHARE)
        assert _ords(judge(rows, 0.5, SHARE, True, embedder)) == [200]
        low = cal.cosine - 0.02
        assert _ords(judge(_rows(low, low - 0.2, SHARE), 0.5, SHARE, True, embedder)) == [200]
        # In a small bank: close and ahead of the next neighbour; not either alone.
        assert 0.0 < cal.few_cosine < 1.0 and 0.0 < cal.few_margin < cal.few_cosine
        best = cal.few_cosine + 0.02
        ahead = _few(best, best - cal.few_margin - 0.02, 0.01, share=SHARE)
        assert _ords(judge(ahead, 0.5, SHARE, True, embedder)) == [200, 1]
        level = _few(best, best - cal.few_margin + 0.02, 0.01, share=SHARE)
        assert _ords(judge(level, 0.5, SHARE, True, embedder)) == [200]
        low = cal.few_cosine - 0.02
        assert _ords(judge(_few(low, 0.01, share=SHARE), 0.5, SHARE, True, embedder)) == [200]


# -- the small-bank rule: fewer dense-only neighbours than a crowd -------------------------


def _few(*cosines: float, share: float = HALF) -> list[tuple[int, float, int, int, int]]:
    """Dense-only neighbours of these cosines at dense ranks 1, 2, ... (fewer than a crowd),
    behind one lexical hit that clears the floor."""
    assert len(cosines) < RESCUE_CROWD
    alone = [(1 + i, share * c, 0, 0, 1 + i) for i, c in enumerate(cosines)]
    return [(200, 0.75, 1, 1, 0), *alone]


@pytest.fixture
def dyadic(monkeypatch: pytest.MonkeyPatch) -> str:
    """An embedder whose small-bank rule is: cosine >= 0.375, lead >= 0.125 (dyadic: exact)."""
    cal = Calibration(cosine=0.875, margin=0.5, crowd=1.0, few_cosine=0.375, few_margin=0.125)
    monkeypatch.setitem(CALIBRATION, "dyadic", cal)
    return "dyadic"


def test_a_small_bank_neighbour_must_be_close_and_lead_the_next(dyadic: str) -> None:
    def kept(*cosines: float) -> list[int]:
        return _ords(judge(_few(*cosines), 0.5, HALF, True, dyadic))

    # Each bound is reached exactly; the crowd's numbers (0.875, 0.5, 1.0) play no part.
    assert kept(0.5, 0.375, 0.3125) == [200, 1]  # lead 0.125 over the next (not rank 2)
    assert kept(0.5, 0.375 + 2**-20, 0.0625) == [200]  # too little lead
    assert kept(0.375, 0.25) == [200, 1]  # cosine 0.375
    assert kept(0.375 - 2**-20, 0.125) == [200]  # not close enough
    assert kept(0.375) == [200, 1]  # the last dense-only neighbour leads by its cosine
    assert kept(0.25) == [200]
    # The walk: rank 2 must also stand out (over rank 3), and it stops at the first that does
    # not, whatever comes after.
    assert kept(0.75, 0.5, 0.25) == [200, 1, 2]
    assert kept(0.75, 0.5, 0.4375, 0.0625) == [200, 1]
    assert kept(0.5, 0.5, 0.25) == [200]  # no lead: neither is a standout
    assert judge(_few(0.75, 0.5, 0.25), 0.5, HALF, False, dyadic) == _few()  # rows cut short


def test_a_small_bank_walk_passes_lexical_hits(dyadic: str) -> None:
    # Dense rank 2 is in a lexical list: rank 1 leads the next *dense-only* neighbour (rank 3).
    rows = [(200, 0.75, 1, 1, 0), (2, 0.6, 2, 2, 2), (1, HALF * 0.5, 0, 0, 1)]
    rows += [(3, HALF * 0.375, 0, 0, 3), (4, HALF * 0.3125, 0, 0, 4)]  # rank 3 does not lead
    assert _ords(judge(rows, 0.5, HALF, True, dyadic)) == [200, 2, 1]
    rows[3] = (3, HALF * (0.375 + 2**-20), 0, 0, 3)
    assert _ords(judge(rows, 0.5, HALF, True, dyadic)) == [200, 2]


def test_rescued_small_bank_hits_follow_the_first_hits(dyadic: str) -> None:
    lexical = _lexical(4, 0.75)
    got = judge([*lexical, *_few(0.75, 0.25)[1:]], 0.5, HALF, True, dyadic)
    assert _ords(got) == [200, 201, 1, 202, 203]
    assert got.index((1, HALF * 0.75, 0, 0, 1)) == RESCUE_AT


def test_the_crowd_rule_takes_over_at_a_crowd(dyadic: str) -> None:
    # The same standout over RESCUE_CROWD - 1 dense-only neighbours: the small-bank rule
    # keeps it; over RESCUE_CROWD, the crowd rule (cosine >= 0.875 here) does not.
    assert RESCUE_REFERENCE < RESCUE_CROWD
    crowd = [0.0625] * (RESCUE_CROWD - 2)
    assert _ords(judge(_few(0.75, *crowd), 0.5, HALF, True, dyadic)) == [200, 1]
    rows = [*_few(0.75, *crowd), (99, HALF * 0.0625, 0, 0, RESCUE_CROWD)]
    assert _ords(judge(rows, 0.5, HALF, True, dyadic)) == [200]


def test_an_uncalibrated_embedder_gets_no_small_bank_rescue() -> None:
    # Its cosine scale is unknown, and a lead over one neighbour is no crowd.
    assert UNCALIBRATED.few_cosine > 1.0
    assert _ords(judge(_few(0.99, 0.0625), 0.5, HALF, True, None)) == [200]
    assert _ords(judge(_few(0.99, 0.0625), 0.5, HALF, True, "a user's own")) == [200]


# -- through Memory, both kernels -----------------------------------------------------------

DIM = 16
TARGET = "our cat is named pixel and hates the vacuum"
QUERY = "which animal lives with us"
FLAT = "tell me something unrelated"
CROWD = [f"zq{i} kx{i} note" for i in range(RESCUE_CROWD + 4)]


class TableEmbedder:
    """Vectors by hand: the crowd sits at one cosine from QUERY, TARGET stands out, FLAT is
    equally close to every crowd member (a query with nothing relevant)."""

    id = "table"
    dim = DIM

    def embed(self, texts: Sequence[str]) -> list[list[float] | None]:
        base = [0.5] * DIM
        out: list[list[float] | None] = []
        for text in texts:
            vec = list(base)
            if text in (TARGET, QUERY):
                vec[0] += 2.0
            elif text in CROWD:
                vec[1 + CROWD.index(text) % (DIM - 1)] += 1.0
            out.append(vec)
        return out


def _recall(path: Path, backend: str, query: str, **kw: object) -> list[tuple[object, ...]]:
    with Memory(path, backend=backend, embedder=TableEmbedder()) as m:
        return [
            (h.content, h.score, h.bm25_rank, h.overlap_rank, h.dense_rank)
            for h in m.recall(query, **kw)  # type: ignore[arg-type]
        ]


def test_the_rescue_is_the_same_on_both_kernels(tmp_path: Path, backend: str) -> None:
    path = tmp_path / f"{backend}.db"
    with Memory(path, backend=backend, embedder=TableEmbedder()) as m:
        m.retain_many([TARGET, *CROWD])
        m.set_config("default", {"min_score": 0.3})  # above every dense-only score
    [hit] = _recall(path, backend, QUERY)
    assert hit[0] == TARGET and hit[1] < 0.3 and hit[2:] == (0, 0, 1)  # rescued
    assert _recall(path, backend, FLAT) == []  # a flat crowd: nothing
    assert len(_recall(path, backend, FLAT, min_score=0, limit=100)) == 1 + len(CROWD)
    other = require("python" if backend == "rust" else "rust")
    twin = tmp_path / f"{other}.db"
    with Memory(twin, backend=other, embedder=TableEmbedder()) as m:
        m.retain_many([TARGET, *CROWD])
        m.set_config("default", {"min_score": 0.3})
    for query in (QUERY, FLAT):
        for floor in (None, 0.0, 0.2):
            mine = _recall(path, backend, query, min_score=floor, limit=20)
            assert mine == _recall(twin, other, query, min_score=floor, limit=20)


def test_recall_reads_the_calibration_of_the_banks_embedder(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The crowd of CROWD sits at cosine ~0.71 from QUERY (docs in TableEmbedder), TARGET at ~1.
    path = tmp_path / f"{backend}.db"
    with Memory(path, backend=backend, embedder=TableEmbedder()) as m:
        m.retain_many([TARGET, *CROWD])
        m.set_config("default", {"min_score": 0.3})
    assert [h[0] for h in _recall(path, backend, QUERY)] == [TARGET]  # uncalibrated: the lead
    monkeypatch.setitem(CALIBRATION, TableEmbedder.id, Calibration(0.9, 0.0, 0.6))
    assert _recall(path, backend, QUERY) == []  # the crowd is too close for this embedder
    monkeypatch.setitem(CALIBRATION, TableEmbedder.id, Calibration(0.9, 0.0, 0.8))
    [hit] = _recall(path, backend, QUERY)
    assert hit[0] == TARGET and hit[2:] == (0, 0, 1)
    other = require("python" if backend == "rust" else "rust")
    twin = tmp_path / f"{other}.db"
    with Memory(twin, backend=other, embedder=TableEmbedder()) as m:
        m.retain_many([TARGET, *CROWD])
        m.set_config("default", {"min_score": 0.3})
    for floor in (None, 0.0, 0.2):
        mine = _recall(path, backend, QUERY, min_score=floor, limit=20)
        assert mine == _recall(twin, other, QUERY, min_score=floor, limit=20)


def test_nothing_relevant_returns_nothing_by_default(mem: Memory) -> None:
    assert DEFAULT_MIN_SCORE > 0
    mem.retain_many(NOTES)
    for query in ("what is the capital of France", "banana smoothie recipe"):
        assert mem.recall(query) == []
        assert mem.recall(query, min_score=0)  # the per-call floor overrides the default
        assert "No memories" in mem.reflect(query)
    [top, *_] = mem.recall("staging database port")
    assert top.content == NOTES[1] and top.score >= DEFAULT_MIN_SCORE


def _long_needle_bank(mem: Memory) -> str:
    """1,200 short notes and one long memory (about 8,000 characters) holding a unique token."""
    words = ["deploy", "staging", "database", "port", "cache"]
    words += ["queue", "worker", "retry", "budget", "review"]
    short = [
        f"{words[i % 10]} {words[(i * 7) % 10]} note {i} {words[(i * 3) % 10]}" for i in range(1200)
    ]
    pad = " ".join(words[(i * 13) % 10] for i in range(1100))
    mem.retain_many(short[:600])
    needle = mem.retain(pad + " zqxtoken42 closes the incident")
    mem.retain_many(short[600:])
    return needle


def test_a_long_memory_named_by_its_unique_token_clears_the_floor(mem: Memory) -> None:
    # Its BM25 is length-normalised far below an average memory's; the fused score must not
    # carry that under the floor (docs/parity.md, "Fusion", step 5), alone or with a word
    # other memories share.
    needle = _long_needle_bank(mem)
    for query in ("zqxtoken42", "zqxtoken42 incident", "zqxtoken42 deploy"):
        hits = mem.recall(query)
        assert hits and hits[0].id == needle, query
        assert hits[0].score >= DEFAULT_MIN_SCORE and hits[0].overlap_rank == 1
