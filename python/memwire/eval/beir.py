"""BEIR-format collections (corpus.jsonl, queries.jsonl, qrels/test.tsv): nDCG@10 and R@100.

A check that memwire's lexical retrieval is a real BM25: on SciFact the BEIR paper reports
nDCG@10 0.665 for BM25 and Anserini 0.679.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

from memwire.config import MAX_RECALL_TOKENS
from memwire.embed import Embedder
from memwire.errors import InvalidInputError
from memwire.eval._common import (
    bank_config,
    new_report,
    progress,
    recall_config,
    timed_recall,
    timed_retain,
)
from memwire.eval.metrics import QueryResult, recall_fraction
from memwire.eval.report import Latency, Report
from memwire.memory import Memory

__all__ = ["evaluate_beir"]


def _jsonl(path: Path) -> list[dict[str, object]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            score = int(row["score"])
            if score > 0:
                out.setdefault(row["query-id"], {})[row["corpus-id"]] = score
    return out


def evaluate_beir(
    data: str | Path,
    *,
    split: str = "test",
    backend: str | None = None,
    embedder: Embedder | None = None,
    weights: Sequence[float] | None = None,
    min_score: float | None = None,
    near_duplicate: float | None = None,
    prefer_newest: bool | None = None,
    show_progress: bool | None = None,
) -> Report:
    """Index ``corpus.jsonl`` into one bank and run every query of ``qrels/{split}.tsv``."""
    root = Path(data)
    for needed in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (root / needed).is_file():
            raise InvalidInputError(f"{root} is not a BEIR folder: {needed} is missing")
    corpus = _jsonl(root / "corpus.jsonl")
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(root / "queries.jsonl")}
    qrels = _qrels(root / f"qrels/{split}.tsv")
    latency = Latency()
    results: list[QueryResult] = []
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        items = [
            {
                "content": f"{d.get('title') or ''}\n{d['text']}".strip(),
                "document_id": str(d["_id"]),
            }
            for d in corpus
        ]
        settings = bank_config(weights, min_score, near_duplicate, prefer_newest)
        if settings:
            memory.set_config("beir", settings)
        ids = timed_retain(memory, latency, items, "beir")
        key_of = {memory_id: str(d["_id"]) for memory_id, d in zip(ids, corpus, strict=True)}
        for qid in progress(list(qrels), len(qrels), "beir", show_progress):
            hits = timed_recall(
                memory, latency, queries[qid], bank="beir", limit=100, budget=MAX_RECALL_TOKENS
            )
            ranked = [key_of[h.id] for h in hits]
            results.append(QueryResult(ranked=ranked, gold=qrels[qid]))
        backend_used = memory.backend
        memory_embedder = embedder.id if embedder is not None else "bundled static"
    from memwire.eval.metrics import summarize

    summary = summarize(results, (10, 100))
    n = len(results)
    summary.metrics["all"]["recall@100"] = sum(
        recall_fraction(r.ranked, r.gold, 100) for r in results
    ) / max(1, n)
    return new_report(
        "beir",
        root,
        backend_used,
        recall_config(
            memory_embedder,
            weights,
            min_score,
            near_duplicate=near_duplicate,
            prefer_newest=prefer_newest,
            split=split,
            limit=100,
            memory="title + text per document",
        ),
        {"graded qrels": summary},
        latency,
    )
