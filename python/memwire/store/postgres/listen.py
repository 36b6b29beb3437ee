"""Hearing other processes' writes: a thread that LISTENs on the store's notification channel
on a connection of its own and hands each ``(bank id, seq)`` to a callback, so that a replica
brings the bank's derived index up to date before the next recall asks for it.

Notifications only make replicas current sooner; nothing depends on them (a recall still reads
the bank's head first). A notification can be missed (the connection dropped, the process was
busy), so the callback also gets ``(None, 0)``, "check every bank", after every (re)connection
and every ``poll_interval`` seconds: polling is the fallback. A lost connection is reopened with
jittered exponential backoff (0.5 s doubling to 30 s).
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

__all__ = ["Listener", "OnChange"]

log = logging.getLogger("memwire.store")

OnChange = Callable[[int | None, int], None]
"""``(bank_id, seq)``: the bank moved to ``seq`` (0: it was deleted); ``(None, 0)``: any bank
may have moved."""

_WAKE_S = 0.25  # how often the thread checks whether it was stopped
_BACKOFF_MIN_S = 0.5
_BACKOFF_MAX_S = 30.0


def _parse(payload: str) -> tuple[int, int] | None:
    parts = payload.split()
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


class Listener:
    """The listening thread of one store. ``connect`` opens a new connection (autocommit);
    ``channel``: the store's channel; ``on_change``: called from this thread, its errors
    logged at debug level and otherwise ignored; ``sent_here(pid)``: whether a notification
    from server process ``pid`` was sent by this process's own write (skipped: the writer
    applies its own writes)."""

    def __init__(
        self,
        connect: Callable[[], psycopg.Connection[Any]],
        channel: str,
        on_change: OnChange,
        poll_interval: float,
        sent_here: Callable[[int], bool] = lambda pid: False,
    ) -> None:
        self._connect = connect
        self._channel = channel
        self._on_change = on_change
        self._poll = poll_interval
        self._sent_here = sent_here
        self._stop = threading.Event()
        self.sessions = 0
        """How many times the thread has started listening (a reconnection adds one)."""
        self.backend_pid: int | None = None
        """The server process of the listening connection, while it listens."""
        self._thread = threading.Thread(target=self._run, name="memwire-listen", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and close the connection (waits for the thread, at most a few
        seconds: a callback in progress finishes first)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=10)

    def _deliver(self, bank_id: int | None, seq: int) -> None:
        try:
            self._on_change(bank_id, seq)
        except Exception as exc:  # the next notification, poll or recall tries again
            log.debug("catching up after a change notification failed: %r", exc)

    def _run(self) -> None:
        backoff = _BACKOFF_MIN_S
        while not self._stop.is_set():
            try:
                conn = self._connect()
            except Exception as exc:
                log.debug("change listener could not connect: %r", exc)
            else:
                try:
                    self._listen(conn)
                    backoff = _BACKOFF_MIN_S
                except Exception as exc:
                    log.debug("change listener lost its connection: %r", exc)
                finally:
                    self.backend_pid = None
                    with contextlib.suppress(Exception):
                        conn.close()
            if self._stop.wait(backoff * (0.5 + random.random())):
                return
            backoff = min(backoff * 2, _BACKOFF_MAX_S)

    def _listen(self, conn: psycopg.Connection[Any]) -> None:
        from psycopg import sql

        conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
        self.backend_pid = conn.info.backend_pid
        self.sessions += 1
        # Whatever was written while nobody listened (or before the first LISTEN).
        self._deliver(None, 0)
        next_poll = time.monotonic() + self._poll
        while not self._stop.is_set():
            wait = max(0.0, min(_WAKE_S, next_poll - time.monotonic()))
            for note in conn.notifies(timeout=wait):
                if self._sent_here(note.pid):
                    continue
                found = _parse(note.payload)
                self._deliver(*(found if found is not None else (None, 0)))
                if self._stop.is_set():
                    return
            if time.monotonic() >= next_poll:
                self._deliver(None, 0)
                next_poll = time.monotonic() + self._poll
