"""The server's worker threads: where a route runs its blocking :class:`~memwire.Memory` call.

A :class:`Lane` is a :class:`~concurrent.futures.ThreadPoolExecutor` started on first use,
awaited through ``asyncio.wrap_future`` (what ``run_in_executor`` does): :data:`GENERAL` for
every route's call, and the server's compute lane (:func:`compute_lane`, one thread per CPU but
the event loop's) for recalls of banks already in memory on a local store, which only compute.
It replaces ``anyio.to_thread.run_sync``, which did the same job at a higher price on the event
loop, the one thread every request shares: a capacity limiter, a run-variable lookup and a
cancel scope per call (the loop executed 16% more instructions per recall at 10k;
docs/BENCHMARKS.md, "Session 12"), and its asyncio backend, 1.2 MiB of resident memory the
server no longer loads.

What is kept from anyio's semantics: at most :data:`WORKERS` general calls run at once (anyio's
default limit, 40; more wait their turn), the caller's context variables are seen by the call,
and a call that has started is never abandoned: if the awaiting request is cancelled, it still
waits for the call to return before the cancellation goes on, so a shutdown never closes the
store under a running call. A call cancelled before any worker picked it up never runs.

One exception: a recall of a bank whose index is already loaded runs on the event loop itself
when no other request needs the loop: it is the only request the server is answering, or
every other one is waiting on a worker thread (:func:`alone`). Handing it to a
worker and back costs CPU the recall does not need: at 10k memories, one keep-alive client,
the server spent 1.16-1.53 ms of CPU per recall without the hop against 1.52-2.17 ms with it
(five alternating pairs; docs/BENCHMARKS.md, "Session 14"). Nothing else is waiting for the
loop meanwhile, and as soon as another request needs the loop (it is being read, or its call
has returned and its answer is to be sent) recalls go back to the workers, so that the loop
never holds other requests behind a recall that may be slow (a MiniLM query embedding, which
workers run in parallel). Beside a request waiting on a worker (a large ``retain_many``) the
hop is dearer still: each hand-over of the GIL between threads waits for the thread running
Python to yield it, up to the switch interval; recalls during a 10,000-item write had a p99
of 11.1-11.6 ms through workers, 9.7-10.5 ms on the loop (docs/BENCHMARKS.md, "Session 18").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TypeVar

__all__ = [
    "BATCH_SWITCH_INTERVAL_S",
    "GENERAL",
    "WORKERS",
    "Lane",
    "alone",
    "batch_write",
    "compute_lane",
    "compute_threads",
    "cpu_slots",
    "in_thread",
]

T = TypeVar("T")

WORKERS = 40
"""Calls run at once (anyio's default thread limit, which the server used before)."""


class Lane:
    """A pool of ``size`` threads named ``name-N``, started on first use: where
    :func:`in_thread` runs a call (:data:`GENERAL` unless the caller names another)."""

    def __init__(self, size: int, name: str) -> None:
        if size < 1:
            raise ValueError(f"a lane needs at least one thread, got {size}")
        self.size = size
        self.name = name
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def pool(self) -> concurrent.futures.ThreadPoolExecutor:
        if self._pool is None:
            with self._lock:
                if self._pool is None:
                    self._pool = concurrent.futures.ThreadPoolExecutor(
                        max_workers=self.size, thread_name_prefix=self.name
                    )
        return self._pool


GENERAL = Lane(WORKERS, "memwire-worker")
"""Every route's blocking call, unless the route runs it in a lane of its own."""


def cpu_slots() -> int:
    """The CPUs this process may run on (its affinity, which containers narrow), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity on this platform
        return max(1, os.cpu_count() or 1)


def compute_threads() -> int:
    """The compute lane's default size: one thread per CPU this process may use but one, which
    is left to the event loop (the thread that reads and answers every request), at least 1.

    Threads that only compute, beyond the CPUs left to them, would not run more of these calls
    at once, only make them take the GIL from each other, and from the event loop, more often:
    at 100k memories with 8 clients on 2 cores, recalls through 2 threads (one per CPU) served
    6-18% more per second than through the 40 general workers (docs/BENCHMARKS.md, "Session
    19"), and through 1 thread 2-12% more again (four alternating runs, "Session 20")."""
    return max(1, cpu_slots() - 1)


def compute_lane(size: int | None = None) -> Lane:
    """A lane for calls that compute and do not wait on I/O (a recall of a bank already in
    memory, on a store whose reads are local): :func:`compute_threads` threads unless ``size``
    says."""
    return Lane(compute_threads() if size is None else size, "memwire-compute")


_handed_off = 0
"""Calls awaited through :func:`in_thread` now: their requests need the loop only once the
call returns (changed on the event loop only, so without a lock)."""


async def in_thread(fn: Callable[..., T], *args: object, lane: Lane | None = None) -> T:
    """``fn(*args)`` on a thread of ``lane`` (:data:`GENERAL` by default), awaited without
    blocking the event loop."""
    global _handed_off
    context = contextvars.copy_context()
    job = (lane or GENERAL).pool().submit(context.run, fn, *args)
    _handed_off += 1
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        # Cancelling the wrapper cancelled the job if no worker had begun it; a started call
        # cannot be stopped, so the cancellation waits for it (never abandoned, see above).
        while not job.done():
            try:
                await asyncio.wrap_future(job)
            except asyncio.CancelledError:
                continue
            except Exception:  # the call's own failure: the request is being cancelled anyway
                break
        raise
    finally:
        _handed_off -= 1


def alone(requests_in_flight: Callable[[], int] | None) -> bool:
    """Whether the request asking is the only one in flight that needs the event loop: every
    other is awaiting :func:`in_thread` (``requests_in_flight``: the HTTP server's count,
    including the asking one; None: not known, so not alone). A cheap call of a request alone
    may run on the event loop: no other request waits for it, and one that arrives meanwhile
    is read as soon as the call returns (a recall at 10k: ~0.5 ms in process)."""
    return requests_in_flight is not None and requests_in_flight() - _handed_off <= 1


BATCH_SWITCH_INTERVAL_S = 0.0002
"""The GIL switch interval while a batch write runs (see :func:`batch_write`)."""

_batches = 0
_interval_before = 0.0


@contextlib.contextmanager
def batch_write() -> Iterator[None]:
    """Around a batch write's call (a ``retain_many``): while one runs, the interpreter's
    switch interval is :data:`BATCH_SWITCH_INTERVAL_S`, then back to what it was. The write's
    thread runs Python for hundreds of milliseconds, and every other request gives the GIL up
    at each kernel call, SQLite step and socket call, then waits to get it back until the
    writer is made to yield: a shorter interval shortens each of those waits. Outside batch
    writes the serving interval stays (switching more often would cost concurrent recalls a
    few percent). Entered on the event loop only, so the count needs no lock."""
    global _batches, _interval_before
    if _batches == 0:
        _interval_before = sys.getswitchinterval()
        sys.setswitchinterval(min(_interval_before, BATCH_SWITCH_INTERVAL_S))
    _batches += 1
    try:
        yield
    finally:
        _batches -= 1
        if _batches == 0:
            sys.setswitchinterval(_interval_before)
