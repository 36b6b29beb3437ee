"""The served pack: one hit per family of near-duplicate memories (docs/dense.md, "The pack").

Recall's ranked rows (after the relevance floor) are read best first, down to
:data:`PACK_DEPTH` times the requested limit. Each joins the first *family* (in the order the
families were opened) whose head, its best-ranked member, it nearly duplicates; otherwise it
opens a family of its own. Two memories nearly duplicate each other when the sets of their
contents' index terms (the kernel's tokenizer: folded, stemmed, stopwords out) have a Jaccard
similarity of at least the threshold (of a long content, the terms of its first
:data:`PACK_CHARS` characters; two contents without any term, such as emoji alone, when
they are the same once case and spacing are folded). The context is left out: it says where
a memory was said, not what it says, and neighbouring turns of a conversation share most of
theirs (compared with it, LoCoMo dev lost 2.7 points of R@10 to folded neighbours at 0.8).
Families are served in the order of their heads, one hit each: the head, or with
``prefer_newest`` the member with the newest ``created_at`` (ties: the later ordinal, i.e.
retained later), which takes the head's place. Without ``prefer_newest`` the walk stops once
``limit`` families are open (later rows could not change what is served).

The rule reads the kernel's rows, which are bit-identical across kernels, and the kernel's
tokens, which are too; it runs here, in the shell, once for both, and compares integers
(``|A & B| * DEN >= NUM * |A | B|``, the threshold read as the exact fraction NUM/DEN of the
decimal it is written as, so 0.8 means 4/5 and a Jaccard of exactly 4/5 reaches it), so both
backends serve the same pack.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Generic, Protocol, TypeVar

__all__ = [
    "PACK_CHARS",
    "PACK_DEPTH",
    "TERMS_CACHED",
    "TERMS_CACHED_WORDS",
    "Member",
    "Members",
    "TermCache",
    "member",
    "near_duplicate",
    "pack",
]

Row = tuple[int, float, int, int, int]  # ordinal, fused, bm25 rank, overlap rank, dense rank

T = TypeVar("T", bound="Stored")

PACK_DEPTH = 3  # rows read per requested hit: room to refill what the families fold away
# The part of a content the pack compares: tokenizing whole pasted logs cost BEAM's recalls
# 1.9 ms of CPU each (limit 20), its first 2,000 characters 0.7 ms.
PACK_CHARS = 2000
# What a bank's TermCache keeps: tokenizing ~30 rows cost a quarter of a recall's non-HNSW
# instructions at 100k. Memories and their terms both bound it: about 120 bytes a term (the
# set's slot and the string), so 50,000 terms are about 6 MB (2,048 memories of 24 terms, the
# mean of the dense_speed corpus; fewer long ones).
TERMS_CACHED = 2048
TERMS_CACHED_WORDS = 50_000


@dataclass(frozen=True, slots=True)
class Member:
    """What the pack knows of a candidate: its terms, how new it is, and for a content without
    any term its folded text."""

    terms: frozenset[str]
    newness: tuple[str, int]  # (created_at as fixed-width UTC text, ordinal)
    folded: str = ""


def near_duplicate(a: Member, b: Member, threshold: Fraction) -> bool:
    """Term sets with a Jaccard similarity >= ``threshold`` (> 0); two contents without terms
    when their folded texts are the same."""
    return _near_duplicate(a, b, threshold.numerator, threshold.denominator)


def _near_duplicate(a: Member, b: Member, num: int, den: int) -> bool:
    """:func:`near_duplicate` with the threshold as ``num / den`` (pack's inner loop)."""
    small, large = len(a.terms), len(b.terms)
    if small > large:
        small, large = large, small
    if large == 0:
        return a.folded == b.folded
    # |A & B| <= small and |A | B| >= large: most pairs of different sizes stop here.
    if small * den < num * large:
        return False
    inter = len(a.terms & b.terms)
    return inter * den >= num * (small + large - inter)


@functools.lru_cache(maxsize=64)
def _exact(threshold: float) -> tuple[int, int]:
    """The threshold as the exact fraction of the decimal it is written as (0.8 is 4/5)."""
    exact = Fraction(repr(float(threshold)))
    return exact.numerator, exact.denominator


class Stored(Protocol):
    """The fields of a stored memory the pack reads (``memwire.store.protocol.Row`` has them)."""

    @property
    def content(self) -> str: ...
    @property
    def created_at(self) -> str: ...


Terms = tuple[frozenset[str], str]  # a content's terms, and its folded text when it has none


def terms_of(content: str, tokenize: Callable[[str], list[str]]) -> Terms:
    terms = frozenset(tokenize(content[:PACK_CHARS]))
    return terms, "" if terms else " ".join(content.casefold().split())


def member(ordinal: int, row: Stored, tokenize: Callable[[str], list[str]]) -> Member:
    """The pack's view of a stored memory (``tokenize``: the kernel's)."""
    terms, folded = terms_of(row.content, tokenize)
    return Member(terms, (row.created_at, ordinal), folded)


class TermCache:
    """One bank's recently packed memories' :data:`Terms` by ordinal, least recently used
    dropped past ``size`` memories or ``words`` terms in all. A memory's content never changes
    under its ordinal and ordinals are never reused, so additions cannot make an entry wrong;
    removals drop theirs (to free the room), and the bank's state replaces the whole cache when
    it reloads or is deleted. Shared by concurrent recalls under the bank's read lock: a lock
    of its own guards it."""

    __slots__ = ("_entries", "_lock", "_size", "_words", "words")

    def __init__(self, size: int = TERMS_CACHED, words: int = TERMS_CACHED_WORDS) -> None:
        self._entries: OrderedDict[int, Terms] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self._words = words
        self.words = 0  # terms held

    def __len__(self) -> int:
        return len(self._entries)

    def terms(self, ordinal: int, content: str, tokenize: Callable[[str], list[str]]) -> Terms:
        with self._lock:
            found = self._entries.get(ordinal)
            if found is not None:
                self._entries.move_to_end(ordinal)
                return found
        made = terms_of(content, tokenize)  # outside the lock: the kernel call is the cost
        with self._lock:
            old = self._entries.pop(ordinal, None)  # a concurrent recall's, the same terms
            self.words += len(made[0]) - (0 if old is None else len(old[0]))
            self._entries[ordinal] = made
            while len(self._entries) > self._size or self.words > self._words:
                self.words -= len(self._entries.popitem(last=False)[1][0])
        return made

    def removed(self, ordinals: Iterable[int]) -> None:
        with self._lock:
            for ordinal in ordinals:
                gone = self._entries.pop(ordinal, None)
                if gone is not None:
                    self.words -= len(gone[0])


class Lookup(Protocol):
    def get(self, ordinal: int, /) -> Member | None: ...


class Members(Generic[T]):
    """The candidates of one recall, read from the store ``chunk`` rows at a time and
    tokenized when the pack first reaches them, so a pack that fills early reads little."""

    def __init__(
        self,
        rows: Sequence[Row],
        chunk: int,
        fetch: Callable[[list[int]], Mapping[int, T]],
        tokenize: Callable[[str], list[str]],
        cache: TermCache | None = None,
    ) -> None:
        self._order = [r[0] for r in rows]
        self._chunk = max(1, chunk)
        self._fetch = fetch
        self._tokenize = tokenize
        self._cache = cache  # the bank's, for the live index (not for an as_of one)
        self._read = 0  # rows[:_read] have been fetched
        self._asked: set[int] = set()  # their ordinals (a memory deleted meanwhile is not found)
        self.found: dict[int, T] = {}
        self._members: dict[int, Member | None] = {}

    def get(self, ordinal: int, /) -> Member | None:
        if ordinal not in self._members:
            while ordinal not in self._asked and self._read < len(self._order):
                batch = self._order[self._read : self._read + self._chunk]
                self._read += len(batch)
                self._asked.update(batch)
                self.found.update(self._fetch(batch))
            self._members[ordinal] = self._member(ordinal)
        return self._members[ordinal]

    def _member(self, ordinal: int) -> Member | None:
        row = self.found.get(ordinal)
        if row is None:
            return None
        if self._cache is None:
            return member(ordinal, row, self._tokenize)
        terms, folded = self._cache.terms(ordinal, row.content, self._tokenize)
        return Member(terms, (row.created_at, ordinal), folded)


def pack(
    rows: Sequence[Row],
    limit: int,
    members: Lookup,
    threshold: float,
    prefer_newest: bool,
) -> list[Row]:
    """At most ``limit`` of ``rows`` (best first), one per family of near-duplicates.

    ``members``: the candidates by ordinal (a row without one, e.g. deleted meanwhile, is
    skipped); ``threshold`` in (0, 1].
    """
    num, den = _exact(threshold)  # the decimal as written: 0.8 is 4/5
    heads: list[tuple[Row, Member]] = []
    families: list[list[tuple[Row, Member]]] = []
    for row in rows[: limit * PACK_DEPTH]:
        if len(heads) == limit and not prefer_newest:
            break  # later rows could only join a family or open one past the limit
        mine = members.get(row[0])
        if mine is None:
            continue
        for (_, head), family in zip(heads, families, strict=True):
            if _near_duplicate(head, mine, num, den):
                family.append((row, mine))
                break
        else:
            heads.append((row, mine))
            families.append([(row, mine)])
    if not prefer_newest:
        return [row for row, _ in heads]
    return [max(f, key=lambda pair: pair[1].newness)[0] for f in families[:limit]]
