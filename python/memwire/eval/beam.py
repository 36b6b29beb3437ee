"""BEAM (Tavakoli et al., "Beyond a Million Tokens"): message-level retrieval in long chats.

A BEAM folder holds one directory per conversation, each with ``chat.json`` (batches of turns,
every message ``{role, id, content, time_anchor?}``) and
``probing_questions/probing_questions.json`` (category -> questions whose ``source_chat_ids``,
a list or a dict of lists, are the gold message ids). One bank per conversation, one memory per
message (``role: content``, dated by its time anchor when it has one). Every question with gold
ids is a query (abstention questions have none); a hit is gold when it is one of the ids.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from memwire._text import MAX_CONTENT_CHARS
from memwire.embed import Embedder
from memwire.errors import InvalidInputError
from memwire.eval._common import new_report, progress, recall_config, timed_recall
from memwire.eval.metrics import QueryResult, summarize
from memwire.eval.report import Latency, Report
from memwire.memory import Memory

__all__ = ["evaluate_beam"]

KS = (1, 5, 10, 20)


def _when(anchor: object) -> datetime | None:
    """``"March-15-2024"`` -> an aware datetime (the data has no zone: UTC); None otherwise."""
    if not isinstance(anchor, str):
        return None
    try:
        return datetime.strptime(anchor.strip(), "%B-%d-%Y").replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def _messages(chat: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for batch in chat for turn in batch.get("turns") or [] for m in turn]


def _gold(ids: object) -> list[int]:
    """``source_chat_ids``: a list of ids, a dict of lists, or a string of either."""
    if isinstance(ids, str):
        try:
            ids = json.loads(ids)
        except ValueError:
            return []
    if isinstance(ids, dict):
        return [i for v in ids.values() for i in _gold(v)]
    if isinstance(ids, list):
        return [i for i in ids if isinstance(i, int) and not isinstance(i, bool)]
    return []


def _conversations(root: Path) -> list[Path]:
    found = sorted(
        (p for p in root.iterdir() if (p / "chat.json").is_file()),
        key=lambda p: (not p.name.isdigit(), int(p.name) if p.name.isdigit() else 0, p.name),
    )
    if not found:
        raise InvalidInputError(f"{root} is not a BEAM folder: no <n>/chat.json")
    return found


def evaluate_beam(
    data: str | Path,
    *,
    backend: str | None = None,
    embedder: Embedder | None = None,
    weights: Sequence[float] | None = None,
    limit: int = 20,
    min_score: float | None = None,
    show_progress: bool | None = None,
) -> Report:
    """Run the BEAM retrieval evaluation on a folder of conversations (e.g. ``beam_100k``)."""
    root = Path(data)
    convs = _conversations(root)
    latency = Latency()
    results: list[QueryResult] = []
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        backend_used = memory.backend
        memory_embedder = embedder.id if embedder is not None else "bundled static"
        for conv in progress(convs, len(convs), "beam", show_progress):
            bank = f"beam-{conv.name}"
            if weights is not None:
                memory.set_config(bank, {"fusion_weights": list(weights)})
            if min_score is not None:
                memory.set_config(bank, {"min_score": min_score})
            chat = json.loads((conv / "chat.json").read_text(encoding="utf-8"))
            messages = [m for m in _messages(chat) if str(m.get("content") or "").strip()]
            items: list[dict[str, Any]] = []
            for m in messages:
                text = f"{m.get('role', 'message')}: {m['content']}"
                # A few messages (pasted logs) exceed a memory's size: keep their beginning.
                item: dict[str, Any] = {"content": text[:MAX_CONTENT_CHARS]}
                when = _when(m.get("time_anchor"))
                if when is not None:
                    item["created_at"] = when
                items.append(item)
            start = time.perf_counter()
            ids = memory.retain_many(items, bank=bank)
            latency.retain_seconds += time.perf_counter() - start
            latency.retained += len(items)
            key_of = {memory_id: str(m["id"]) for memory_id, m in zip(ids, messages, strict=True)}
            probes = conv / "probing_questions" / "probing_questions.json"
            questions = json.loads(probes.read_text(encoding="utf-8")) if probes.is_file() else {}
            for category, qs in sorted(questions.items()):
                for q in qs:
                    gold = {str(i): 1 for i in _gold(q.get("source_chat_ids"))}
                    gold = {k: v for k, v in gold.items() if k in key_of.values()}
                    if not gold or not str(q.get("question") or "").strip():
                        continue
                    hits = timed_recall(memory, latency, q["question"], bank=bank, limit=limit)
                    ranked = [key_of[h.id] for h in hits if h.id in key_of]
                    results.append(QueryResult(ranked=ranked, gold=gold, group=category))
    return new_report(
        "beam",
        root,
        backend_used,
        recall_config(
            memory_embedder,
            weights,
            min_score,
            limit=limit,
            memory="one per message (role: content)",
        ),
        {"message ids": summarize(results, KS)},
        latency,
    )
