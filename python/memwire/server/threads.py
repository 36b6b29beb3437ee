"""The server's worker threads: where a route runs its blocking :class:`~memwire.Memory` call.

One :class:`~concurrent.futures.ThreadPoolExecutor` per process, started on first use, awaited
through ``asyncio.wrap_future`` (what ``run_in_executor`` does). It replaces
``anyio.to_thread.run_sync``, which did the same job at a higher price on the event loop, the
one thread every request shares: a capacity limiter, a run-variable lookup and a cancel scope
per call (the loop executed 16% more instructions per recall at 10k; docs/BENCHMARKS.md,
"Session 12"), and its asyncio backend, 1.2 MiB of resident memory the server no longer loads.

What is kept from anyio's semantics: at most :data:`WORKERS` calls run at once (anyio's default
limit, 40; more wait their turn), the caller's context variables are seen by the call, and a
call that has started is never abandoned: if the awaiting request is cancelled, it still waits
for the call to return before the cancellation goes on, so a shutdown never closes the store
under a running call. A call cancelled before any worker picked it up never runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["WORKERS", "in_thread"]

T = TypeVar("T")

WORKERS = 40
"""Calls run at once (anyio's default thread limit, which the server used before)."""

_pool: concurrent.futures.ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _workers() -> concurrent.futures.ThreadPoolExecutor:
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = concurrent.futures.ThreadPoolExecutor(
                    max_workers=WORKERS, thread_name_prefix="memwire-worker"
                )
    return _pool


async def in_thread(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` on a worker thread, awaited without blocking the event loop."""
    context = contextvars.copy_context()
    job = _workers().submit(context.run, fn, *args)
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
