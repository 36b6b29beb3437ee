"""Golden vectors (tests/golden/*.jsonl, shared with `cargo test`) reproduced by each backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from memwire._kernel.contract import Kernel

GOLDEN = Path(__file__).resolve().parent.parent / "golden"


def rows(name: str) -> list[dict[str, Any]]:
    with open(GOLDEN / f"{name}.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def hexed(pairs: list[tuple[int, float]]) -> list[list[Any]]:
    return [[o, float(s).hex()] for o, s in pairs]


def vec(hex_or_none: str | None) -> bytes | None:
    return bytes.fromhex(hex_or_none) if hex_or_none is not None else None


def test_tokenize(kernel: Kernel) -> None:
    cases = rows("tokenize")
    assert len(cases) > 50
    for case in cases:
        assert kernel.tokenize(case["text"]) == case["tokens"], case["text"]


def test_rrf(kernel: Kernel) -> None:
    for case in rows("rrf"):
        assert hexed(kernel.rrf(case["streams"], case["weights"])) == case["fused"]


def test_budget(kernel: Kernel) -> None:
    for case in rows("budget"):
        kept = [list(r) for r in kernel.trim_to_budget(case["texts"], case["budget"])]
        assert kept == case["kept"]


def _build(kernel: Kernel, case: dict[str, Any]) -> Any:
    index = kernel.BankIndex(case["dim"])
    for o, text, v in case["docs"]:
        index.add(o, text, vec(v))
    for o in case["removed"]:
        assert index.remove(o)
    return index


def _check_queries(index: Any, case: dict[str, Any]) -> None:
    for q in case["queries"]:
        where = f"{case['name']}: {q['query']!r}"
        assert hexed(index.search_bm25(q["query"], q["k"], q["allow"])) == q["bm25"], where
        assert hexed(index.search_overlap(q["query"], q["k"], q["allow"])) == q["overlap"], where
        if q["vector"] is not None:
            got = index.search_dense(vec(q["vector"]), q["k"], q["allow"])
            assert hexed(got) == q["dense"], where
        recall = index.recall(
            q["query"], q["k"], q["weights"], q["depth"], q["allow"], vec(q["vector"])
        )
        assert [[o, s.hex(), a, b, c] for o, s, a, b, c in recall] == q["recall"], where


@pytest.mark.parametrize("case", rows("search"), ids=lambda c: c["name"])
def test_search(kernel: Kernel, case: dict[str, Any]) -> None:
    index = _build(kernel, case)
    _check_queries(index, case)


@pytest.mark.parametrize("case", rows("search"), ids=lambda c: c["name"])
def test_search_after_snapshot(kernel: Kernel, case: dict[str, Any]) -> None:
    index = kernel.BankIndex.from_bytes(_build(kernel, case).to_bytes())
    _check_queries(index, case)
