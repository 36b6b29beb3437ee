"""The server's worker threads (memwire.server.threads): a route's blocking call runs off the
event loop, sees the caller's context, and is never abandoned once started."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from pathlib import Path

import pytest
from memwire.server import threads
from memwire.server.runner import recall_threads_for

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
    monkeypatch.setattr(threads.GENERAL, "_pool", pool)
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


def test_a_lane_runs_calls_on_its_own_threads_at_most_its_size_at_once() -> None:
    lane = threads.Lane(1, "memwire-test-lane")
    first_in, release = threading.Event(), threading.Event()
    order: list[str] = []

    def first() -> str:
        first_in.set()
        release.wait(30)
        order.append("first")
        return threading.current_thread().name

    def second() -> str:
        order.append("second")
        return threading.current_thread().name

    async def main() -> tuple[str, str]:
        a = asyncio.ensure_future(threads.in_thread(first, lane=lane))
        while not first_in.is_set():
            await asyncio.sleep(0.001)
        b = asyncio.ensure_future(threads.in_thread(second, lane=lane))
        await asyncio.sleep(0.05)
        assert order == []  # the lane's one thread is busy: the second call waits its turn
        assert threads._handed_off == 2  # both are awaited off the loop (threads.alone)
        release.set()
        return await a, await b

    try:
        names = asyncio.run(main())
    finally:
        lane.pool().shutdown(wait=True)
    assert order == ["first", "second"]
    assert all(name.startswith("memwire-test-lane") for name in names)
    assert threads._handed_off == 0


def test_a_lane_needs_a_thread() -> None:
    with pytest.raises(ValueError, match="at least one thread"):
        threads.Lane(0, "memwire-none")


def test_the_compute_lane_leaves_one_cpu_this_process_may_use_to_the_event_loop() -> None:
    slots = threads.cpu_slots()
    if hasattr(os, "sched_getaffinity"):
        assert slots == len(os.sched_getaffinity(0))
    assert slots >= 1
    assert threads.compute_threads() == max(1, slots - 1)
    assert threads.compute_lane().size == threads.compute_threads()
    assert threads.compute_lane(3).size == 3
    assert threads.compute_lane().name == "memwire-compute"


@pytest.mark.parametrize(("cpus", "lane"), [(1, 1), (2, 1), (8, 7)])
def test_the_compute_lane_has_a_thread_even_on_one_cpu(
    monkeypatch: pytest.MonkeyPatch, cpus: int, lane: int
) -> None:
    monkeypatch.setattr(threads, "cpu_slots", lambda: cpus)
    assert threads.compute_threads() == lane
    assert threads.compute_lane().size == lane


def test_serve_recalls_in_the_compute_lane_on_a_local_store_only(tmp_path: Path) -> None:
    assert recall_threads_for(str(tmp_path / "m.db")) == threads.compute_threads()
    assert recall_threads_for(tmp_path / "m.db") == threads.compute_threads()
    assert recall_threads_for(":memory:") == threads.compute_threads()
    assert recall_threads_for("postgresql://memwire@db.example/memwire") is None
    assert recall_threads_for(" postgres://memwire@db.example/memwire") is None
