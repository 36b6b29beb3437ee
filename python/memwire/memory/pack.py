"""The served pack: one hit per family of near-duplicate memories (docs/dense.md, "The pack").

Recall's ranked rows (after the relevance floor) are read best first, down to
:data:`PACK_DEPTH` times the requested limit. Each joins the first *family* (in the order the
families were opened) whose head, its best-ranked member, it nearly duplicates; otherwise it
opens a family of its own. Two memories nearly duplicate each other when the sets of their
contents' index terms (the kernel's tokenizer: folded, stemmed, stopwords out) have a Jaccard
similarity of at least the threshold (of a long content, the terms of its first
``PACK_CHARS`` characters; two contents without any term, such as emoji alone, when
they are the same once case and spacing are folded). The context is left out: it says where
a memory was said, not what it says, and neighbouring turns of a conversation share most of
theirs (compared with it, LoCoMo dev lost 2.7 points of R@10 to folded neighbours at 0.8).
Families are served in the order of their heads, one hit each: the head, or with
``prefer_newest`` the member with the newest ``created_at`` (ties: the later ordinal, i.e.
retained later), which takes the head's place. Without ``prefer_newest`` the walk stops once
``limit`` families are open (later rows could not change what is served).

The kernel runs the rule (``BankIndex.pack_order``, both kernels, docs/parity.md, step 5 of
"The relevance floor and the dense rescue"), off the GIL in the compiled one, and keeps the
terms of the memories it packed recently; this module reads the candidates' stored rows for
it, a chunk at a time so that a pack that fills early reads little, and turns the threshold
into the exact fraction NUM/DEN of the decimal it is written as (0.8 means 4/5, and a Jaccard
of exactly 4/5 reaches it), so both backends serve the same pack.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Protocol, TypeVar

from memwire._kernel.contract import BankIndex
from memwire._kernel.pack_rule import pack_order_with

__all__ = ["PACK_DEPTH", "packed", "threshold_fraction"]

Row = tuple[int, float, int, int, int]  # ordinal, fused, bm25 rank, overlap rank, dense rank

T = TypeVar("T", bound="Stored")

PACK_DEPTH = 3  # rows read per requested hit: room to refill what the families fold away


class Stored(Protocol):
    """The fields of a stored memory the pack reads (``memwire.store.protocol.Row`` has them)."""

    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> str: ...


@functools.lru_cache(maxsize=64)
def threshold_fraction(threshold: float) -> tuple[int, int]:
    """The threshold as the exact fraction of the decimal it is written as (0.8 is 4/5)."""
    exact = Fraction(repr(float(threshold)))
    return exact.numerator, exact.denominator


def packed(
    rows: Sequence[Row],
    limit: int,
    fetch: Callable[[list[int]], Mapping[int, T]],
    index: BankIndex,
    tokenize: Callable[[str], list[str]],
    threshold: float,
    prefer_newest: bool,
) -> tuple[list[Row], dict[int, T]]:
    """At most ``limit`` of ``rows`` (best first), one per family of near-duplicates, and the
    stored rows read for them (``fetch``: stored rows by ordinal; a row it does not find, e.g.
    deleted meanwhile, is skipped); ``index``: the one that ranked them (it keeps their terms),
    ``tokenize``: its kernel's; ``threshold`` in (0, 1].

    Rows are read ``limit`` at a time (all of them with ``prefer_newest``, which compares
    every family's members); the kernel decides once they are read, and again over more of
    them while fewer than ``limit`` families are open and rows remain.
    """
    rows = rows[: limit * PACK_DEPTH]
    num, den = threshold_fraction(threshold)
    chunk = len(rows) if prefer_newest else max(1, limit)
    found: dict[int, T] = {}
    read = 0
    while True:
        batch = [r[0] for r in rows[read : read + chunk]]
        read += len(batch)
        found.update(fetch(batch))
        present = [r for r in rows[:read] if r[0] in found]
        contents = [found[r[0]].content for r in present]
        created = [found[r[0]].created_at for r in present]
        ordinals = [r[0] for r in present]
        order = index.pack_order(contents, created, ordinals, limit, num, den, prefer_newest)
        if order is None:  # the compiled kernel's hand-back (memwire._kernel.pack_rule)
            order = pack_order_with(
                tokenize, contents, created, ordinals, limit, num, den, prefer_newest
            )
        if read >= len(rows) or len(order) >= limit:
            return [present[i] for i in order], found
