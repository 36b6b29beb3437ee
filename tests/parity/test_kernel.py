"""Behaviour of the kernel, asserted on each backend (the `kernel` fixture runs both)."""

from __future__ import annotations

import math

import pytest
from memwire._kernel.contract import Kernel
from memwire._kernel.pure._generated import TRUNCATION_MARKER
from memwire._kernel.vectors import quantize
from memwire.errors import InvalidInputError, SnapshotError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("src/main.rs", ["src/main.rs", "src", "main", "rs"]),
        ("E0502", ["e0502"]),
        ("v1.2.3", ["v1.2.3", "v1", "2", "3"]),
        ("snake_case", ["snake_case", "snake", "case"]),
        ("localhost:8080", ["localhost:8080", "localhost", "8080"]),
        ("東京都", ["東京", "京都"]),
        ("Straße", ["strass"]),
        ("running organizations", ["run", "organ"]),
        ("Caroline's", ["caroline's", "carolin"]),
        ("İstanbul", ["istanbul"]),
        ("ΣΊΣΥΦΟΣ", ["σισυφοσ"]),
        ("soft\u00adhy\u200bphen", ["softhyphen"]),
        ("the and of", []),
        ("a..b", ["b"]),
    ],
)
def test_tokenize_examples(kernel: Kernel, text: str, expected: list[str]) -> None:
    assert kernel.tokenize(text) == expected


def test_identifiers_and_cjk_are_findable(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many(
        [0, 1, 2, 3],
        [
            "fixed the borrow error E0502 in src/main.rs",
            "the api listens on localhost:8080",
            "東京都の天気は晴れです",
            "release v1.2.3 renamed snake_case helpers",
        ],
    )
    assert index.search_bm25("E0502", 3)[0][0] == 0
    assert index.search_bm25("main.rs", 3)[0][0] == 0
    assert index.search_bm25("port 8080", 3)[0][0] == 1
    assert index.search_bm25("東京の天気", 3)[0][0] == 2
    assert index.search_bm25("1.2.3", 3)[0][0] == 3


def test_bm25_matches_the_formula(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many([0, 1, 2], ["apple apple pear", "pear", "plum plum plum plum"])
    n, avgdl = 3, 8 / 3

    def term(df: int, tf: int, dl: int) -> float:
        idf = math.log(1.0 + ((n - df) + 0.5) / (df + 0.5))
        norm = 1.2 * ((1.0 - 0.75) + 0.75 * (dl / avgdl))
        return idf * ((tf * (1.2 + 1.0)) / (tf + norm))

    got = dict(index.search_bm25("apple pear", 10))
    assert got[0] == 0.0 + term(1, 2, 3) + term(2, 1, 3)
    assert got[1] == 0.0 + term(2, 1, 1)
    assert 2 not in got


def test_ties_break_by_smaller_ordinal(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many([9, 3, 7], ["same words", "same words", "same words"])
    assert [o for o, _ in index.search_bm25("words", 10)] == [3, 7, 9]
    assert [o for o, _ in index.search_bm25("words", 2)] == [3, 7]


def test_exact_top_k_finds_the_oldest_memory(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add(0, "the deploy key rotates on fridays")
    index.add_many(list(range(1, 3001)), [f"note {i} about fridays" for i in range(1, 3001)])
    assert index.search_bm25("deploy key", 1)[0][0] == 0


def test_reused_slots_get_fresh_norms(kernel: Kernel) -> None:
    """A document added after a removal that leaves N and total length unchanged is scored with
    its own length (a stale norm cache once scored it as if empty)."""
    index = kernel.BankIndex()
    index.add(1, "alpha beta")
    index.add(2, "gamma delta")
    index.search_bm25("alpha", 5)
    index.remove(2)
    index.add(3, "alpha zeta zeta")
    index.remove(3)
    index.add(3, "alpha zeta")
    got = index.search_bm25("alpha", 5)
    assert [o for o, _ in got] == [1, 3]
    assert got[0][1] == got[1][1]


def test_ordinals_anywhere_in_range(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many([2**32 - 1, 0, 2**31], ["far away note", "near note", "middle note"])
    assert [o for o, _ in index.search_bm25("note", 5, allow=[2**32 - 1, 7, -1, 2**40])] == [
        2**32 - 1
    ]
    assert index.remove(2**32 - 1) and len(index) == 2
    clone = kernel.BankIndex.from_bytes(index.to_bytes())
    assert clone.search_bm25("note", 5) == index.search_bm25("note", 5)


def test_remove_changes_statistics_exactly(kernel: Kernel) -> None:
    a, b = kernel.BankIndex(), kernel.BankIndex()
    a.add_many([0, 1, 2], ["red fox", "blue fox", "green owl"])
    b.add_many([0, 2], ["red fox", "green owl"])
    assert a.remove(1) is True
    assert a.remove(1) is False
    assert a.search_bm25("fox owl", 5) == b.search_bm25("fox owl", 5)
    assert a.stats() == b.stats()
    assert 1 not in a and 0 in a


def test_allow_filters_without_changing_scores(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many([0, 1, 2], ["cat", "cat cat", "dog cat"])
    full = dict(index.search_bm25("cat", 10))
    filtered = index.search_bm25("cat", 10, allow=[0, 2, 99])
    assert [o for o, _ in filtered] == [
        o for o in sorted(full, key=lambda o: (-full[o], o)) if o != 1
    ]
    assert all(full[o] == s for o, s in filtered)


def test_overlap_prefers_documents_covering_more_terms(kernel: Kernel) -> None:
    index = kernel.BankIndex()
    index.add_many([0, 1], ["rust rust rust rust rust", "rust python"])
    assert index.search_bm25("rust python", 2)[0][0] in (0, 1)
    assert index.search_overlap("rust python", 2) == [(1, 2.0), (0, 1.0)]


def test_rrf(kernel: Kernel) -> None:
    fused = kernel.rrf([[5, 6], [6]], [1.0, 2.0])
    assert fused == [(6, 0.0 + 1.0 / (60.0 + 2) + 2.0 / (60.0 + 1)), (5, 1.0 / (60.0 + 1))]
    assert kernel.rrf([[1], [2]], [0.0, 1.0]) == [(2, 1.0 / 61.0)]
    with pytest.raises(InvalidInputError, match="expected 2 weights, got 1"):
        kernel.rrf([[1], [2]], [1.0])


def test_budget_truncates_top_hit_and_skips_what_does_not_fit(kernel: Kernel) -> None:
    kept = kernel.trim_to_budget(["x" * 100, "y" * 30, "z" * 4], 10)
    assert kept == [(0, "x" * (40 - len(TRUNCATION_MARKER)) + TRUNCATION_MARKER)]
    kept = kernel.trim_to_budget(["a" * 8, "b" * 40, "c" * 8], 5)
    assert kept == [(0, "a" * 8), (2, "c" * 8)]
    assert kernel.trim_to_budget(["abcdefgh"], 1) == [(0, "abcd")]
    with pytest.raises(InvalidInputError, match="budget_tokens must be at least 1, got 0"):
        kernel.trim_to_budget(["x"], 0)


def test_dense_exact_scores(kernel: Kernel) -> None:
    index = kernel.BankIndex(3)
    index.add(0, "", quantize([1.0, 0.0, 0.0]))
    index.add(1, "", quantize([1.0, 1.0, 0.0]))
    index.add(2, "", quantize([0.0, 0.0, 1.0]))
    got = index.search_dense(quantize([1.0, 0.0, 0.0]), 3)
    assert [o for o, _ in got] == [0, 1, 2]
    assert got[0][1] == (32767 * 32767) / float(32767 * 32767)
    assert got[2][1] == 0.0
    rows = index.recall("", 3, vector=quantize([0.0, 1.0, 0.0]))
    assert rows[0][0] == 1 and rows[0][2:] == (0, 0, 1)


def test_dense_rejects_bad_vectors(kernel: Kernel) -> None:
    index = kernel.BankIndex(3)
    with pytest.raises(InvalidInputError, match="vector has 2 dimensions, index has 3"):
        index.add(0, "x", quantize([1.0, 0.0]))
    with pytest.raises(InvalidInputError, match="vector must not be all zeros"):
        index.add(0, "x", bytes(6))
    assert len(index) == 0
    with pytest.raises(InvalidInputError, match="dim must be between 0 and 4096"):
        kernel.BankIndex(5000)


def test_snapshot_roundtrip_and_rejections(kernel: Kernel) -> None:
    index = kernel.BankIndex(2)
    index.add_many([4, 8], ["hello world", "world peace"], [quantize([1, 0]), None])
    clone = kernel.BankIndex.from_bytes(index.to_bytes())
    assert clone.stats() == index.stats()
    assert clone.recall("world", 5, vector=quantize([1, 1])) == index.recall(
        "world", 5, vector=quantize([1, 1])
    )
    assert clone.remove(4) and clone.search_bm25("hello", 3) == []
    with pytest.raises(SnapshotError, match="not a memwire index snapshot"):
        kernel.BankIndex.from_bytes(b"\x93garbage")
    import msgpack

    doc = msgpack.unpackb(index.to_bytes())
    for key, value, message in [
        ("version", 99, "unsupported snapshot version 99"),
        ("contract", 999, "snapshot contract 999 differs"),
        ("tokenizer", 0, "snapshot tokenizer 0 differs"),
        ("doc_lens", b"\x00", "corrupt snapshot"),
    ]:
        bad = dict(doc, **{key: value})
        with pytest.raises(SnapshotError, match=message):
            kernel.BankIndex.from_bytes(msgpack.packb(bad, use_bin_type=True))
