"""The background thread outlives one bank's failure (memwire.memory.background)."""

from __future__ import annotations

import threading

import pytest
from memwire.errors import StorageFullError
from memwire.memory.background import Snapshotter

pytestmark = pytest.mark.backend_independent  # no kernel: the thread and its callbacks only


def test_a_failing_bank_does_not_stop_the_work_for_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    done: list[str] = []
    second = threading.Event()

    def build_graph(bank: str) -> None:
        if bank == "broken":
            raise RuntimeError("boom")

    def snapshot(bank: str) -> None:
        done.append(bank)
        if bank == "fine":
            second.set()

    worker = Snapshotter(build_graph, snapshot)
    with caplog.at_level("WARNING", logger="memwire"):
        worker.request("broken")
        worker.request("fine")
        assert second.wait(30), "the thread stopped after the failing bank"
    failures = worker.health().failures
    worker.stop()
    assert done == ["broken", "fine"]  # the failing graph job did not stop its bank's snapshot
    assert "background graph of bank 'broken' failed (boom)" in caplog.text
    assert [(f.bank, f.job, f.error, f.failures) for f in failures] == [
        ("broken", "graph", "boom", 1)
    ]


def test_stop_cancels_the_build_under_way() -> None:
    class Plan:
        cancelled = False

        def build(self) -> bool:
            return True

        def cancel(self) -> None:
            self.cancelled = True

    worker = Snapshotter(lambda bank: None, lambda bank: None)
    plan = Plan()
    assert worker.building(plan)
    worker.stop()
    assert plan.cancelled
    assert not worker.building(Plan())  # no new build once stopping
    worker.request("late")  # ignored after stop, starts no thread


def test_a_failing_job_is_retried_with_backoff_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A snapshot that fails three times is retried (events, not timing: the delays are made
    tiny), logged at WARNING once, reported by health() until it works, then cleared."""
    attempts: list[str] = []
    worked = threading.Event()

    def snapshot(bank: str) -> None:
        attempts.append(bank)
        if len(attempts) <= 3:
            raise StorageFullError("the disk holding the store is full")
        worked.set()

    worker = Snapshotter(lambda bank: None, snapshot)
    worker.retry_base = 0.001
    with caplog.at_level("DEBUG", logger="memwire"):
        worker.request("full")
        assert worked.wait(30), "the failed snapshot was never retried"
        worker.drain()
    health = worker.health()
    worker.stop()
    assert attempts == ["full"] * 4
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert [r.getMessage() for r in warnings] == [
        "background snapshot of bank 'full' failed (the disk holding the store is full); "
        "retrying with backoff"
    ]
    assert "background snapshot of bank 'full' works again" in caplog.text
    assert health.ok and health.failures == () and health.background == "idle"


def test_requests_wait_for_the_retry_instead_of_hammering() -> None:
    """While a bank waits to retry, new requests for it add no attempt (each write after a
    full disk would otherwise retry the snapshot at once)."""
    attempts: list[str] = []
    failed = threading.Event()

    def snapshot(bank: str) -> None:
        attempts.append(bank)
        failed.set()
        raise StorageFullError("full")

    worker = Snapshotter(lambda bank: None, snapshot)
    worker.retry_base = 3600.0  # the retry is not due during this test
    worker.request("b")
    assert failed.wait(30)
    worker.drain()
    for _ in range(5):
        worker.request("b")
    worker.drain()
    health = worker.health()
    worker.stop()
    assert attempts == ["b"]
    assert health.pending == ("b",) and not health.ok
    assert [(f.job, f.failures) for f in health.failures] == [("snapshot", 1)]


def test_the_heap_is_trimmed_after_each_bank(monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot's and a graph's transient copies are given back once a bank's jobs are done
    (memwire._heap), failed ones included."""
    from memwire import _heap

    events: list[str] = []
    monkeypatch.setattr(_heap, "trim", lambda: events.append("trim") or True)

    def snapshot(bank: str) -> None:
        events.append(f"snapshot {bank}")
        if bank == "b":
            raise StorageFullError("full")

    worker = Snapshotter(lambda bank: events.append(f"graph {bank}"), snapshot)
    worker.retry_base = 3600.0
    worker.request("a")
    worker.request("b")
    worker.drain()
    worker.stop()
    assert events == ["graph a", "snapshot a", "trim", "graph b", "snapshot b", "trim"]
