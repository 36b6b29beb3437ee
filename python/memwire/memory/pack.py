"""The served pack: one hit per family of near-duplicate memories (docs/dense.md, "The pack").

Recall's ranked rows (after the relevance floor) are read best first, down to
:data:`PACK_DEPTH` times the requested limit. Each joins the first *family* (in the order the
families were opened) whose head, its best-ranked member, it nearly duplicates; otherwise it
opens a family of its own. Two memories nearly duplicate each other when their contents are
the same once case and spacing are folded, or when the sets of their contents' index terms
(the kernel's tokenizer: folded, stemmed, stopwords out) have a Jaccard similarity of at least
the threshold. The context is left out: it says where a memory was said, not what it says, and
neighbouring turns of a conversation share most of theirs (compared with it, LoCoMo dev lost
2.7 points of R@10 to folded neighbours at 0.8). Families are served in the order of their
heads, one hit each: the head, or with ``prefer_newest`` the member with the newest
``created_at`` (ties: the later ordinal, i.e. retained later), which takes the head's place.

The rule reads the kernel's rows, which are bit-identical across kernels, and the kernel's
tokens, which are too; it runs here, in the shell, once for both, and compares integers
(``|A & B| * DEN >= NUM * |A | B|``, the threshold read as the exact fraction NUM/DEN of the
decimal it is written as, so 0.8 means 4/5 and a Jaccard of exactly 4/5 reaches it), so both
backends serve the same pack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

__all__ = ["PACK_DEPTH", "Member", "members", "near_duplicate", "pack"]

Row = tuple[int, float, int, int, int]  # ordinal, fused, bm25 rank, overlap rank, dense rank

PACK_DEPTH = 3  # rows read per requested hit: room to refill what the families fold away


@dataclass(frozen=True, slots=True)
class Member:
    """What the pack knows of a candidate: its folded text, its terms, how new it is."""

    folded: str
    terms: frozenset[str]
    newness: tuple[str, int]  # (created_at as fixed-width UTC text, ordinal)


def near_duplicate(a: Member, b: Member, threshold: Fraction) -> bool:
    """Same folded text, or term sets with a Jaccard similarity >= ``threshold`` (> 0)."""
    if a.folded == b.folded:
        return True
    union = len(a.terms | b.terms)
    if union == 0:
        return False  # no terms on either side and different texts: nothing to compare
    return len(a.terms & b.terms) * threshold.denominator >= threshold.numerator * union


class Stored(Protocol):
    """The fields of a stored memory the pack reads (``memwire.store.protocol.Row`` has them)."""

    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> str: ...


def members(found: Mapping[int, Stored], tokenize: Callable[[str], list[str]]) -> dict[int, Member]:
    """The pack's view of stored memories, by ordinal (``tokenize``: the kernel's)."""
    out: dict[int, Member] = {}
    for ordinal, row in found.items():
        folded = " ".join(row.content.casefold().split())
        out[ordinal] = Member(folded, frozenset(tokenize(row.content)), (row.created_at, ordinal))
    return out


def pack(
    rows: Sequence[Row],
    limit: int,
    members: Mapping[int, Member],
    threshold: float,
    prefer_newest: bool,
) -> list[Row]:
    """At most ``limit`` of ``rows`` (best first), one per family of near-duplicates.

    ``members``: the candidates by ordinal (a row without one, e.g. deleted meanwhile, is
    skipped); ``threshold`` in (0, 1].
    """
    exact = Fraction(repr(float(threshold)))  # the decimal as written: 0.8 is 4/5
    heads: list[Row] = []
    families: list[list[Row]] = []
    for row in rows[: limit * PACK_DEPTH]:
        mine = members.get(row[0])
        if mine is None:
            continue
        for head, family in zip(heads, families, strict=True):
            if near_duplicate(members[head[0]], mine, exact):
                family.append(row)
                break
        else:
            heads.append(row)
            families.append([row])
    if not prefer_newest:
        return heads[:limit]
    return [max(f, key=lambda r: members[r[0]].newness) for f in families[:limit]]
