"""LongMemEval (Wu et al., ICLR 2025), S/M format: a fresh bank per question.

Two granularities, as the published retrieval figures use them: *session* (one memory per
haystack session, gold = the answer sessions) and *turn* (one memory per turn, gold = the turns
marked ``has_answer``; questions without marked turns are skipped at this granularity).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwire.config import MAX_RECALL_TOKENS
from memwire.embed import Embedder
from memwire.eval._common import (
    bank_config,
    progress,
    recall_config,
    timed_recall,
    timed_retain,
    version,
)
from memwire.eval.metrics import QueryResult, summarize
from memwire.eval.report import Latency, Report, file_sha256
from memwire.memory import Memory

__all__ = ["evaluate_longmemeval"]

KS = (1, 5, 10, 30, 50)


def _date(text: str) -> datetime:
    """``"2023/05/20 (Sat) 02:21"`` -> aware UTC datetime."""
    day, _, clock = text.split(" ")
    return datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M").replace(tzinfo=timezone.utc)


def _turn(turn: dict[str, Any]) -> str:
    return f"{turn['role']}: {turn['content']}"


def _docs(question: dict[str, Any], granularity: str) -> list[tuple[str, str, datetime, bool]]:
    out = []
    answer_sessions = set(question.get("answer_session_ids", []))
    for sid, date, session in zip(
        question["haystack_session_ids"],
        question["haystack_dates"],
        question["haystack_sessions"],
        strict=True,
    ):
        when = _date(date)
        if granularity == "session":
            text = "\n".join(_turn(t) for t in session)
            out.append((sid, text, when, sid in answer_sessions))
        else:
            for i, turn in enumerate(session):
                out.append((f"{sid}#{i}", _turn(turn), when, bool(turn.get("has_answer"))))
    return out


def evaluate_longmemeval(
    data: str | Path,
    *,
    granularity: str = "session",
    backend: str | None = None,
    embedder: Embedder | None = None,
    weights: Sequence[float] | None = None,
    min_score: float | None = None,
    near_duplicate: float | None = None,
    prefer_newest: bool | None = None,
    show_progress: bool | None = None,
) -> Report:
    """Run the retrieval protocol on a LongMemEval JSON file (a list of questions)."""
    if granularity not in ("session", "turn"):
        from memwire.errors import InvalidInputError

        raise InvalidInputError("granularity must be 'session' or 'turn'")
    path = Path(data)
    questions = json.loads(path.read_text(encoding="utf-8"))
    latency = Latency()
    results: list[QueryResult] = []
    skipped = 0
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        backend_used = memory.backend
        memory_embedder = embedder.id if embedder is not None else "bundled static"
        for q in progress(questions, len(questions), "longmemeval", show_progress):
            docs = [d for d in _docs(q, granularity) if d[1].strip()]
            gold = {key: 1 for key, _, _, is_gold in docs if is_gold}
            if not gold:
                skipped += 1
                continue
            bank = "q-" + "".join(c if c.isalnum() else "-" for c in str(q["question_id"]))
            items = [{"content": text, "created_at": when} for _, text, when, _ in docs]
            settings = bank_config(weights, min_score, near_duplicate, prefer_newest)
            if settings:
                memory.set_config(bank, settings)
            ids = timed_retain(memory, latency, items, bank)
            keys: dict[str, list[str]] = {}
            for (key, _, _, _), memory_id in zip(docs, ids, strict=True):
                keys.setdefault(memory_id, []).append(key)
            hits = timed_recall(
                memory, latency, q["question"], bank=bank, limit=50, budget=MAX_RECALL_TOKENS
            )
            ranked = [k for h in hits for k in keys.get(h.id, [])]
            results.append(QueryResult(ranked=ranked, gold=gold, group=str(q.get("question_type"))))
            memory.delete_bank(bank)
    notes = (
        [f"{skipped} questions without gold at {granularity} level were skipped"] if skipped else []
    )
    return Report(
        benchmark=f"longmemeval ({granularity})",
        data=str(path),
        data_sha256=file_sha256(path),
        memwire_version=version(),
        backend=backend_used,
        config=recall_config(
            memory_embedder,
            weights,
            min_score,
            near_duplicate=near_duplicate,
            prefer_newest=prefer_newest,
            granularity=granularity,
            limit=50,
            bank="fresh per question",
        ),
        rules={"recall": summarize(results, KS)},
        latency=latency,
        notes=notes,
    )
