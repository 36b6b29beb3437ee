"""Group commit: writes that arrive while another is committing share the next transaction.

A commit costs one fsync of the WAL (``synchronous=FULL``), which on most disks outweighs the
write itself, so one connection committing each retain alone tops out at a few hundred per
second. Here the first caller to find no commit under way leads: it takes every write queued
so far and runs them in one ``BEGIN IMMEDIATE`` ... ``COMMIT``, each inside its own savepoint,
while later callers queue for the next round. A write that raises a memwire error (a conflict,
a space mismatch) is rolled back to its savepoint alone and its caller gets the error; the
others commit. Every caller returns only after the COMMIT that holds its write, so "durable
before acknowledged" holds for each; if the COMMIT fails, every caller of the round gets the
error and nothing of the round is written.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from memwire.errors import MemwireError, StorageError

__all__ = ["GroupCommit"]

T = TypeVar("T")
Transaction = Callable[[sqlite3.Connection], Any]

_SAVEPOINT = "memwire_write"


class _Job(Generic[T]):
    __slots__ = ("done", "error", "fn", "result")

    def __init__(self, fn: Callable[[sqlite3.Connection], T]) -> None:
        self.fn = fn
        self.done = False
        self.result: T | None = None
        self.error: BaseException | None = None


class GroupCommit:
    """Runs write functions through ``run_tx`` (one transaction with retries: the store's
    ``_write``), many per transaction when they arrive together."""

    def __init__(self, run_tx: Callable[[Transaction, str], Any]) -> None:
        self._run_tx = run_tx
        self._queue: list[_Job[Any]] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()

    def pending(self) -> int:
        """Writes waiting for the next round (for tests and diagnostics)."""
        with self._queue_lock:
            return len(self._queue)

    def run(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """``fn``'s result once the transaction holding it has committed."""
        job: _Job[T] = _Job(fn)
        with self._queue_lock:
            self._queue.append(job)
        with self._leader:
            if not job.done:
                with self._queue_lock:
                    batch, self._queue = self._queue, []
                self._commit(batch, what, job)
        if job.error is not None:
            raise job.error
        return job.result  # type: ignore[return-value]

    def _commit(self, batch: list[_Job[Any]], what: str, leader: _Job[Any]) -> None:
        if len(batch) == 1:  # alone: no savepoint needed
            job = batch[0]
            try:
                job.result = self._run_tx(job.fn, what)
            except BaseException as exc:
                job.error = exc
            job.done = True
            return

        def tx(conn: sqlite3.Connection) -> list[tuple[Any, BaseException | None]]:
            outcomes: list[tuple[Any, BaseException | None]] = []
            for job in batch:
                conn.execute(f"SAVEPOINT {_SAVEPOINT}")
                try:
                    outcomes.append((job.fn(conn), None))
                except MemwireError as exc:  # this write only: the others go on
                    conn.execute(f"ROLLBACK TO {_SAVEPOINT}")
                    outcomes.append((None, exc))
                conn.execute(f"RELEASE {_SAVEPOINT}")
            return outcomes

        try:
            outcomes = self._run_tx(tx, what)
        except BaseException as exc:  # nothing of the round was committed
            for job in batch:
                job.error = exc if job is leader else _copy(exc)
                job.done = True
            return
        for job, (result, error) in zip(batch, outcomes, strict=True):
            job.result, job.error, job.done = result, error, True


def _copy(exc: BaseException) -> BaseException:
    """The error each caller of a failed round raises (its own object: callers raise it in
    their own threads)."""
    if isinstance(exc, MemwireError):
        return type(exc)(*exc.args)
    return StorageError("a write could not be committed")
