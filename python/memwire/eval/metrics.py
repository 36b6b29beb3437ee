"""Retrieval metrics over ranked lists of document keys (binary or graded relevance)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["QueryResult", "Summary", "summarize"]


@dataclass(frozen=True)
class QueryResult:
    """One query's ranked keys and its gold set (key -> graded relevance, > 0)."""

    ranked: Sequence[str]
    gold: Mapping[str, int]
    group: str = "all"
    # For the "served" rule: gold keys whose text is inside what recall handed back.
    served: frozenset[str] = field(default_factory=frozenset)
    served_at: Sequence[frozenset[str]] = ()


def recall_any(ranked: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    return 1.0 if any(key in gold for key in ranked[:k]) else 0.0


def recall_all(ranked: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    top = set(ranked[:k])
    return 1.0 if all(key in top for key in gold) else 0.0


def recall_fraction(ranked: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(gold)) / len(gold)


def ndcg(ranked: Sequence[str], gold: Mapping[str, int], k: int) -> float:
    dcg = 0.0
    for i, key in enumerate(ranked[:k]):
        dcg += gold.get(key, 0) / math.log2(i + 2)
    ideal = 0.0
    for i, rel in enumerate(sorted(gold.values(), reverse=True)[:k]):
        ideal += rel / math.log2(i + 2)
    return dcg / ideal if ideal else 0.0


def mrr(ranked: Sequence[str], gold: Mapping[str, int]) -> float:
    for i, key in enumerate(ranked):
        if key in gold:
            return 1.0 / (i + 1)
    return 0.0


def served_any(result: QueryResult, k: int) -> float:
    """1 when the text of some gold item is inside one of the first ``k`` hits' text."""
    return 1.0 if any(hit_served for hit_served in result.served_at[:k]) else 0.0


@dataclass
class Summary:
    """Mean metrics per group (``"all"`` plus each group name), with query counts."""

    metrics: dict[str, dict[str, float]]
    counts: dict[str, int]


def summarize(
    results: Sequence[QueryResult], ks: Sequence[int], *, all_k: int = 10, served: bool = False
) -> Summary:
    """Mean recall_any@k (and served_any@k), recall_all@all_k, NDCG@10 and MRR per group."""
    groups: dict[str, list[QueryResult]] = {"all": list(results)}
    for r in results:
        if r.group != "all":
            groups.setdefault(r.group, []).append(r)
    out: dict[str, dict[str, float]] = {}
    for name, rows in groups.items():
        if not rows:
            continue
        n = len(rows)
        m: dict[str, float] = {}
        for k in ks:
            m[f"recall_any@{k}"] = math.fsum(recall_any(r.ranked, r.gold, k) for r in rows) / n
            if served:
                m[f"served_any@{k}"] = math.fsum(served_any(r, k) for r in rows) / n
        m[f"recall_all@{all_k}"] = math.fsum(recall_all(r.ranked, r.gold, all_k) for r in rows) / n
        m["ndcg@10"] = math.fsum(ndcg(r.ranked, r.gold, 10) for r in rows) / n
        m["mrr"] = math.fsum(mrr(r.ranked, r.gold) for r in rows) / n
        out[name] = m
    return Summary(out, {name: len(rows) for name, rows in groups.items() if rows})
