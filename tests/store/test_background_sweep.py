"""TTL banks are swept on the background thread (issue 18): a recall that meets expired
memories hands the bank to it, so later recalls stop paying for them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwire import Memory
from memwire.errors import NotFoundError
from store_support import StoreFactory


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(store=store_factory.make(tmp_path), backend=backend) as memory:
        yield memory


def _gone(mem: Memory, memory_id: str) -> bool:
    try:
        mem.get(memory_id)
    except NotFoundError:
        return True
    return False


def test_recall_hands_expired_memories_to_the_background_sweep(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    old = mem.retain("the old deploy note", created_at="2001-01-01T00:00:00Z")
    new = mem.retain("the new deploy note")
    assert [h.id for h in mem.recall("deploy note")] == [new]  # filtered before the sweep
    mem._snapshotter.drain()
    assert _gone(mem, old)
    assert mem.get(new).content == "the new deploy note"
    assert mem.sweep() == []  # nothing left for the explicit sweep
    assert [h.id for h in mem.recall("deploy note")] == [new]


def test_no_sweep_without_expired_memories(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    kept = mem.retain("a fresh note")
    requested: list[tuple[str, bool]] = []
    original = mem._snapshotter.request

    def spy(bank: str, sweep: bool = False) -> None:
        requested.append((bank, sweep))
        original(bank, sweep)

    mem._snapshotter.request = spy  # type: ignore[method-assign]
    assert [h.id for h in mem.recall("fresh note")] == [kept]
    assert ("default", True) not in requested


def test_the_timed_sweep_reaches_banks_no_recall_touches(mem: Memory) -> None:
    """A long-lived process honours ``ttl_days`` and ``trash_days`` in every bank on a timer
    (hourly by default; here every 50 ms), with no recall to trigger it."""
    mem.set_config("ttl", {"ttl_days": 30})
    old = mem.retain("the old deploy note", bank="ttl", created_at="2001-01-01T00:00:00Z")
    new = mem.retain("the new deploy note", bank="ttl")
    binned = mem.retain("a note to forget", bank="trash")
    kept = mem.retain("a note to keep", bank="trash")
    assert mem.forget(binned)  # into the trash for the default 30 days
    assert [r.id for r in mem.trash(bank="trash")] == [binned]
    mem.set_config("trash", {"trash_days": 0})  # now past its time
    mem._snapshotter.schedule_sweeps(0.05)
    deadline = time.monotonic() + 120  # a liveness bound, not a speed budget
    while not _gone(mem, old) or mem.trash(bank="trash"):
        assert time.monotonic() < deadline, "the timed sweep never ran"
        time.sleep(0.05)
    assert mem.get(new).content == "the new deploy note"
    assert mem.get(kept).content == "a note to keep"
    assert mem.sweep(dry_run=True) == []
