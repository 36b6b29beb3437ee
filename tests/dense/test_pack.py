"""The served pack (memory/pack.py): the rule on made-up rows, then through Memory on both
kernels, which must serve the same pack bit for bit; the config keys and per-call options."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path

import pytest
from backends import require
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire import Memory
from memwire._kernel.contract import Kernel
from memwire.config import DEFAULT_NEAR_DUPLICATE, DEFAULT_PREFER_NEWEST
from memwire.errors import InvalidInputError
from memwire.memory.pack import (
    PACK_CHARS,
    PACK_DEPTH,
    Member,
    Members,
    TermCache,
    member,
    near_duplicate,
    pack,
)

Row = tuple[int, float, int, int, int]


@dataclass(frozen=True)
class _Stored:
    content: str
    created_at: str = "2026-01-01T00:00:00.000000Z"


def _member(words: str, ordinal: int, day: int = 1) -> Member:
    return Member(frozenset(words.split()), (f"2026-01-{day:02d}T00:00:00.000000Z", ordinal))


def pack_threshold(value: float) -> Fraction:
    """The threshold as pack() reads it."""
    return Fraction(repr(value))


def _rows(n: int) -> list[Row]:
    return [(i, 1.0 - i / 100, i + 1, i + 1, 0) for i in range(n)]


def _ords(rows: Sequence[Row]) -> list[int]:
    return [r[0] for r in rows]


# -- the rule ---------------------------------------------------------------------------------


def test_the_threshold_is_the_decimal_as_written() -> None:
    a, b = _member("a b c d e", 0), _member("a b c d f", 1)  # Jaccard 4/6
    c = _member("a b c d e f", 2)  # with a: 5/6
    assert not near_duplicate(a, b, pack_threshold(0.7))
    assert near_duplicate(a, b, pack_threshold(4 / 6))
    four_fifths = _member("a b c d", 3), _member("a b c d e", 4)
    assert near_duplicate(*four_fifths, pack_threshold(0.8))  # 0.8 is 4/5, not binary64's value
    assert not near_duplicate(*four_fifths, pack_threshold(0.81))
    assert near_duplicate(a, c, pack_threshold(0.8))


def test_the_documented_examples_at_the_default_threshold(kernel: Kernel) -> None:
    """docs/dense.md, "The pack": rewordings fold, a changed value does not."""

    def one(text: str, ordinal: int) -> Member:
        return member(ordinal, _Stored(text), kernel.tokenize)

    threshold = pack_threshold(DEFAULT_NEAR_DUPLICATE)
    base = one("The billing API listens on port 8080.", 0)
    assert near_duplicate(
        base, one("the billing api listens on port 8080 (confirmed)", 1), threshold
    )
    assert near_duplicate(base, one("THE BILLING API  listens on port 8080.", 2), threshold)
    assert not near_duplicate(base, one("The billing API listens on port 9090.", 3), threshold)


def test_a_long_content_is_compared_by_its_beginning(kernel: Kernel) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    assert len(head) > PACK_CHARS
    a = member(0, _Stored(head + " alpha beta gamma delta"), kernel.tokenize)
    b = member(1, _Stored(head + " something else entirely"), kernel.tokenize)
    assert a.terms == b.terms and len(a.terms) < 400
    assert near_duplicate(a, b, pack_threshold(1.0))


def test_the_same_text_is_a_duplicate_even_without_terms() -> None:
    empty_a, empty_b = Member(frozenset(), ("t", 0), "🙂"), Member(frozenset(), ("t", 1), "🙂")
    other = Member(frozenset(), ("t", 2), "🎉")
    assert near_duplicate(empty_a, empty_b, pack_threshold(1.0))
    assert not near_duplicate(empty_a, other, pack_threshold(0.01))


def test_duplicates_fold_into_their_best_ranked_and_the_pack_refills() -> None:
    members = {
        0: _member("api port 8080", 0),
        1: _member("api port 8080", 1),
        2: _member("deploy friday", 2),
        3: _member("api port 8080 now", 3),  # 3/4 with 0
        4: _member("database backup", 4),
    }
    assert _ords(pack(_rows(5), 3, members, 0.75, False)) == [0, 2, 4]
    assert _ords(pack(_rows(5), 3, members, 0.8, False)) == [0, 2, 3]
    assert _ords(pack(_rows(5), 10, members, 1.0, False)) == [0, 2, 3, 4]


def test_prefer_newest_serves_the_newest_member_in_the_heads_place() -> None:
    members = {
        0: _member("api port 8080", 0, day=1),
        1: _member("deploy friday", 1, day=9),
        2: _member("api port 8080", 2, day=5),
        3: _member("api port 8080", 3, day=3),
    }
    assert _ords(pack(_rows(4), 10, members, 0.9, True)) == [2, 1]
    assert _ords(pack(_rows(4), 10, members, 0.9, False)) == [0, 1]
    # Same created_at: the later ordinal (retained later) is the newer.
    tied = {i: _member("same words", i, day=1) for i in range(3)}
    assert _ords(pack(_rows(3), 10, tied, 0.9, True)) == [2]


def test_candidates_are_read_a_chunk_at_a_time_and_only_as_far_as_needed(kernel: Kernel) -> None:
    stored = {i: _Stored(f"note {i} about topic{i}") for i in range(30)}
    stored[1] = _Stored("note 0 about topic0")  # folds into 0
    asked: list[list[int]] = []

    def fetch(ordinals: list[int]) -> dict[int, _Stored]:
        asked.append(ordinals)
        return {o: stored[o] for o in ordinals if o != 3}  # 3 was deleted meanwhile

    candidates = Members(_rows(30), 3, fetch, kernel.tokenize)
    assert _ords(pack(_rows(30), 3, candidates, 0.8, False)) == [0, 2, 4]
    assert asked == [[0, 1, 2], [3, 4, 5]]
    assert set(candidates.found) == {0, 1, 2, 4, 5}
    asked.clear()
    candidates = Members(_rows(30), 3, fetch, kernel.tokenize)
    assert _ords(pack(_rows(30), 3, candidates, 0.8, True)) == [1, 2, 4]  # 1 is newer than 0
    assert [o for chunk in asked for o in chunk] == list(range(3 * PACK_DEPTH))


def test_cached_terms_are_the_members_terms_and_the_cache_is_bounded(kernel: Kernel) -> None:
    long = " ".join(f"topic{i}" for i in range(PACK_CHARS // 4))  # terms past the cap too
    stored = {
        i: _Stored(text)
        for i, text in enumerate(["note about topic0", "\U0001f600 \U0001f600", "", long, "a b"])
    }
    cache = TermCache(size=3)
    calls: list[str] = []

    def tokenize(text: str) -> list[str]:
        calls.append(text)
        return kernel.tokenize(text)

    for ordinal in (0, 1, 2, 3, 4, 3):
        terms, folded = cache.terms(ordinal, stored[ordinal].content, tokenize)
        plain = member(ordinal, stored[ordinal], kernel.tokenize)
        assert (terms, folded) == (plain.terms, plain.folded)
    assert len(calls) == 5 and len(cache) == 3  # the second 3 was cached; 0 and 1 dropped
    cache.terms(0, stored[0].content, tokenize)
    assert len(calls) == 6  # 0 was dropped (least recently used): tokenized again
    sizes = {o: len(kernel.tokenize(stored[o].content[:PACK_CHARS])) for o in stored}
    assert cache.words == sizes[4] + sizes[3] + sizes[0]
    cache.removed([0, 3, 99])
    assert len(cache) == 1 and cache.words == sizes[4]
    few = TermCache(size=10, words=sizes[0] + sizes[4])  # the terms bound the cache too
    for ordinal in (0, 4, 3):
        few.terms(ordinal, stored[ordinal].content, kernel.tokenize)
    assert len(few) == 0 and few.words == 0  # 3 alone has more terms than the bound
    for ordinal in (0, 4, 1):
        few.terms(ordinal, stored[ordinal].content, kernel.tokenize)
    assert len(few) == 3 and few.words == sizes[0] + sizes[4]
    rows = _rows(5)
    fetch = {o: stored[o] for o in stored}.__getitem__

    def fetch_all(ordinals: list[int]) -> dict[int, _Stored]:
        return {o: fetch(o) for o in ordinals}

    for near in (0.5, 0.8, 1.0):
        for newest in (False, True):
            with_cache = Members(rows, 2, fetch_all, kernel.tokenize, cache)
            without = Members(rows, 2, fetch_all, kernel.tokenize)
            assert pack(rows, 3, with_cache, near, newest) == pack(rows, 3, without, near, newest)


def test_rows_without_a_stored_memory_are_skipped() -> None:
    members = {0: _member("a b", 0), 2: _member("c d", 2)}
    assert _ords(pack(_rows(3), 10, members, 0.5, False)) == [0, 2]


def test_the_pack_reads_only_its_depth() -> None:
    n = 2 * PACK_DEPTH + 2
    members = {i: _member("same words", i) for i in range(n - 1)}
    members[n - 1] = _member("other", n - 1)
    assert _ords(pack(_rows(n), 2, members, 0.9, False)) == [0]  # "other" lies past 2 * depth


_WORDS = st.lists(st.sampled_from("abcdef"), min_size=0, max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(_WORDS, min_size=0, max_size=14),
    days=st.lists(st.integers(1, 28), min_size=14, max_size=14),
    limit=st.integers(1, 6),
    threshold=st.sampled_from([0.25, 0.5, 0.6, 0.75, 0.8, 1.0]),
)
def test_pack_properties(
    texts: list[list[str]], days: list[int], limit: int, threshold: float
) -> None:
    members = {i: _member(" ".join(ws), i, days[i]) for i, ws in enumerate(texts)}
    rows = _rows(len(texts))
    exact = pack_threshold(threshold)
    plain = pack(rows, limit, members, threshold, False)
    newest = pack(rows, limit, members, threshold, True)
    window = rows[: limit * PACK_DEPTH]
    # At most `limit` hits, in rank order, no two of them near-duplicates.
    assert len(plain) <= limit
    assert _ords(plain) == sorted(_ords(plain))
    for i, a in enumerate(plain):
        for b in plain[i + 1 :]:
            assert not near_duplicate(members[a[0]], members[b[0]], exact)
    # Nothing is lost that the limit had room for: every row of the window left out nearly
    # duplicates a served hit ranked above it.
    if len(plain) < limit:
        for row in window:
            if row not in plain:
                assert any(
                    near_duplicate(members[h[0]], members[row[0]], exact)
                    for h in plain
                    if h[0] < row[0]
                )
    # prefer_newest serves as many families, each by a member at least as new as its head,
    # that nearly duplicates the head.
    assert len(newest) == len(plain)
    for head, served in zip(plain, newest, strict=True):
        assert members[served[0]].newness >= members[head[0]].newness
        assert served == head or near_duplicate(members[head[0]], members[served[0]], exact)
    # A threshold no pair reaches (distinct texts, all different terms) changes nothing.
    distinct = {i: _member(f"w{i}", i) for i in range(len(texts))}
    assert pack(rows, limit, distinct, threshold, True) == rows[:limit]


# -- through Memory, on both kernels ------------------------------------------------------------

PORT_NOTES = [
    "the billing API listens on port 8080",
    "The billing API listens on port 8080.",
    "the billing api listens on port 8080 (confirmed)",
    "the staging database runs on port 5433",
    "the billing API moved: it listens on port 9090 now",
]
QUERY = "which port does the billing API listen on"


def _day(n: int) -> datetime:
    return datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(days=n)


def _fill(memory: Memory, bank: str = "default") -> list[str]:
    return memory.retain_many(
        [{"content": text, "created_at": _day(i)} for i, text in enumerate(PORT_NOTES)], bank=bank
    )


def test_recall_serves_one_hit_per_family_by_default(mem: Memory) -> None:
    ids = _fill(mem)
    everything = mem.recall(QUERY, min_score=0, near_duplicate=0)
    assert {h.id for h in everything} == set(ids)
    served = mem.recall(QUERY, min_score=0)
    assert DEFAULT_NEAR_DUPLICATE > 0 and not DEFAULT_PREFER_NEWEST
    # The three wordings of 8080 fold into the best-ranked of them; the rest keep their order.
    wordings = {ids[0], ids[1], ids[2]}
    assert len([h for h in served if h.id in wordings]) == 1
    assert [h.id for h in served if h.id not in wordings] == [
        h.id for h in everything if h.id not in wordings
    ]
    assert served[0].id == everything[0].id


def test_the_pack_refills_up_to_the_limit(mem: Memory) -> None:
    ids = _fill(mem)
    folded = mem.recall(QUERY, min_score=0, limit=3)
    assert len(folded) == 3
    assert len({h.id for h in folded} & {ids[0], ids[1], ids[2]}) == 1
    plain = mem.recall(QUERY, min_score=0, limit=3, near_duplicate=0)
    assert len(plain) == 3


def test_prefer_newest_per_call_and_per_bank(mem: Memory) -> None:
    ids = _fill(mem)
    # A loose threshold puts the 9090 update in the 8080 family; its newest member is served.
    loose = mem.recall(QUERY, min_score=0, near_duplicate=0.5)
    newest = mem.recall(QUERY, min_score=0, near_duplicate=0.5, prefer_newest=True)
    assert ids[4] not in [h.id for h in loose][:1]
    assert newest[0].id == ids[4]
    assert ids[0] not in {h.id for h in newest}
    mem.set_config("default", {"near_duplicate": 0.5, "prefer_newest": True})
    assert [h.id for h in mem.recall(QUERY, min_score=0)] == [h.id for h in newest]
    assert [h.id for h in mem.recall(QUERY, min_score=0, prefer_newest=False)] == [
        h.id for h in loose
    ]
    mem.set_config("default", {"near_duplicate": 0})  # a bank can turn the pack off
    assert len(mem.recall(QUERY, min_score=0)) == len(PORT_NOTES)


def _served(memory: Memory, **options: object) -> list[tuple[str, str, float]]:
    hits = memory.recall(QUERY, min_score=0, **options)  # type: ignore[arg-type]
    return [(h.id, h.content, h.score) for h in hits]


def test_a_cached_recall_serves_what_an_uncached_one_does(db_path: Path, backend: str) -> None:
    options: list[dict[str, object]] = [
        {},
        {"near_duplicate": 0.5},
        {"near_duplicate": 0.5, "prefer_newest": True},
        {"near_duplicate": 1.0, "prefer_newest": True},
    ]
    with Memory(db_path, backend=backend) as warm:
        ids = _fill(warm)
        warm.retain("the billing API listens on port 8080", bank="other")  # a bank of its own
        before = [_served(warm, **o) for o in options]
        cache = warm._banks["default"].terms
        assert len(cache) == len(PORT_NOTES)  # every candidate's terms kept
        warm.forget(ids[1])
        updated = warm.update(ids[2], content="the billing api answers on port 8080 (confirmed)")
        warm.retain("the billing API listens on port 9090 since May", supersedes=[ids[4]])
        warm.recall(QUERY, min_score=0, as_of=_day(30))  # its own index: not the bank's cache
        assert len(cache) == len(PORT_NOTES) - 3  # the removed ones dropped, nothing added
        after = [_served(warm, **o) for o in options]
        assert updated in {i for hits in after for i, _, _ in hits}
        assert after != before
        with Memory(db_path, backend=backend) as cold:  # another process: nothing cached
            assert [_served(cold, **o) for o in options] == after
            assert len(cold._banks["default"].terms) > 0
        assert warm.delete_bank("default")
        assert warm._banks["default"].terms is not cache and not warm._banks["default"].terms
        assert [h.content for h in warm.recall(QUERY, min_score=0, bank="other")] == [
            "the billing API listens on port 8080"
        ]


def test_both_kernels_serve_the_same_pack(tmp_path: Path) -> None:
    served = []
    for backend in ("rust", "python"):
        require(backend)
        with Memory(tmp_path / f"{backend}.db", backend=backend) as memory:
            ids = _fill(memory)
            rank = {memory_id: i for i, memory_id in enumerate(ids)}
            for near, newest in ((0.0, False), (0.5, False), (0.5, True), (0.8, True)):
                hits = memory.recall(QUERY, min_score=0, near_duplicate=near, prefer_newest=newest)
                served.append((backend, near, newest, [(rank[h.id], h.score) for h in hits]))
    half = len(served) // 2
    assert [s[1:] for s in served[:half]] == [s[1:] for s in served[half:]]


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf, True, "0.8", [0.8]])
def test_near_duplicate_is_validated(mem: Memory, bad: object) -> None:
    mem.retain("a note")
    with pytest.raises(InvalidInputError, match="near_duplicate"):
        mem.set_config("default", {"near_duplicate": bad})
    with pytest.raises(InvalidInputError, match="near_duplicate"):
        mem.recall("a note", near_duplicate=bad)  # type: ignore[arg-type]
    assert "near_duplicate" not in mem.get_config()


@pytest.mark.parametrize("bad", [1, 0, "true", None])
def test_prefer_newest_is_validated(mem: Memory, bad: object) -> None:
    mem.retain("a note")
    if bad is not None:  # None removes a key, as for every key
        with pytest.raises(InvalidInputError, match="prefer_newest"):
            mem.set_config("default", {"prefer_newest": bad})
        with pytest.raises(InvalidInputError, match="prefer_newest"):
            mem.recall("a note", prefer_newest=bad)  # type: ignore[arg-type]
    assert "prefer_newest" not in mem.get_config()
