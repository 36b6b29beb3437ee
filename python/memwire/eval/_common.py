"""Pieces shared by the benchmark runners: timing recall, progress on stderr, the report head."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import memwire
from memwire._progress import track as progress
from memwire.errors import InvalidInputError
from memwire.eval.metrics import Summary
from memwire.eval.report import Latency, Report, file_sha256
from memwire.memory import Memory
from memwire.records import Hit

__all__ = ["bank_config", "check_windows", "progress", "timed_recall", "timed_retain", "version"]


def timed_recall(memory: Memory, latency: Latency, query: str, **kwargs: Any) -> list[Hit]:
    start = time.perf_counter()
    hits = memory.recall(query, **kwargs)
    latency.recall_seconds.append(time.perf_counter() - start)
    return hits


def timed_retain(memory: Memory, latency: Latency, items: list[Any], bank: str) -> list[str]:
    start = time.perf_counter()
    ids = memory.retain_many(items, bank=bank)
    latency.retain_seconds += time.perf_counter() - start
    latency.retained += len(items)
    return ids


def check_windows(context_turns: object, context_after: object) -> None:
    """The conversation window of a runner: two integers >= 0 (retain_conversation bounds
    them further)."""
    for name, value in (("context_turns", context_turns), ("context_after", context_after)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}")


def version() -> str:
    return memwire.__version__


def bank_config(
    weights: Sequence[float] | None,
    min_score: float | None,
    near_duplicate: float | None = None,
    prefer_newest: bool | None = None,
) -> dict[str, Any]:
    """The config keys an evaluation bank is given (the options left at None are not set)."""
    given = {
        "fusion_weights": list(weights) if weights is not None else None,
        "min_score": min_score,
        "near_duplicate": near_duplicate,
        "prefer_newest": prefer_newest,
    }
    return {key: value for key, value in given.items() if value is not None}


def recall_config(
    embedder: str, weights: Sequence[float] | None, min_score: float | None, **more: Any
) -> dict[str, Any]:
    """The part of a report's ``config`` every recall benchmark shares, then ``more``."""
    return {
        "embedder": embedder,
        "fusion_weights": list(weights) if weights is not None else "default",
        "min_score": min_score if min_score is not None else "default",
        **{k: ("default" if v is None else v) for k, v in more.items()},
    }


def new_report(
    benchmark: str,
    data: str | Path,
    backend: str,
    config: dict[str, Any],
    rules: dict[str, Summary],
    latency: Latency,
    notes: list[str] | None = None,
) -> Report:
    """A :class:`Report` with the data's digest and this memwire's version filled in."""
    return Report(
        benchmark=benchmark,
        data=str(data),
        data_sha256=file_sha256(data),
        memwire_version=version(),
        backend=backend,
        config=config,
        rules=rules,
        latency=latency,
        notes=notes or [],
    )
