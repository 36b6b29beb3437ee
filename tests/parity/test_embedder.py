"""The static embedder's kernel on both backends: golden ids and sums, differential tests."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire._kernel.contract import Kernel
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
