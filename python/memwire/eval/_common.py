"""Pieces shared by the benchmark runners: timing recall, progress on stderr, the report head."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

import memwire
from memwire.eval.report import Latency
from memwire.memory import Memory
from memwire.records import Hit

T = TypeVar("T")


def progress(
    items: Iterable[T], total: int, label: str, enabled: bool | None = None
) -> Iterator[T]:
    """Yield ``items``, drawing a progress line on stderr when it is a terminal."""
    show = sys.stderr.isatty() if enabled is None else enabled
    step = max(1, total // 200)
    for i, item in enumerate(items, 1):
        if show and (i % step == 0 or i == total):
            width = 30
            done = int(width * i / total) if total else width
            sys.stderr.write(f"\r{label} [{'#' * done}{'.' * (width - done)}] {i}/{total}")
            sys.stderr.flush()
        yield item
    if show:
        sys.stderr.write("\n")


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


def backend_name(memory: Memory) -> str:
    return memory.backend


def version() -> str:
    return memwire.__version__
