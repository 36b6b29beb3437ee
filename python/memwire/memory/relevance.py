"""The relevance floor and the dense rescue, applied to the kernel's fused rows (docs/dense.md,
"The relevance floor"; docs/parity.md, "The relevance floor and the dense rescue", is the
normative rule).

The floor drops hits whose fused score is below ``min_score``. A memory that shares no word with
the query can score at most ``w_dense / W`` (0.29 with the default weights), so a floor that
silences off-topic queries would also drop every paraphrase only the dense stream finds. The
rescue keeps those, under two conditions off-topic queries fail: among the dense stream's first
:data:`RESCUE_DEPTH`, walking in dense order past the hits that are in a lexical list, a hit
absent from both lexical lists is kept whatever the floor when its cosine is at least its
embedder's calibrated :class:`Calibration` ``cosine`` (each embedder has its own scale) *and*
leads the :data:`RESCUE_REFERENCE`-th such hit (in dense order, the crowd's level) by at least
its ``margin``; it is placed after the first :data:`RESCUE_AT` hits that clear the floor. The
walk stops at the first that does not qualify. Among fewer than :data:`RESCUE_CROWD` such hits
(a small bank) there is no crowd's level to read: a hit is kept when its cosine is at least
``few_cosine`` and it leads the next such hit (in dense order) by at least ``few_margin``. A
close neighbour that stands out is evidence; the best of a flat or distant crowd (what every
off-topic query gets) is not.

The rule reads only the kernel's rows, which are bit-identical across kernels, and compares
binary64 values computed one operation at a time in a fixed order (a division, then a
subtraction), so both kernels give the same hits.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from operator import itemgetter
from typing import NamedTuple

from memwire.embed import minilm, static

__all__ = [
    "CALIBRATION",
    "RESCUE_AT",
    "RESCUE_CROWD",
    "RESCUE_DEPTH",
    "RESCUE_REFERENCE",
    "UNCALIBRATED",
    "Calibration",
    "calibration",
    "judge",
]

Row = tuple[int, float, int, int, int]  # ordinal, fused, bm25 rank, overlap rank, dense rank


class Calibration(NamedTuple):
    """What makes a dense-only neighbour a standout, on one embedder's cosine scale."""

    cosine: float  # the least cosine with the query
    margin: float  # the least lead over the crowd's level (the RESCUE_REFERENCE-th's cosine)
    crowd: float  # the most the crowd's level may be: a close crowd means words would do
    # Fewer than RESCUE_CROWD dense-only neighbours (a small bank): no crowd's level to read,
    # so the least cosine and the least lead over the next dense-only neighbour (in dense
    # order; 0 when there is none). A cosine above 1 turns the small-bank rescue off.
    few_cosine: float = 2.0
    few_margin: float = 0.0


# Chosen on development data only (docs/dense.md, "The relevance floor";
# benchmarks/relevance_replay.py replays them).
RESCUE_DEPTH = 3  # dense ranks a rescue may come from
RESCUE_AT = 2  # rescued hits follow this many hits that clear the floor (ranks 3-5)
RESCUE_REFERENCE = 10  # the dense-only hit (in dense order) whose cosine is the crowd's level
RESCUE_CROWD = 30  # fewer dense-only neighbours than this: no crowd to stand out from
# By the id of the embedder that made a bank's vectors (its recorded space): each embedder puts
# unrelated text at its own cosines (docs/dense.md, "The relevance floor", has the table).
CALIBRATION: dict[str, Calibration] = {
    static.MODEL_ID: Calibration(0.30, 0.0, 0.35, few_cosine=0.28, few_margin=0.10),
    static.WORDNET_ID: Calibration(0.30, 0.0, 0.35, few_cosine=0.24, few_margin=0.08),
    minilm.MODEL_ID: Calibration(0.30, 0.0, 0.40, few_cosine=0.26, few_margin=0.05),
}
# Any other embedder (the first bundled table, a user's own): the lead alone, the rule the
# bundled table was first calibrated with (its cosine scale is unknown here).
UNCALIBRATED = Calibration(cosine=0.0, margin=0.12, crowd=1.0)


def calibration(embedder: str | None) -> Calibration:
    """The rescue's thresholds for vectors of ``embedder`` (an embedder id)."""
    if embedder is None:
        return UNCALIBRATED
    return CALIBRATION.get(embedder, UNCALIBRATED)


_dense_rank = itemgetter(4)


def _neg_score(row: Row) -> float:
    return -row[1]


def judge(
    rows: Sequence[Row],
    floor: float,
    dense_share: float,
    complete: bool,
    embedder: str | None = None,
) -> list[Row]:
    """``rows`` (the kernel's, best first) with the floor and the rescue applied.

    ``dense_share``: ``w_dense / W`` of the call (0 when the query was not embedded), so that a
    row in no lexical list has cosine ``fused / dense_share``; ``complete``: ``rows`` holds
    every candidate of the call (no rescue otherwise); ``embedder``: the id of the embedder
    that made the vectors (:func:`calibration`).
    """
    # Rows are best first (fused score descending): those that clear the floor are a prefix.
    kept = list(rows[: bisect_right(rows, -floor, key=_neg_score)])
    if dense_share <= 0.0 or not complete:
        return kept
    # Rows in no lexical list, in dense order: their cosine is fused / dense_share.
    alone = [r for r in rows if r[4] and not (r[2] or r[3])]
    alone.sort(key=_dense_rank)
    cal = calibration(embedder)
    few = len(alone) < RESCUE_CROWD
    if few:
        # A small bank: no crowd to read a level from; each neighbour must be close and lead
        # the next dense-only neighbour (in dense order) instead.
        least, margin, level = cal.few_cosine, cal.few_margin, 0.0
    else:
        least, margin = cal.cosine, cal.margin
        level = alone[RESCUE_REFERENCE - 1][1] / dense_share
        if level > cal.crowd:
            return kept  # the crowd itself is close to the query: the words had their chance
    rescued: list[Row] = []
    for rank in range(1, RESCUE_DEPTH + 1):
        # Dense ranks are distinct and ascending in ``alone``: rank r is among its first r.
        at = next((i for i, a in enumerate(alone[:rank]) if a[4] == rank), None)
        if at is None:
            continue  # in a lexical list: ranked by its fused score already
        r = alone[at]
        cosine = r[1] / dense_share
        if few:
            level = alone[at + 1][1] / dense_share if at + 1 < len(alone) else 0.0
        if cosine < least or cosine - level < margin:
            break
        rescued.append(r)
    if not rescued:
        return kept
    saved = {r[0] for r in rescued}
    kept = [r for r in kept if r[0] not in saved]
    return kept[:RESCUE_AT] + rescued + kept[RESCUE_AT:]
