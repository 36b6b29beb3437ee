"""The relevance floor and the dense rescue (memory/relevance.py): the rule on made-up rows, then
through Memory on both kernels, which must return the same hits bit for bit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from backends import require
from dense_support import NOTES
from memwire import Memory
from memwire.config import DEFAULT_MIN_SCORE
from memwire.memory.relevance import (
    RESCUE_AT,
    RESCUE_CROWD,
    RESCUE_DEPTH,
    RESCUE_MARGIN,
    RESCUE_REFERENCE,
    judge,
)

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
