"""BEAM (Tavakoli et al., "Beyond a Million Tokens"): message-level retrieval in long chats.

A BEAM folder holds one directory per conversation, each with ``chat.json`` (batches of turns,
every message ``{role, id, content, time_anchor?}``) and
``probing_questions/probing_questions.json`` (category -> questions whose ``source_chat_ids``,
a list or a dict of lists, are the gold message ids). One bank per conversation, one memory per
message (``role: content``), stored alone by default or, with ``context_turns`` /
``context_after``, through ``Memory.retain_conversation`` with the messages around it as its
context (still one memory per message). Every question with gold ids is a query (abstention
questions have none); a hit is gold when it is one of the ids.

Dates: few messages carry a time anchor, so each message is dated by the last anchor at or
before it (the first anchor for those before any), plus its position in the chat in seconds:
``created_at`` then follows the chat's order, which ``prefer_newest`` reads.

A second rule, "latest message", scores the questions about a changed fact on the message that
holds its latest value, from the data's own labels: ``knowledge_update`` on its
``updated_info`` ids, ``contradiction_resolution`` on the later of its two statements (in chat
order); the later of several ids is the one that counts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from memwire._text import MAX_CONTENT_CHARS
from memwire.embed import Embedder
from memwire.errors import InvalidInputError
from memwire.eval._common import (
    bank_config,
    check_windows,
    new_report,
    progress,
    recall_config,
    timed_recall,
)
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


def message_dates(messages: list[dict[str, Any]]) -> list[datetime | None]:
    """Each message's date: the last anchor at or before it (else the first), + its position
    in seconds; all None when no message has an anchor."""
    anchors = [_when(m.get("time_anchor")) for m in messages]
    known = [a for a in anchors if a is not None]
    if not known:
        return [None] * len(messages)
    current = known[0]
    out: list[datetime | None] = []
    for position, anchor in enumerate(anchors):
        current = anchor or current
        out.append(current + timedelta(seconds=position))
    return out


LATEST = {"knowledge_update": "updated_info", "contradiction_resolution": None}
"""The categories scored on the latest message, and the label of their ids that holds it
(None: every id, the latest of them)."""


def _latest(ids: object, label: str | None, position: dict[int, int]) -> int | None:
    """The gold message (of ``label``'s ids, when given) that comes last in the chat."""
    if label is not None:
        if isinstance(ids, str):
            try:
                ids = json.loads(ids)
            except ValueError:
                return None
        ids = ids.get(label) if isinstance(ids, dict) else None
    found = [i for i in _gold(ids) if i in position]
    return max(found, key=lambda i: position[i]) if found else None


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


def _turn(message: dict[str, Any], when: datetime | None) -> dict[str, Any]:
    """A message as ``Memory.retain_conversation`` takes it (its text cut so that
    ``role: text`` fits a memory, as the messages stored alone are)."""
    role = str(message.get("role") or "message")
    turn: dict[str, Any] = {
        "speaker": role,
        "text": str(message["content"])[: MAX_CONTENT_CHARS - len(role) - 2],
    }
    if when is not None:
        turn["created_at"] = when
    return turn


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
    near_duplicate: float | None = None,
    prefer_newest: bool | None = None,
    context_turns: int = 0,
    context_after: int = 0,
    show_progress: bool | None = None,
) -> Report:
    """Run the BEAM retrieval evaluation on a folder of conversations (e.g. ``beam_100k``).

    ``context_turns`` / ``context_after``: how many messages before / after each message it is
    stored with as its context, through ``Memory.retain_conversation`` (0 and 0, the default,
    store messages alone with ``retain_many``)."""
    check_windows(context_turns, context_after)
    windowed = bool(context_turns or context_after)
    root = Path(data)
    convs = _conversations(root)
    latency = Latency()
    results: list[QueryResult] = []
    latest: list[QueryResult] = []  # the questions of LATEST, on their latest message
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        backend_used = memory.backend
        memory_embedder = embedder.id if embedder is not None else "bundled static"
        for conv in progress(convs, len(convs), "beam", show_progress):
            bank = f"beam-{conv.name}"
            settings = bank_config(weights, min_score, near_duplicate, prefer_newest)
            if settings:
                memory.set_config(bank, settings)
            chat = json.loads((conv / "chat.json").read_text(encoding="utf-8"))
            messages = [m for m in _messages(chat) if str(m.get("content") or "").strip()]
            items: list[dict[str, Any]] = []
            dates = message_dates(messages)
            for m, when in zip(messages, dates, strict=True):
                text = f"{m.get('role', 'message')}: {m['content']}"
                # A few messages (pasted logs) exceed a memory's size: keep their beginning.
                item: dict[str, Any] = {"content": text[:MAX_CONTENT_CHARS]}
                if when is not None:
                    item["created_at"] = when
                items.append(item)
            start = time.perf_counter()
            if windowed:
                ids = memory.retain_conversation(
                    [_turn(m, when) for m, when in zip(messages, dates, strict=True)],
                    bank=bank,
                    before=context_turns,
                    after=context_after,
                )
            else:
                ids = memory.retain_many(items, bank=bank)
            latency.retain_seconds += time.perf_counter() - start
            latency.retained += len(items)
            key_of = {memory_id: str(m["id"]) for memory_id, m in zip(ids, messages, strict=True)}
            position = {m["id"]: i for i, m in enumerate(messages) if isinstance(m.get("id"), int)}
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
                    if category in LATEST:
                        last = _latest(q.get("source_chat_ids"), LATEST[category], position)
                        if last is not None:
                            latest.append(
                                QueryResult(ranked=ranked, gold={str(last): 1}, group=category)
                            )
    return new_report(
        "beam",
        root,
        backend_used,
        recall_config(
            memory_embedder,
            weights,
            min_score,
            near_duplicate=near_duplicate,
            prefer_newest=prefer_newest,
            limit=limit,
            memory="one per message (role: content)"
            + (" (Memory.retain_conversation)" if windowed else ""),
            context_turns=context_turns,
            context_after=context_after,
        ),
        {
            "message ids": summarize(results, KS),
            "latest message (knowledge_update, contradiction_resolution)": summarize(latest, KS),
        },
        latency,
    )
