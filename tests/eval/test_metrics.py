"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

from memwire.eval.metrics import QueryResult, mrr, ndcg, recall_all, recall_any, summarize


def test_recall_any_and_all() -> None:
    gold = {"a": 1, "b": 1}
    assert recall_any(["x", "a"], gold, 1) == 0.0
    assert recall_any(["x", "a"], gold, 2) == 1.0
    assert recall_all(["a", "x", "b"], gold, 2) == 0.0
    assert recall_all(["a", "x", "b"], gold, 3) == 1.0


def test_ndcg_binary_and_graded() -> None:
    assert ndcg(["a", "b"], {"a": 1}, 10) == 1.0
    assert ndcg(["x", "a"], {"a": 1}, 10) == 1 / math.log2(3)
    graded = ndcg(["b", "a"], {"a": 2, "b": 1}, 10)
    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert graded == (1 / math.log2(2) + 2 / math.log2(3)) / ideal
    assert ndcg(["x"], {"a": 1}, 10) == 0.0


def test_mrr() -> None:
    assert mrr(["x", "y", "a"], {"a": 1}) == 1 / 3
    assert mrr(["x"], {"a": 1}) == 0.0


def test_summarize_groups_and_served_rule() -> None:
    rows = [
        QueryResult(["a"], {"a": 1}, "g1", served_at=[frozenset({"a"})]),
        QueryResult(["x", "b"], {"b": 1}, "g2", served_at=[frozenset(), frozenset({"b"})]),
    ]
    s = summarize(rows, (1, 2), served=True)
    assert s.counts == {"all": 2, "g1": 1, "g2": 1}
    assert s.metrics["all"]["recall_any@1"] == 0.5
    assert s.metrics["all"]["recall_any@2"] == 1.0
    assert s.metrics["g2"]["served_any@1"] == 0.0
    assert s.metrics["g2"]["served_any@2"] == 1.0
    assert s.metrics["all"]["mrr"] == (1.0 + 0.5) / 2
