"""The background thread of a :class:`~memwire.memory.Memory`: snapshots and HNSW graphs are
made off the hot path (docs/storage.md, docs/dense.md), never by a recall, and expired
memories of TTL banks and expired trash are swept there: when a recall meets them (so they
stop costing recalls), with snapshots, and every :data:`SWEEP_EVERY_S` in a long-lived process
(so a bank nobody recalls still loses what its ``ttl_days``/``trash_days`` say it must)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Final

from memwire import _heap
from memwire.memory.health import RETRY_BASE_S, Health, JobLog, retry_delay

if TYPE_CHECKING:
    from memwire._kernel.contract import DenseGraphBuild

__all__ = ["SWEEP_EVERY_S", "Snapshotter"]

log = logging.getLogger("memwire")

# How often a running background thread sweeps every bank of the store (TTL expiry and expired
# trash). Hourly: a day-granular retention setting is honoured within the hour, and a store of
# a thousand banks costs a thousand small reads an hour.
SWEEP_EVERY_S: Final = 3600.0
# What ``_next`` returns when the timed sweep is due: list the banks (outside ``_cv``: it reads
# the store), then queue a sweep of each.
_ALL_BANKS: Final = "\x00all banks"


class Snapshotter:
    """A daemon thread that keeps banks' indexes in shape off the hot path: it builds the HNSW
    graph of a bank above `DENSE_GRAPH_MIN` vectors (docs/dense.md), and writes snapshots of
    banks with many unsnapshotted changes or with a graph no snapshot has yet; asked to, it
    sweeps a bank's expired memories first. With :meth:`schedule_sweeps` it also sweeps every
    bank that ``banks`` lists periodically (:data:`SWEEP_EVERY_S`).

    Supervised: a job that raises is logged (at WARNING once per bank and job, see
    :class:`~memwire.memory.health.JobLog`) and the bank is retried after a delay that doubles
    with each failure in a row (``retry_base`` s up to 5 min); the other jobs of the bank and
    every other bank go on, and :meth:`health` reports it."""

    def __init__(
        self,
        build_graph: Callable[[str], None],
        snapshot: Callable[[str], None],
        sweep: Callable[[str], None] | None = None,
        banks: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        self._build_graph = build_graph
        self._snapshot = snapshot
        self._sweep = sweep
        self._banks = banks if sweep is not None else None
        self.sweep_every = SWEEP_EVERY_S
        self._sweep_at: float | None = None  # monotonic due time of the timed sweep
        self._pending: list[str] = []
        self._sweeps: set[str] = set()  # pending banks to sweep first
        self._only_sweep: set[str] = set()  # pending banks asked for a sweep alone
        self._busy = False  # a bank is being worked on
        self._cv = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._build: DenseGraphBuild | None = None  # the graph being built, cancelled by stop()
        self.jobs = JobLog()
        self.retry_base = RETRY_BASE_S
        self._retry_at: dict[str, float] = {}  # banks waiting to retry: monotonic due time
        self._working: tuple[str, float] | None = None  # bank, monotonic start

    def request(self, bank: str, sweep: bool = False, only_sweep: bool = False) -> None:
        """Work on ``bank``: its graph and snapshot (and first a sweep, with ``sweep``), or
        with ``only_sweep`` just the sweep (unless the bank is asked for more meanwhile)."""
        with self._cv:
            if self._stop:
                return
            if sweep or only_sweep:
                self._sweeps.add(bank)
            if only_sweep and bank not in self._pending and bank not in self._retry_at:
                self._only_sweep.add(bank)
            elif not only_sweep:
                self._only_sweep.discard(bank)
            if bank in self._pending or bank in self._retry_at:  # a retry is already due later
                return
            self._pending.append(bank)
            self._start()
            self._cv.notify()

    def schedule_sweeps(self, every: float = SWEEP_EVERY_S) -> None:
        """Sweep every bank that ``banks`` lists every ``every`` seconds, the first time
        ``every`` seconds from now (starting the thread)."""
        if self._banks is None:
            raise ValueError("no sweep or bank listing to schedule")
        with self._cv:
            if self._stop:
                return
            self.sweep_every = every
            self._sweep_at = time.monotonic() + every
            self._start()
            self._cv.notify()

    def _start(self) -> None:
        """Start the thread if it is not running (holding ``_cv``)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memwire-snapshot", daemon=True)
            self._thread.start()

    def _next(self) -> str | None:
        """The next bank to work on (holding ``_cv``), waiting for one; None once stopping."""
        while not self._stop:
            now = time.monotonic()
            for bank, due in list(self._retry_at.items()):
                if due <= now:
                    del self._retry_at[bank]
                    if bank not in self._pending:
                        self._pending.append(bank)
            if self._sweep_at is not None and self._sweep_at <= now:
                self._sweep_at = now + self.sweep_every
                return _ALL_BANKS
            if self._pending:
                return self._pending.pop(0)
            wait = min(self._retry_at.values(), default=now + 3600) - now
            if self._sweep_at is not None:
                wait = min(wait, self._sweep_at - now)
            self._cv.wait(timeout=max(wait, 0.001))
        return None

    def _run(self) -> None:
        while True:
            with self._cv:
                bank = self._next()
                if bank is None:
                    return
                if bank != _ALL_BANKS:
                    sweep = bank in self._sweeps
                    self._sweeps.discard(bank)
                    only = bank in self._only_sweep
                    self._only_sweep.discard(bank)
                    self._busy = True
                    self._working = (bank, time.monotonic())
            if bank == _ALL_BANKS:
                self._queue_sweeps()
                continue
            failures = 0
            try:
                jobs = [] if only else [("graph", self._build_graph), ("snapshot", self._snapshot)]
                if sweep and self._sweep is not None:
                    jobs.insert(0, ("sweep", self._sweep))
                for job, run in jobs:
                    # Each job on its own: one that fails must not stop the others, nor end
                    # the thread for every bank.
                    try:
                        run(bank)
                    except Exception as exc:
                        failures = max(failures, self.jobs.failed(bank, job, exc))
                        if job == "sweep":
                            with self._cv:
                                self._sweeps.add(bank)  # retried with the bank
                    else:
                        self.jobs.succeeded(bank, job)
                # A snapshot's bytes (twice the index, briefly) and a graph build's copies
                # are freed by now: give them back rather than let the heap keep them.
                _heap.trim()
            finally:
                with self._cv:
                    if failures and not self._stop:
                        due = time.monotonic() + retry_delay(failures, self.retry_base)
                        self._retry_at[bank] = due
                    self._busy = False
                    self._working = None
                    self._cv.notify_all()

    def _queue_sweeps(self) -> None:
        """The timed sweep: a sweep of every bank ``banks`` lists, queued behind the work
        already pending. A failure to list them is logged and retried at the next period."""
        assert self._banks is not None
        try:
            names = list(self._banks())
        except Exception as exc:
            log.warning(
                "timed sweep: the banks could not be listed (%s); next in %.0f s",
                exc,
                self.sweep_every,
            )
            return
        for name in names:
            self.request(name, only_sweep=True)

    def health(self) -> Health:
        """The thread's state, the bank it works on and the jobs that failed."""
        with self._cv:
            thread, working = self._thread, self._working
            pending = tuple(dict.fromkeys([*self._pending, *self._retry_at]))
            if self._stop:
                state = "stopped"
            elif thread is not None and not thread.is_alive():
                state = "dead"
            else:
                state = "working" if working is not None else "idle"
        return Health(
            background=state,
            working_on=None if working is None else working[0],
            working_for_s=None if working is None else time.monotonic() - working[1],
            pending=pending,
            failures=self.jobs.failures(),
        )

    def drain(self) -> None:
        """Wait until every requested bank has been worked on (tests, benchmarks); banks
        waiting to retry a failed job are not waited for."""
        with self._cv:
            while (self._pending or self._busy) and not self._stop:
                self._cv.wait()

    def building(self, plan: DenseGraphBuild | None) -> bool:
        """Record the graph being built (None when done); False once stopping."""
        with self._cv:
            if self._stop and plan is not None:
                return False
            self._build = plan
            return True

    def stop(self) -> None:
        """Stop the thread, abandoning a graph build under way (nothing half-built is kept)."""
        with self._cv:
            self._stop = True
            if self._build is not None:
                self._build.cancel()
            self._cv.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
