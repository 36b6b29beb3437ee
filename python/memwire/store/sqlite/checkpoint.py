"""WAL checkpoints on a thread of their own, off the commits that callers wait for.

SQLite in WAL mode appends every commit to the ``-wal`` file and, by default, has the
connection whose commit takes the log past 1,000 pages copy the log back into the database
(a checkpoint: the pages written a second time, then an ``fsync`` of the database) before that
commit returns. So one retain in a few hundred paid for the checkpoint of all of them, and a
bulk write paid for its own: at 100k memories a ``retain_many`` spent ~10% of its time there
(docs/BENCHMARKS.md, "Session 22").

Here the store's writer connection checkpoints only past :data:`WRITER_CHECKPOINT_PAGES` (a
backstop that bounds the log if this thread falls behind or is gone), and a
:class:`Checkpointer` runs a ``PASSIVE`` checkpoint on its own connection once the commits since
the last one changed :data:`CHECKPOINT_ROWS` rows, or once commits have paused for
:data:`CHECKPOINT_IDLE_S`; not while a caller holds it back for the work that follows its commit
(:meth:`Checkpointer.held`), and at the lowest scheduling priority. A passive checkpoint never
waits for readers or the writer: it copies what no reader still needs, and the writer restarts
the log from its start once all of it is copied. Durability does not depend on it: a commit is
on disk when its log frames are (``synchronous=FULL``), and the checkpoint's own connection runs
at ``synchronous=FULL`` too, so the database file is flushed before the log is ever reused. A
checkpoint that fails is logged and retried with the next commits; it never fails a write. The
thread starts with the first commit and ends after :data:`THREAD_EXIT_S` without one (closing
its connection), so an idle process holds neither.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator

__all__ = [
    "CHECKPOINT_IDLE_S",
    "CHECKPOINT_ROWS",
    "HOLD_MAX_S",
    "THREAD_EXIT_S",
    "WRITER_CHECKPOINT_PAGES",
    "Checkpointer",
]

log = logging.getLogger("memwire.store")

WRITER_CHECKPOINT_PAGES = 8192
"""The writer connection's ``wal_autocheckpoint``: past this many log pages (32 MiB at SQLite's
4 KiB page) the committing writer checkpoints itself, as SQLite does at 1,000 by default."""

CHECKPOINT_ROWS = 1000
"""Rows changed by commits since the last checkpoint that start the next one (about a thousand
memories' rows: a few MiB of log)."""

CHECKPOINT_IDLE_S = 1.0
"""Seconds without a commit after which what is left in the log is checkpointed."""

HOLD_MAX_S = 1.0
"""The longest a due checkpoint waits for :meth:`Checkpointer.held` sections to end (writers
that follow one another without a gap would otherwise hold it back until the backstop)."""

THREAD_EXIT_S = 30.0
"""Seconds without a commit after which the thread ends (the next commit starts another)."""


class Checkpointer:
    """Checkpoints the WAL of the database that ``connect`` opens, on a thread of its own.

    The writer calls :meth:`committed` after each commit; a caller with work of its own right
    after a commit wraps commit and work in :meth:`held`; :meth:`close` stops the thread (its
    connection closed before the store's, so that the store's last connection is the one that
    checkpoints and removes the log, as SQLite does at close)."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        rows: int | None = None,
        idle_s: float | None = None,
        exit_s: float | None = None,
    ) -> None:
        """``rows``, ``idle_s``, ``exit_s``: :data:`CHECKPOINT_ROWS`, :data:`CHECKPOINT_IDLE_S`
        and :data:`THREAD_EXIT_S` unless given (read when the checkpointer is made)."""
        self._connect = connect
        self._rows = CHECKPOINT_ROWS if rows is None else rows
        self._idle_s = CHECKPOINT_IDLE_S if idle_s is None else idle_s
        self._exit_s = THREAD_EXIT_S if exit_s is None else exit_s
        self._cv = threading.Condition()
        self._changed = 0  # rows changed by commits since the last checkpoint began
        self._last_commit = time.monotonic()
        self._holds = 0  # callers inside held()
        self._held_back = False  # a due checkpoint waits for the holds to end
        self._thread: threading.Thread | None = None
        self._closed = False
        self.runs = 0
        """Checkpoints run (for tests and diagnostics)."""
        self.failures = 0
        """Checkpoints that failed (each logged at debug level)."""

    @property
    def running(self) -> bool:
        """Whether the thread is alive."""
        with self._cv:
            thread = self._thread
        return thread is not None and thread.is_alive()

    def committed(self, changed: int) -> None:
        """A commit that changed ``changed`` rows is on disk: checkpoint it in time."""
        with self._cv:
            if self._closed:
                return
            self._changed += max(changed, 1)  # a commit of no counted rows still wrote a page
            self._last_commit = time.monotonic()
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memwire-checkpoint", daemon=True
                )
                self._thread.start()
            elif self._changed >= self._rows:
                self._cv.notify()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """No checkpoint starts inside (for up to :data:`HOLD_MAX_S` once one is due): for a
        commit and the work that follows it, a bulk write's rows applied to an index while
        recalls wait. Applies of 10k rows beside the copy took 107-145 ms, held 94-128 (the
        previous main 78-165; docs/BENCHMARKS.md, "Session 22"); after the apply, the copy runs
        beside the next batch's preparation."""
        with self._cv:
            self._holds += 1
        try:
            yield
        finally:
            with self._cv:
                self._holds -= 1
                # Wake the thread only when a checkpoint waits for this: a wake-up per write
                # took the GIL from the writer (single retains ~20% slower in process).
                if not self._holds and self._held_back:
                    self._cv.notify()

    def close(self, wait: bool = True) -> None:
        """Stop the thread, which closes its connection; with ``wait``, once it has (after a
        checkpoint under way). Without: what a store collected unclosed asks."""
        with self._cv:
            self._closed = True
            thread = self._thread
            self._cv.notify()
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()

    def _due(self) -> bool | None:
        """Wait (holding the lock) until a checkpoint is due and not held back: True, or None
        once the thread should end (closed, or idle past ``exit_s``)."""
        due_since: float | None = None
        while not self._closed:
            now = time.monotonic()
            quiet = now - self._last_commit
            if self._changed and (self._changed >= self._rows or quiet >= self._idle_s):
                due_since = now if due_since is None else due_since
                if not self._holds or now - due_since >= HOLD_MAX_S:
                    self._changed, self._held_back = 0, False
                    return True
                self._held_back = True
                wait = HOLD_MAX_S - (now - due_since)
            elif self._changed:
                wait = self._idle_s - quiet
            elif quiet >= self._exit_s:
                return None
            else:
                wait = self._exit_s - quiet
            self._cv.wait(max(wait, 0.001))
        return None

    def _run(self) -> None:
        _yield_the_cpus()
        conn: sqlite3.Connection | None = None
        try:
            while True:
                with self._cv:
                    if self._due() is None:
                        self._thread = None
                        return
                conn = self._checkpoint(conn)
        finally:
            if conn is not None:
                _close(conn)

    def _checkpoint(self, conn: sqlite3.Connection | None) -> sqlite3.Connection | None:
        """One passive checkpoint; the connection to keep for the next (None after a
        failure: the next one opens afresh)."""
        try:
            if conn is None:
                conn = self._connect()
                # The checkpoint flushes the database before the log can be reused.
                conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            self.failures += 1
            log.debug("background checkpoint failed: %r", exc)
            if conn is not None:
                _close(conn)
            return None
        except Exception as exc:  # the store's own open error (a StorageError): the same
            self.failures += 1
            log.debug("background checkpoint could not connect: %r", exc)
            return None
        self.runs += 1
        return conn


def _yield_the_cpus() -> None:
    """Lower this thread's scheduling priority to the lowest (Linux, where a thread has its own
    nice value): a checkpoint is not urgent, so under CPU contention the requests being
    answered go first. (It did not change the recall p99 during a 10k write measured in
    docs/BENCHMARKS.md, "Session 22": that cost was not CPU time.)"""
    if sys.platform != "linux":
        return  # elsewhere the call would lower the whole process
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except OSError as exc:
        log.debug("checkpoint thread priority unchanged: %s", exc)


def _close(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error as exc:
        log.debug("checkpoint connection close failed: %s", exc)
