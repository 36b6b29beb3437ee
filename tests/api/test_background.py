"""The background thread outlives one bank's failure (memwire.memory.background)."""

from __future__ import annotations

import threading

import pytest
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
    with caplog.at_level("ERROR", logger="memwire"):
        worker.request("broken")
        worker.request("fine")
        assert second.wait(30), "the thread stopped after the failing bank"
    worker.stop()
    assert done == ["fine"]
    assert "background work on bank 'broken' failed" in caplog.text


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
