"""The served pack (memory/pack.py, the kernels' ``pack_order``): the rule on made-up
candidates, on both kernels and against each other, then through Memory on both kernels, which
must serve the same pack bit for bit; the config keys and per-call options."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from backends import require
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire import Memory
from memwire._kernel import pack_rule
from memwire._kernel.constants import PACK_CHARS, PACK_TERMS_CACHED, PACK_TERMS_CACHED_WORDS
from memwire._kernel.contract import Kernel
from memwire.config import DEFAULT_NEAR_DUPLICATE, DEFAULT_PREFER_NEWEST
from memwire.errors import InvalidInputError
from memwire.memory.pack import PACK_DEPTH, packed, threshold_fraction

Row = tuple[int, float, int, int, int]
DAY = "2026-01-01T00:00:00.000000Z"


@dataclass(frozen=True)
class _Stored:
    content: str
    created_at: str = DAY


def _day(n: int) -> datetime:
    return datetime(2026, 3, 1, tzinfo=timezone.utc) + timedelta(days=n)


def _stamp(day: int) -> str:
    return f"2026-01-{day:02d}T00:00:00.000000Z"


def _rows(n: int) -> list[Row]:
    return [(i, 1.0 - i / 100, i + 1, i + 1, 0) for i in range(n)]


def _ords(rows: Sequence[Row]) -> list[int]:
    return [r[0] for r in rows]


def _order(
    kernel: Kernel,
    texts: Sequence[str],
    limit: int,
    threshold: float,
    newest: bool = False,
    days: Sequence[int] | None = None,
) -> list[int]:
    """What ``packed`` serves of ``texts`` ranked in order (ordinal = position)."""
    stored = {
        i: _Stored(t, _stamp(days[i]) if days is not None else DAY) for i, t in enumerate(texts)
    }

    def fetch(ordinals: list[int]) -> dict[int, _Stored]:
        return {o: stored[o] for o in ordinals}

    index = kernel.BankIndex()
    rows = _rows(len(texts))
    return _ords(packed(rows, limit, fetch, index, kernel.tokenize, threshold, newest)[0])


# -- the rule ---------------------------------------------------------------------------------


def _terms(words: str) -> pack_rule.Terms:
    return frozenset(words.split()), ""


def _near(a: pack_rule.Terms, b: pack_rule.Terms, threshold: float) -> bool:
    return pack_rule.near(a, b, *threshold_fraction(threshold))


def test_the_threshold_is_the_decimal_as_written() -> None:
    a, b = _terms("a b c d e"), _terms("a b c d f")  # Jaccard 4/6
    c = _terms("a b c d e f")  # with a: 5/6
    assert threshold_fraction(0.8) == (4, 5)
    assert not _near(a, b, 0.7)
    assert _near(a, b, 4 / 6)
    four_fifths = _terms("a b c d"), _terms("a b c d e")
    assert _near(*four_fifths, 0.8)  # 0.8 is 4/5, not binary64's value
    assert not _near(*four_fifths, 0.81)
    assert _near(a, c, 0.8)


def test_the_documented_examples_at_the_default_threshold(kernel: Kernel) -> None:
    """docs/dense.md, "The pack": rewordings fold, a changed value does not."""
    base = "The billing API listens on port 8080."
    for same in (
        "the billing api listens on port 8080 (confirmed)",
        "THE BILLING API  listens on port 8080.",
    ):
        assert _order(kernel, [base, same], 5, DEFAULT_NEAR_DUPLICATE) == [0]
    changed = "The billing API listens on port 9090."
    assert _order(kernel, [base, changed], 5, DEFAULT_NEAR_DUPLICATE) == [0, 1]


def test_a_long_content_is_compared_by_its_beginning(kernel: Kernel) -> None:
    head = " ".join(f"word{i}" for i in range(400))
    assert len(head) > PACK_CHARS
    texts = [head + " alpha beta gamma delta", head + " something else entirely"]
    assert _order(kernel, texts, 5, 1.0) == [0]
    assert _order(kernel, [texts[0][PACK_CHARS:], texts[1][PACK_CHARS:]], 5, 1.0) == [0, 1]


def test_contents_without_terms_are_compared_by_their_folded_text(kernel: Kernel) -> None:
    # The compiled kernel hands these back; the shell decides them (memwire._kernel.pack_rule).
    texts = ["\U0001f642", "  \U0001f642 ", "\U0001f389", "The And", "the  and", "a note"]
    assert _order(kernel, texts, 10, 1.0) == [0, 2, 3, 5]
    assert _order(kernel, texts, 10, 0.01) == [0, 2, 3, 5]  # no terms: only the same text
    assert kernel.BankIndex().pack_order(texts[-1:], [DAY], [0], 5, 1, 1, False) == [0]


def test_duplicates_fold_into_their_best_ranked_and_the_pack_refills(kernel: Kernel) -> None:
    texts = ["api port 8080", "api port 8080", "deploy friday", "api port 8080 staging", "db"]
    assert _order(kernel, texts, 3, 0.75) == [0, 2, 4]
    assert _order(kernel, texts, 3, 0.8) == [0, 2, 3]
    assert _order(kernel, texts, 10, 1.0) == [0, 2, 3, 4]


def test_prefer_newest_serves_the_newest_member_in_the_heads_place(kernel: Kernel) -> None:
    texts = ["api port 8080", "deploy friday", "api port 8080", "api port 8080"]
    assert _order(kernel, texts, 10, 0.9, True, [1, 9, 5, 3]) == [2, 1]
    assert _order(kernel, texts, 10, 0.9, False, [1, 9, 5, 3]) == [0, 1]
    # Same created_at: the later ordinal (retained later) is the newer.
    assert _order(kernel, ["same words"] * 3, 10, 0.9, True, [1, 1, 1]) == [2]


def test_candidates_are_read_a_chunk_at_a_time_and_only_as_far_as_needed(kernel: Kernel) -> None:
    stored = {i: _Stored(f"note {i} about topic{i}") for i in range(30)}
    stored[1] = _Stored("note 0 about topic0")  # folds into 0
    asked: list[list[int]] = []

    def fetch(ordinals: list[int]) -> dict[int, _Stored]:
        asked.append(ordinals)
        return {o: stored[o] for o in ordinals if o != 3}  # 3 was deleted meanwhile

    index = kernel.BankIndex()
    rows, found = packed(_rows(30), 3, fetch, index, kernel.tokenize, 0.8, False)
    assert _ords(rows) == [0, 2, 4]
    assert asked == [[0, 1, 2], [3, 4, 5]]
    assert set(found) == {0, 1, 2, 4, 5}
    asked.clear()
    rows, found = packed(_rows(30), 3, fetch, index, kernel.tokenize, 0.8, True)
    assert _ords(rows) == [1, 2, 4]  # 1 is newer than 0 (same time, later ordinal)
    assert asked == [list(range(3 * PACK_DEPTH))]  # all at once: every family is compared


def test_the_pack_reads_only_its_depth(kernel: Kernel) -> None:
    n = 2 * PACK_DEPTH + 2
    texts = ["same words"] * (n - 1) + ["other"]
    assert _order(kernel, texts, 2, 0.9) == [0]  # "other" lies past 2 * depth


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((["a"], [DAY, DAY], [0], 1, 1, 1, False), "same length"),
        ((["a"], [DAY], [0, 1], 1, 1, 1, False), "same length"),
        ((["a"], [DAY], [0], 1, 0, 1, False), "fraction in \\(0, 1\\]"),
        ((["a"], [DAY], [0], 1, 3, 2, False), "fraction in \\(0, 1\\]"),
        ((["a"], [DAY], [0], 1, 1, 0, False), "fraction in \\(0, 1\\]"),
    ],
)
def test_bad_arguments_are_refused_alike(kernel: Kernel, args: tuple, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInputError, match=message):
        kernel.BankIndex().pack_order(*args)


def test_kept_terms_are_the_candidates_terms_and_stay_bounded(kernel: Kernel) -> None:
    """An index keeps the terms of what it packed (pack_rule.PackTerms in the pure kernel, the
    same bounds in the compiled one): warm, it serves what a fresh index serves."""
    texts = [f"note {i % 7} about topic{i} " + "filler " * (i % 40) for i in range(3000)]
    stored = {i: _Stored(t) for i, t in enumerate(texts)}
    warm = kernel.BankIndex()
    for start in range(0, len(texts), 30):
        rows = [(i, 1.0, 1, 1, 0) for i in range(start, start + 30)]
        for newest in (False, True):
            got = [
                packed(
                    rows,
                    10,
                    lambda o: {i: stored[i] for i in o},
                    index,
                    kernel.tokenize,
                    0.5,
                    newest,
                )
                for index in (warm, warm, kernel.BankIndex())
            ]
            assert got[0] == got[1] == got[2]


def test_pack_terms_are_bounded_and_dropped_with_their_memory() -> None:
    kept = pack_rule.PackTerms()
    tokenize = str.split
    for ordinal in range(PACK_TERMS_CACHED + 5):
        assert kept.terms(ordinal, f"w{ordinal} x", tokenize) == (
            frozenset({f"w{ordinal}", "x"}),
            "",
        )
        assert len(kept) <= PACK_TERMS_CACHED
        assert kept.words == 2 * len(kept)
    size = len(kept)
    last = PACK_TERMS_CACHED + 4
    assert kept.terms(last, "something else", tokenize)[0] == {f"w{last}", "x"}  # kept: not re-read
    kept.remove(last)
    kept.remove(10**9)
    assert len(kept) == size - 1 and kept.words == 2 * (size - 1)
    many = [f"t{i}" for i in range(PACK_TERMS_CACHED_WORDS + 1)]
    assert len(kept.terms(7, "many", lambda _: many)[0]) == len(many)
    assert 7 not in kept._by_ordinal  # too big to keep: not kept, the rest dropped for it
    assert kept.words <= PACK_TERMS_CACHED_WORDS


_WORDS = st.lists(
    st.sampled_from(["api", "port", "8080", "deploy", "the", "and", "\U0001f642"]), max_size=5
)


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(_WORDS.map(" ".join), max_size=14),
    days=st.lists(st.integers(1, 28), min_size=14, max_size=14),
    limit=st.integers(1, 6),
    threshold=st.sampled_from([1e-30, 0.25, 0.5, 0.6, 0.75, 0.8, 1.0]),
    newest=st.booleans(),
)
def test_the_kernels_serve_the_same_pack(
    both_kernels: tuple[Kernel, Kernel],
    texts: list[str],
    days: list[int],
    limit: int,
    threshold: float,
    newest: bool,
) -> None:
    """Differential: the compiled kernel (with its hand-backs: contents without terms, and
    1e-30, whose fraction does not fit 64 bits) serves what the pure one does."""
    rust, python = both_kernels
    assert _order(rust, texts, limit, threshold, newest, days) == _order(
        python, texts, limit, threshold, newest, days
    )


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(st.lists(st.sampled_from("abcdef"), max_size=5), max_size=14),
    days=st.lists(st.integers(1, 28), min_size=14, max_size=14),
    limit=st.integers(1, 6),
    threshold=st.sampled_from([0.25, 0.5, 0.6, 0.75, 0.8, 1.0]),
)
def test_pack_properties(
    texts: list[list[str]], days: list[int], limit: int, threshold: float
) -> None:
    members = [_terms(" ".join(ws)) for ws in texts]
    num, den = threshold_fraction(threshold)

    def walk(newest: bool, of: Sequence[pack_rule.Terms] = members) -> list[int]:
        return pack_rule.walk(
            len(of), of.__getitem__, lambda i: (_stamp(days[i]), i), limit, num, den, newest
        )

    def near(a: int, b: int) -> bool:
        return pack_rule.near(members[a], members[b], num, den)

    plain, newest = walk(False), walk(True)
    # At most `limit` hits, in rank order, no two of them near-duplicates.
    assert len(plain) <= limit and plain == sorted(plain)
    for i, a in enumerate(plain):
        for b in plain[i + 1 :]:
            assert not near(a, b)
    # Nothing is lost that the limit had room for: every candidate left out nearly duplicates
    # a served hit ranked above it.
    if len(plain) < limit:
        for row in range(len(members)):
            if row not in plain:
                assert any(near(h, row) for h in plain if h < row)
    # prefer_newest serves as many families, each by a member at least as new as its head,
    # that nearly duplicates the head.
    assert len(newest) == len(plain)
    for head, served in zip(plain, newest, strict=True):
        assert (_stamp(days[served]), served) >= (_stamp(days[head]), head)
        assert served == head or near(head, served)
    # A threshold no pair reaches (distinct texts, all different terms) changes nothing.
    distinct = [_terms(f"w{i}") for i in range(len(texts))]
    assert walk(True, distinct) == list(range(min(limit, len(texts))))


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


def test_a_warm_process_serves_what_a_fresh_one_does(db_path: Path, backend: str) -> None:
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
        warm.forget(ids[1])
        updated = warm.update(ids[2], content="the billing api answers on port 8080 (confirmed)")
        warm.retain("the billing API listens on port 9090 since May", supersedes=[ids[4]])
        warm.recall(QUERY, min_score=0, as_of=_day(30))  # an index of its own
        after = [_served(warm, **o) for o in options]
        assert updated in {i for hits in after for i, _, _ in hits}
        assert after != before
        with Memory(db_path, backend=backend) as cold:  # another process
            assert [_served(cold, **o) for o in options] == after
        assert warm.delete_bank("default")
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
