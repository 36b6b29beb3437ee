"""LoCoMo (Maharana et al., ACL 2024): turn-level retrieval over long conversations.

One bank per conversation, one memory per dialogue turn (``speaker: text``, plus the image
caption when the turn has one), dated with its session's date. A turn is stored the way an agent
capturing a conversation after the exchange would store it, through
``Memory.retain_conversation``: with the conversation around it as its context
(``context_turns`` before it, default 2, and ``context_after`` after it, default 1; same
session, without their speaker labels; none after a turn that asks; the session's date as
the first line), which recall matches at half the weight of the turn itself
(docs/storage.md). Each question of categories 1-4 is a query whose
gold is its evidence turns. Two hit rules are reported side by side:

- **strict**: the evidence turn's own memory is among the hits;
- **served**: the evidence turn's text is inside what recall hands the agent (a hit's content
  or stored context), which is what an agent actually reads and what published turn-level
  figures count.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from memwire.embed import Embedder
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

__all__ = ["CATEGORIES", "evaluate_locomo"]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10, 20)
_SESSION = re.compile(r"session_(\d+)\Z")


def _session_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware datetime (the data has no zone: UTC)."""
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=timezone.utc)


def _said(turn: dict[str, Any]) -> str:
    """What a turn says: its text, plus the image caption when it has one."""
    text = str(turn["text"])
    if turn.get("blip_caption"):
        text += f" [image: {turn['blip_caption']}]"
    return text


def turn_text(turn: dict[str, Any]) -> str:
    return f"{turn['speaker']}: {_said(turn)}"


class _Turn(NamedTuple):
    dia_id: str
    said: str  # what was said, as it appears in the next turns' context
    turn: dict[str, Any]  # the turn as Memory.retain_conversation takes it


def _turns(conversation: dict[str, Any]) -> list[_Turn]:
    """Every turn, in conversation order, with its session number and date."""
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := _SESSION.match(key)))
    out = []
    for number, key in sessions:
        when = _session_date(conversation[f"session_{number}_date_time"])
        for turn in conversation[key]:
            said = _said(turn)
            out.append(
                _Turn(
                    turn["dia_id"],
                    said,
                    {
                        "speaker": turn["speaker"],
                        "text": said,
                        "created_at": when,
                        "session": number,
                    },
                )
            )
    return out


def _evidence(qa: dict[str, Any]) -> list[str]:
    return [x for item in qa.get("evidence", []) for x in re.split(r"[;,\s]+", item) if x]


def evaluate_locomo(
    data: str | Path,
    *,
    backend: str | None = None,
    embedder: Embedder | None = None,
    weights: Sequence[float] | None = None,
    limit: int = 20,
    context_turns: int = 2,
    context_after: int = 1,
    min_score: float | None = None,
    near_duplicate: float | None = None,
    prefer_newest: bool | None = None,
    show_progress: bool | None = None,
) -> Report:
    """Run the LoCoMo retrieval evaluation on ``data`` (the original JSON format).

    ``context_turns`` / ``context_after``: how many turns of the same session before / after
    each turn it is stored with as its context (0 and 0 store turns alone). ``min_score``: the
    banks' relevance floor (default: the bank default).
    """
    check_windows(context_turns, context_after)
    path = Path(data)
    conversations = json.loads(path.read_text(encoding="utf-8"))
    latency = Latency()
    results: list[QueryResult] = []
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        backend_used = memory.backend
        memory_embedder = embedder.id if embedder is not None else "bundled static"
        for conv in progress(conversations, len(conversations), "locomo", show_progress):
            bank = re.sub(r"[^A-Za-z0-9_.-]", "-", str(conv.get("sample_id", "conv")))
            turns = _turns(conv["conversation"])
            settings = bank_config(weights, min_score, near_duplicate, prefer_newest)
            if settings:
                memory.set_config(bank, settings)
            start = time.perf_counter()
            ids = memory.retain_conversation(
                [t.turn for t in turns], bank=bank, before=context_turns, after=context_after
            )
            latency.retain_seconds += time.perf_counter() - start
            latency.retained += len(turns)
            by_id: dict[str, list[str]] = {}
            for turn, memory_id in zip(turns, ids, strict=True):
                by_id.setdefault(memory_id, []).append(turn.dia_id)
            # A turn is "shown" when what it says is in a hit (as content, or as another
            # turn's context, where it appears without its speaker label).
            said = {t.dia_id: t.said for t in turns}
            for qa in conv["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                gold = {g: 1 for g in _evidence(qa) if g in said}
                if not gold:
                    continue
                hits = timed_recall(memory, latency, qa["question"], bank=bank, limit=limit)
                ranked = [d for h in hits for d in by_id.get(h.id, [])]
                served_at = []
                for h in hits:
                    shown = h.content + "\n" + (h.context or "")
                    served_at.append(frozenset(g for g in gold if said[g] in shown))
                results.append(
                    QueryResult(
                        ranked=ranked,
                        gold=gold,
                        group=CATEGORIES[qa["category"]],
                        served_at=served_at,
                    )
                )
    strict = summarize(results, KS)
    served = summarize(results, KS, served=True)
    served.metrics = {
        g: {k: v for k, v in m.items() if k.startswith("served_any")}
        for g, m in served.metrics.items()
    }
    return new_report(
        "locomo",
        path,
        backend_used,
        recall_config(
            memory_embedder,
            weights,
            min_score,
            near_duplicate=near_duplicate,
            prefer_newest=prefer_newest,
            limit=limit,
            memory="one per turn (Memory.retain_conversation)",
            context_turns=context_turns,
            context_after=context_after,
            budget="bank default",
        ),
        {
            "strict (the evidence turn's own memory)": strict,
            "served (evidence text shown)": served,
        },
        latency,
    )
