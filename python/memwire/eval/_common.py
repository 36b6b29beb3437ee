"""Pieces shared by the benchmark runners: timing recall, progress on stderr, the report head."""

from __future__ import annotations

import time
from typing import Any

import memwire
from memwire._progress import track as progress
from memwire.eval.report import Latency
from memwire.memory import Memory
from memwire.records import Hit

__all__ = ["progress", "timed_recall", "timed_retain", "version"]


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


def version() -> str:
    return memwire.__version__
