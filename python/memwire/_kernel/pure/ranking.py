"""Ranking primitives of the pure kernel: total order, RRF and budget trimming (docs/parity.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memwire._kernel.pure import _checks
from memwire._kernel.pure._generated import CHARS_PER_TOKEN, RRF_K, TRUNCATION_MARKER

__all__ = ["rrf", "top_k", "trim_to_budget"]


def top_k(
    ordinals: npt.NDArray[np.intp], scores: npt.NDArray[np.float64], k: int
) -> list[tuple[int, float]]:
    """The ``k`` best ``(ordinal, score)`` by ``(-score, ordinal)``, -0.0 turned into +0.0."""
    if len(ordinals) == 0:
        return []
    scores = scores + 0.0  # -0.0 + 0.0 == +0.0; everything else unchanged
    if len(ordinals) > k:
        # Keep everything that ties with the k-th best score, then order exactly.
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        ordinals, scores = ordinals[keep], scores[keep]
    order = np.lexsort((ordinals, -scores))[:k]
    return [(int(o), float(s)) for o, s in zip(ordinals[order], scores[order], strict=True)]


def rrf(streams: Sequence[Sequence[int]], weights: Sequence[float]) -> list[tuple[int, float]]:
    """Weighted reciprocal rank fusion of ranked ordinal lists (streams in declared order)."""
    ws = _checks.weights(weights, len(streams))
    fused: dict[int, float] = {}
    for stream, w in zip(streams, ws, strict=True):
        if w == 0.0:
            continue
        for rank, ordinal in enumerate(stream, 1):
            fused[ordinal] = fused.get(ordinal, 0.0) + (w / (RRF_K + rank))
    ranked = sorted(fused.items(), key=lambda item: (-(item[1] + 0.0), item[0]))
    return [(o, s + 0.0) for o, s in ranked]


def trim_to_budget(texts: Sequence[str], budget_tokens: int) -> list[tuple[int, str]]:
    """Keep texts, in rank order, within ``budget_tokens * CHARS_PER_TOKEN`` code points."""
    _checks.at_least_one("budget_tokens", budget_tokens)
    room = budget_tokens * CHARS_PER_TOKEN
    kept: list[tuple[int, str]] = []
    for i, text in enumerate(texts):
        if len(text) <= room:
            kept.append((i, text))
            room -= len(text)
        elif i == 0:
            if room > len(TRUNCATION_MARKER):
                cut = text[: room - len(TRUNCATION_MARKER)] + TRUNCATION_MARKER
            else:
                cut = text[:room]
            kept.append((0, cut))
            room -= len(cut)
    return kept
