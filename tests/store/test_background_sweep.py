"""TTL banks are swept on the background thread (issue 18): a recall that meets expired
memories hands the bank to it, so later recalls stop paying for them."""

from __future__ import annotations

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
