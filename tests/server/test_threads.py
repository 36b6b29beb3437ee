"""The server's worker threads (memwire.server.threads): a route's blocking call runs off the
event loop, sees the caller's context, and is never abandoned once started."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading

import pytest
from memwire.server import threads

REQUEST = contextvars.ContextVar("request", default="none")


def test_a_call_runs_on_a_worker_and_returns_its_value() -> None:
    async def main() -> tuple[str, str, int]:
        REQUEST.set("r-1")
        return await threads.in_thread(
            lambda a, b: (threading.current_thread().name, REQUEST.get(), a + b), 2, 3
        )

    name, seen, total = asyncio.run(main())
    assert name.startswith("memwire-worker")
    assert name != threading.main_thread().name
    assert seen == "r-1"  # the caller's context variables
    assert total == 5


def test_a_calls_error_reaches_the_caller() -> None:
    def fail() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        asyncio.run(threads.in_thread(fail))


def test_a_started_call_is_waited_for_when_the_request_is_cancelled() -> None:
    started, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow() -> str:
        started.set()
        release.wait(30)
        finished.append("done")
        return "done"

    async def main() -> None:
        task = asyncio.ensure_future(threads.in_thread(slow))
        while not started.is_set():
            await asyncio.sleep(0.001)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # still waiting for the running call
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert finished == ["done"]  # the cancellation went on only once the call returned

    asyncio.run(main())


def test_a_call_cancelled_before_it_started_never_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(threads, "_pool", pool)
    busy, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def occupy() -> None:
        busy.set()
        release.wait(30)

    async def main() -> None:
        first = asyncio.ensure_future(threads.in_thread(occupy))
        while not busy.is_set():
            await asyncio.sleep(0.001)
        queued = asyncio.ensure_future(threads.in_thread(ran.append, "queued"))
        await asyncio.sleep(0.01)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        await first

    try:
        asyncio.run(main())
    finally:
        pool.shutdown(wait=True)
    assert ran == []
