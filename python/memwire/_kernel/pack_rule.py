"""The served pack's rule (docs/parity.md, "The relevance floor and the dense rescue", step
5), in Python.

The pure kernel's ``BankIndex.pack_order`` is this rule over its own tokenizer. The compiled
kernel's hands a walk back (None) when a walked content has no index term, since comparing
those by their case-folded text would mean re-implementing ``str.casefold``, or when the
threshold's fraction does not fit 64 bits; the shell then runs this rule over the compiled
tokenizer, which gives the same tokens. It lives outside ``memwire._kernel.pure`` so that
doing so does not load the pure kernel's tables.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from memwire._kernel.constants import PACK_CHARS, PACK_TERMS_CACHED, PACK_TERMS_CACHED_WORDS
from memwire.errors import InvalidInputError

__all__ = [
    "PackTerms",
    "Terms",
    "check",
    "check_threshold",
    "near",
    "pack_order_with",
    "terms_of",
    "walk",
]

# A content's distinct index terms, and its folded text when it has none.
Terms = tuple[frozenset[str], str]


def terms_of(content: str, tokenize: Callable[[str], list[str]]) -> Terms:
    """The terms of ``content``'s first :data:`PACK_CHARS` code points; without any, the whole
    content case-folded with its whitespace runs made single spaces."""
    terms = frozenset(tokenize(content[:PACK_CHARS]))
    return terms, "" if terms else " ".join(content.casefold().split())


class PackTerms:
    """Candidates' :data:`Terms` kept between recalls by ordinal. A content never changes
    under its ordinal and ordinals are never reused, so an entry can only be dropped, never
    wrong: the index drops a removed memory's, and the whole set is dropped when it would pass
    :data:`PACK_TERMS_CACHED` memories or :data:`PACK_TERMS_CACHED_WORDS` terms
    (native/constants.toml, ``[pack]``). Shared by concurrent recalls: a lock of its own
    guards it."""

    __slots__ = ("_by_ordinal", "_lock", "words")

    def __init__(self) -> None:
        self._by_ordinal: dict[int, Terms] = {}
        self._lock = threading.Lock()
        self.words = 0

    def __len__(self) -> int:
        return len(self._by_ordinal)

    def terms(self, ordinal: int, content: str, tokenize: Callable[[str], list[str]]) -> Terms:
        found = self._by_ordinal.get(ordinal)  # a dict read is atomic
        if found is not None:
            return found
        made = terms_of(content, tokenize)
        size = len(made[0])
        with self._lock:
            full = len(self._by_ordinal) >= PACK_TERMS_CACHED
            if full or self.words + size > PACK_TERMS_CACHED_WORDS:
                self._by_ordinal.clear()
                self.words = 0
            if size <= PACK_TERMS_CACHED_WORDS:
                old = self._by_ordinal.get(ordinal)  # a concurrent recall's, the same terms
                self.words += size - (0 if old is None else len(old[0]))
                self._by_ordinal[ordinal] = made
        return made

    def remove(self, ordinal: int) -> None:
        with self._lock:
            old = self._by_ordinal.pop(ordinal, None)
            if old is not None:
                self.words -= len(old[0])


def near(a: Terms, b: Terms, num: int, den: int) -> bool:
    """Jaccard(a, b) >= num / den; two contents without terms when their folded texts match."""
    small, large = len(a[0]), len(b[0])
    if small > large:
        small, large = large, small
    if large == 0:
        return a[1] == b[1]
    # |A & B| <= small and |A | B| >= large: most pairs of different sizes stop here.
    if small * den < num * large:
        return False
    inter = len(a[0] & b[0])
    return inter * den >= num * (small + large - inter)


def walk(
    count: int,
    member: Callable[[int], Terms],
    newness: Callable[[int], tuple[str, int]],
    limit: int,
    num: int,
    den: int,
    prefer_newest: bool,
) -> list[int]:
    """Indices of ``count`` candidates (best first; ``member(i)``: the i-th's terms, read only
    when the walk reaches it) to serve, at most ``limit``, in serving order."""
    heads: list[tuple[int, Terms]] = []
    families: list[list[int]] = []
    for i in range(count):
        if len(heads) == limit and not prefer_newest:
            break  # later candidates could only join a family or open one past the limit
        mine = member(i)
        for (_, head), family in zip(heads, families, strict=True):
            if near(head, mine, num, den):
                family.append(i)
                break
        else:
            heads.append((i, mine))
            families.append([i])
    if not prefer_newest:
        return [i for i, _ in heads]
    return [max(family, key=newness) for family in families[:limit]]


def check(contents: Sequence[str], created: Sequence[str], ordinals: Sequence[int]) -> None:
    if not len(contents) == len(created) == len(ordinals):
        raise InvalidInputError("contents, created and ordinals must have the same length")


def check_threshold(num: int, den: int) -> None:
    if not (isinstance(num, int) and isinstance(den, int)):
        raise TypeError("num and den must be integers")
    if num < 1 or den < 1 or num > den:
        raise InvalidInputError("the pack threshold num / den must be a fraction in (0, 1]")


def pack_order_with(
    tokenize: Callable[[str], list[str]],
    contents: Sequence[str],
    created: Sequence[str],
    ordinals: Sequence[int],
    limit: int,
    num: int,
    den: int,
    prefer_newest: bool,
    kept: PackTerms | None = None,
) -> list[int]:
    """The pack's choice among candidates whose terms ``tokenize`` gives (see
    ``memwire._kernel.contract.BankIndex.pack_order``), with ``kept`` terms if given."""
    check(contents, created, ordinals)
    check_threshold(num, den)

    def member(i: int) -> Terms:
        if kept is None:
            return terms_of(contents[i], tokenize)
        return kept.terms(ordinals[i], contents[i], tokenize)

    return walk(
        len(contents),
        member,
        lambda i: (created[i], ordinals[i]),
        limit,
        num,
        den,
        prefer_newest,
    )
