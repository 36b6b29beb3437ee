"""The background thread of a :class:`~memwire.memory.Memory`: snapshots and HNSW graphs are
made off the hot path (docs/storage.md, docs/dense.md), never by a recall, and expired
memories of TTL banks are swept there, so they stop costing recalls."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwire._kernel.contract import DenseGraphBuild

__all__ = ["Snapshotter"]

log = logging.getLogger("memwire")


class Snapshotter:
    """A daemon thread that keeps banks' indexes in shape off the hot path: it builds the HNSW
    graph of a bank above the exact dense threshold (docs/dense.md), and writes snapshots of
    banks with many unsnapshotted changes or with a graph no snapshot has yet; asked to, it
    sweeps a bank's expired memories first."""

    def __init__(
        self,
        build_graph: Callable[[str], None],
        snapshot: Callable[[str], None],
        sweep: Callable[[str], None] | None = None,
    ) -> None:
        self._build_graph = build_graph
        self._snapshot = snapshot
        self._sweep = sweep
        self._pending: list[str] = []
        self._sweeps: set[str] = set()  # pending banks to sweep first
        self._busy = False  # a bank is being worked on
        self._cv = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._build: DenseGraphBuild | None = None  # the graph being built, cancelled by stop()

    def request(self, bank: str, sweep: bool = False) -> None:
        with self._cv:
            if self._stop:
                return
            if sweep:
                self._sweeps.add(bank)
            if bank in self._pending:
                return
            self._pending.append(bank)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memwire-snapshot", daemon=True
                )
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                bank = self._pending.pop(0)
                sweep = bank in self._sweeps
                self._sweeps.discard(bank)
                self._busy = True
            try:
                if sweep and self._sweep is not None:
                    self._sweep(bank)
                self._build_graph(bank)
                self._snapshot(bank)
            except Exception:  # one bank's failure must not end the thread for every bank
                log.exception("background work on bank %r failed", bank)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def drain(self) -> None:
        """Wait until every requested bank has been worked on (tests, benchmarks)."""
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
