"""What :meth:`Memory.health` reports: the background thread's state, the jobs that failed
(docs/storage.md, "Background work") and committed writes the store found missing at open
("Loss at open"). :class:`JobLog` is where the thread records them: it
logs a job's first failure in a row at WARNING, the repeats at DEBUG, and its recovery at INFO,
so a full disk gives one warning per bank, not one per attempt."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from memwire import _dates
from memwire.errors import MemwireError
from memwire.store.loss import StoreLoss

__all__ = ["STUCK_AFTER_S", "Health", "JobFailure", "JobLog", "retry_delay"]

log = logging.getLogger("memwire")

STUCK_AFTER_S = 900.0
"""A bank worked on longer than this is reported stuck (a 100k graph builds in about a minute)."""
RETRY_BASE_S = 1.0
RETRY_MAX_S = 300.0


def retry_delay(failures: int, base: float = RETRY_BASE_S) -> float:
    """Seconds before retrying a bank whose jobs failed ``failures`` times in a row."""
    return float(min(base * 2 ** max(failures - 1, 0), RETRY_MAX_S))


@dataclass(frozen=True)
class JobFailure:
    """A background job of one bank that failed its last attempt."""

    bank: str
    job: str
    """``"sweep"`` (expired memories), ``"graph"`` (the HNSW build) or ``"snapshot"``."""
    error: str
    """The last error's message (opaque for storage errors, like every memwire message)."""
    failures: int
    """Attempts failed in a row."""
    since: str
    """When the first of them failed (ISO 8601, UTC)."""


@dataclass(frozen=True)
class Health:
    """The state of a Memory's background work (snapshots, HNSW graphs, TTL sweeps)."""

    background: str
    """``"idle"`` (no thread yet, or waiting for work), ``"working"``, ``"stopped"`` (closed)
    or ``"dead"`` (the thread ended on its own: nothing is snapshotted any more)."""
    working_on: str | None
    """The bank being worked on, if any."""
    working_for_s: float | None
    """For how long, in seconds."""
    pending: tuple[str, ...]
    """Banks waiting for the thread (including those waiting to retry a failed job)."""
    failures: tuple[JobFailure, ...]
    """Jobs whose last attempt failed; each is retried with a growing delay (up to 5 min)."""
    loss: StoreLoss | None = None
    """Committed writes the store found missing when it was opened (kept until cleared with
    ``memwire doctor --clear-loss``); None when none were, or the store cannot tell."""

    @property
    def stuck(self) -> bool:
        """A bank has been worked on for longer than :data:`STUCK_AFTER_S`."""
        return self.working_for_s is not None and self.working_for_s > STUCK_AFTER_S

    @property
    def ok(self) -> bool:
        """No failed job, nothing stuck, the thread alive (or not needed), and no loss."""
        return (
            not self.failures and not self.stuck and self.background != "dead" and self.loss is None
        )


class JobLog:
    """The failing background jobs, by bank and job; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failing: dict[tuple[str, str], JobFailure] = {}

    def failed(self, bank: str, job: str, exc: BaseException) -> int:
        """Record a failure; returns how many in a row this bank has now (its worst job)."""
        message = str(exc) or type(exc).__name__
        with self._lock:
            before = self._failing.get((bank, job))
            count = 1 if before is None else before.failures + 1
            since = _dates.format_utc(_dates.now_utc()) if before is None else before.since
            self._failing[(bank, job)] = JobFailure(bank, job, message, count, since)
            worst = max(f.failures for (b, _), f in self._failing.items() if b == bank)
        if before is None:
            log.warning(
                "background %s of bank %r failed (%s); retrying with backoff",
                job,
                bank,
                message,
                exc_info=not isinstance(exc, MemwireError),  # memwire's own say what failed
            )
        else:
            log.debug("background %s of bank %r failed again (%d): %s", job, bank, count, message)
        return worst

    def succeeded(self, bank: str, job: str) -> None:
        with self._lock:
            before = self._failing.pop((bank, job), None)
        if before is not None:
            log.info("background %s of bank %r works again", job, bank)

    def failures(self) -> tuple[JobFailure, ...]:
        with self._lock:
            return tuple(self._failing.values())
