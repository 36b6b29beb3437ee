"""`memwire serve` shortens the GIL switch interval, so a recall beside a CPU-bound write does
not wait CPython's default 5 ms at each of its many GIL reacquisitions, and shorter still while
a batch write runs."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwire import _heap
from memwire.server import runner, threads

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("interval")
def test_tune_threads_sets_a_shorter_switch_interval() -> None:
    sys.setswitchinterval(0.005)
    runner.tune_threads()
    assert sys.getswitchinterval() == runner.SWITCH_INTERVAL_S
    assert runner.SWITCH_INTERVAL_S < 0.005


class _Tuned(Exception):
    pass


class _Served(Exception):
    pass


def test_serve_tunes_threads_before_it_serves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def tuned() -> None:
        raise _Tuned

    def served(*args: object, **kwargs: object) -> None:
        raise _Served

    monkeypatch.setattr(_heap, "tune_for_server", lambda: True)
    monkeypatch.setattr(runner, "tune_threads", tuned)
    monkeypatch.setattr(runner, "make_server", served)  # without the call: _Served, no hang
    with pytest.raises(_Tuned):
        runner.serve(tmp_path / "m.db")


@pytest.mark.usefixtures("interval")
def test_batch_writes_shorten_it_while_they_run() -> None:
    short = pytest.approx(threads.BATCH_SWITCH_INTERVAL_S, abs=2e-6)  # kept in microseconds
    sys.setswitchinterval(runner.SWITCH_INTERVAL_S)
    with threads.batch_write():
        assert sys.getswitchinterval() == short
        with threads.batch_write():  # a second batch at once
            assert sys.getswitchinterval() == short
        assert sys.getswitchinterval() == short
    assert sys.getswitchinterval() == runner.SWITCH_INTERVAL_S  # the last one restores it
    with pytest.raises(_Served), threads.batch_write():
        raise _Served
    assert sys.getswitchinterval() == runner.SWITCH_INTERVAL_S
    sys.setswitchinterval(0.0001)  # already shorter: kept
    with threads.batch_write():
        assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
    assert sys.getswitchinterval() == pytest.approx(0.0001, abs=2e-6)
