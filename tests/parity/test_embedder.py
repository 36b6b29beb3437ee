"""The static embedder's kernel on both backends: golden ids and sums, differential tests."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire._kernel.contract import Kernel
from memwire._kernel.vectors import quantize_many
from memwire.embed import encode
from memwire.embed.static import StaticEmbedder
from memwire.errors import InvalidInputError

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "embed.jsonl"


@cache
def bundled() -> tuple[list[str], bytes, int]:
    """The previous bundled table: the golden cases were made with it (tests/golden/generate.py);
    the default table's parity is in tests/dense/test_static_tables.py."""
    from memwire.embed.static import LEGACY_ID, _read, _table, _vocab

    table, _, dim = _table(_read("model.safetensors", LEGACY_ID))
    return _vocab(_read("tokenizer.json", LEGACY_ID)), table, dim


def make(kernel: Kernel) -> Any:
    vocab, table, dim = bundled()
    return kernel.StaticEmbedder(vocab, table, dim)


def test_golden_ids_and_sums(kernel: Kernel) -> None:
    embedder = make(kernel)
    cases = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    assert len(cases) > 50
    for case in cases:
        assert embedder.token_ids(case["text"]) == case["ids"], case["text"]
        (total,) = embedder.sums([case["text"]])
        if case["sum"] is None:
            assert total is None
        else:
            assert list(memoryview(total).cast("i")) == case["sum"]


def test_wordpiece_behaviour(kernel: Kernel) -> None:
    embedder = make(kernel)
    vocab = bundled()[0]
    assert [vocab[i] for i in embedder.token_ids("Hello, World! unaffable")] == [
        "hello",
        ",",
        "world",
        "!",
        "una",
        "##ffa",
        "##ble",
    ]
    assert [vocab[i] for i in embedder.token_ids("Café naïve")] == ["cafe", "naive"]
    assert embedder.token_ids("zz" * 60) == []  # longer than 100 characters: unknown
    assert embedder.sums(["", "hello"])[0] is None
    assert embedder.dim == 256


def test_table_must_match(kernel: Kernel) -> None:
    with pytest.raises(InvalidInputError, match="embedding table does not match"):
        kernel.StaticEmbedder(["a", "b"], bytes(5), 3)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80))
def test_backends_agree(both_kernels: tuple[Kernel, Kernel], text: str) -> None:
    rust, py = (make(k) for k in both_kernels)
    assert rust.token_ids(text) == py.token_ids(text)
    assert rust.sums([text]) == py.sums([text])


def test_bundled_files_are_verified(monkeypatch: pytest.MonkeyPatch) -> None:
    from memwire.embed import static

    for table, (package, digests) in list(static.TABLES.items()):
        monkeypatch.setitem(
            static.TABLES, table, (package, {**digests, "tokenizer.json": "0" * 64})
        )
        with pytest.raises(static.ModelFileError, match="corrupt"):
            static._read("tokenizer.json", table)


def numpy_rule(embedder: Any, texts: list[str]) -> list[bytes | None]:
    """What ``memwire.embed.encode`` made of the sums before the kernel quantised them."""
    sums = embedder.sums(texts)
    vectors = [None if s is None else np.frombuffer(s, dtype="<i4") for s in sums]
    out = quantize_many(vectors, embedder.dim)
    assert out is not None
    return out


def test_quantized_is_the_shell_rule_on_golden_texts(kernel: Kernel) -> None:
    embedder = make(kernel)
    texts = [json.loads(line)["text"] for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    texts += ["", "hello", "  \u200b ", "zz" * 60]
    vectors, inexact = embedder.quantized(texts)
    assert inexact == []
    assert vectors == numpy_rule(embedder, texts)
    assert vectors[-4] is None and vectors[-1] is None  # no token
    assert sum(v is not None for v in vectors) > 50


@settings(max_examples=200, deadline=None)
@given(
    texts=st.lists(
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=80), max_size=4
    )
)
def test_backends_quantize_alike(both_kernels: tuple[Kernel, Kernel], texts: list[str]) -> None:
    rust, py = (make(k) for k in both_kernels)
    assert rust.quantized(texts) == py.quantized(texts)
    assert rust.quantized(texts)[0] == numpy_rule(py, texts)


LETTERS = "abcdefgh"


def toy_kernels(kernels: tuple[Kernel, ...], table: bytes, dim: int) -> list[Any]:
    """Embedders of a vocabulary of single letters (and their ``##`` forms) over ``table``."""
    vocab = [*LETTERS, *(f"##{c}" for c in LETTERS)]
    return [k.StaticEmbedder(vocab, table, dim) for k in kernels]


@settings(max_examples=150, deadline=None)
@given(
    dim=st.integers(1, 70),
    data=st.data(),
)
def test_random_tables_quantize_alike(
    both_kernels: tuple[Kernel, Kernel], dim: int, data: st.DataObject
) -> None:
    """Random int8 tables and texts of many tokens: sums far from the real table's, including
    ties of the rounding and vectors that quantise to zero."""
    table = data.draw(st.binary(min_size=2 * len(LETTERS) * dim, max_size=2 * len(LETTERS) * dim))
    words = st.text(alphabet=LETTERS + "A", min_size=1, max_size=6)
    texts = data.draw(st.lists(st.lists(words, max_size=40).map(" ".join), min_size=1, max_size=5))
    rust, py = toy_kernels(both_kernels, table, dim)
    assert rust.sums(texts) == py.sums(texts)
    assert rust.quantized(texts) == py.quantized(texts)
    vectors, inexact = rust.quantized(texts)
    assert inexact == [] and vectors == numpy_rule(py, texts)


def test_huge_sums_are_left_to_the_shell(kernel: Kernel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Squares summing to 2**53 or more: the kernel hands the position back, and the static
    embedder (so ``encode``) quantises that sum with numpy's rule."""
    dim = 256
    embedder = kernel.StaticEmbedder(["a", "b"], bytes([127] * dim) + bytes([1] * dim), dim)
    # 256 * (127 * n) ** 2 >= 2**53 from n = 46,706 tokens of "a" on.
    texts = ["b", "a " * 46_705, "a " * 46_706, "b b", "c"]
    expected = numpy_rule(embedder, texts)
    vectors, inexact = embedder.quantized(texts)
    assert inexact == [2]
    assert vectors == [*expected[:2], None, *expected[3:]]
    assert expected[2] is not None and expected[4] is None

    wrapper = StaticEmbedder("python")
    monkeypatch.setattr(wrapper, "_kernel_embedder", embedder)
    assert wrapper.quantized(texts) == expected
    assert encode(wrapper, (wrapper.id, dim), texts) == expected
