"""A TTL bank's expired, not yet swept memories are kept out of recall by the kernel (issue 18,
memory/expiry.py): never returned by any stream, on every store and both kernels, without the
store listing the bank's live memories on each recall."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from memwire import Memory, _dates
from memwire.store import Expiring, Store
from store_support import StoreFactory

OLD = "2001-01-01T00:00:00Z"


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(store=store_factory.make(tmp_path), backend=backend) as memory:
        memory._snapshotter._sweep = None  # the expired memories stay unswept
        yield memory


class Clock:
    """``now`` for the TTL cutoff, moved by the test."""

    def __init__(self) -> None:
        self.now = datetime.now(timezone.utc)

    def __call__(self) -> datetime:
        return self.now


def _count_expiring(store: Store) -> list[int]:
    """Wrap ``store.expiring`` to count its calls (the list's length)."""
    calls: list[int] = []
    original = store.expiring

    def counted(bank_id: int, cutoff: str) -> Expiring:
        calls.append(bank_id)
        return original(bank_id, cutoff)

    store.expiring = counted  # type: ignore[method-assign]
    return calls


def _ids(mem: Memory, query: str, **kw: object) -> set[str]:
    return {h.id for h in mem.recall(query, limit=100, min_score=0, **kw)}  # type: ignore[arg-type]


def test_an_expired_memory_is_never_recalled_by_any_stream(mem: Memory) -> None:
    old = mem.retain("zanzibar ferry timetable for the deploy", tags=["t"], created_at=OLD)
    new = mem.retain("the deploy ferry timetable", tags=["t"])
    other = mem.retain("a deploy checklist", tags=["u"])
    # Lexical and dense streams, the lookup gate (a word only the old memory has), tag filters.
    assert _ids(mem, "ferry timetable deploy") == {old, new, other}
    mem.set_config("default", {"ttl_days": 30})
    assert _ids(mem, "ferry timetable deploy") == {new, other}
    for query in ("zanzibar", "zanzibar ferry", "zanzibar ferry timetable for the deploy"):
        assert old not in _ids(mem, query)
    assert _ids(mem, "ferry timetable", tags=["t"]) == {new}
    assert _ids(mem, "deploy", exclude_tags=["u"]) == {new}
    assert _ids(mem, "deploy", exclude_tags=["t"]) == {other}
    mem.set_config("default", {"ttl_days": 365 * 100})  # the cutoff moves back: visible again
    assert old in _ids(mem, "zanzibar")
    mem.set_config("default", {"ttl_days": None})
    assert _ids(mem, "ferry timetable deploy") == {old, new, other}


def test_memories_expire_as_time_passes_without_a_write(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(_dates, "now_utc", clock)
    mem.set_config("default", {"ttl_days": 30})
    soon = mem.retain("harbour note one", created_at=clock.now - timedelta(days=29))
    later = mem.retain("harbour note two", created_at=clock.now - timedelta(days=10))
    calls = _count_expiring(mem._store)
    assert _ids(mem, "harbour note") == {soon, later}
    assert len(calls) == 1
    clock.now += timedelta(hours=1)
    assert _ids(mem, "harbour note") == {soon, later}
    assert len(calls) == 1  # nothing came due: the store is not asked again
    clock.now += timedelta(days=2)
    assert _ids(mem, "harbour note") == {later}
    assert len(calls) == 2
    assert _ids(mem, "harbour note") == {later}
    assert len(calls) == 2
    clock.now += timedelta(days=20)
    assert _ids(mem, "harbour note") == set()
    clock.now -= timedelta(days=23)  # a clock set back: the cutoff moves back
    assert _ids(mem, "harbour note") == {soon, later}


def test_a_backdated_retain_is_hidden_at_once(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    new = mem.retain("lighthouse keeper log")
    assert _ids(mem, "lighthouse log") == {new}
    old = mem.retain_many(
        [
            {"content": "lighthouse lamp log", "created_at": OLD},
            {"content": "lighthouse fog log"},
        ]
    )
    assert _ids(mem, "lighthouse log") == {new, old[1]}
    mem.forget(new)
    assert _ids(mem, "lighthouse log") == {old[1]}


def test_the_sweep_leaves_no_filter(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    mem.retain("an old canal note", created_at=OLD)
    kept = mem.retain("a new canal note")
    assert _ids(mem, "canal note") == {kept}
    state = mem._bank("default")
    assert state.expiry.expired(mem._store, state.bank_id, _dates.cutoff(30))
    assert len(mem.sweep()) == 1
    assert not state.expiry.expired(mem._store, state.bank_id, _dates.cutoff(30))
    assert _ids(mem, "canal note") == {kept}


def test_the_recall_path_does_not_list_the_bank(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    mem.retain("an old river note", created_at=OLD)
    kept = mem.retain("a new river note")

    def refused(*args: object) -> object:
        raise AssertionError("recall listed the bank's live memories")

    mem._store.allowed = refused  # type: ignore[method-assign]
    assert _ids(mem, "river note") == {kept}


def test_the_sweep_is_asked_for_once_per_new_expired_set(mem: Memory) -> None:
    mem.set_config("default", {"ttl_days": 30})
    mem.retain("an old pier note", created_at=OLD)
    kept = mem.retain("a new pier note")
    asked: list[str] = []
    original = mem._snapshotter.request

    def spy(bank: str, sweep: bool = False, only_sweep: bool = False) -> None:
        if sweep:
            asked.append(bank)
        original(bank, sweep, only_sweep)

    mem._snapshotter.request = spy  # type: ignore[method-assign]
    for _ in range(3):
        assert _ids(mem, "pier note") == {kept}
    assert asked == ["default"]
    mem.retain("another old pier note", created_at=OLD)
    assert _ids(mem, "pier note") == {kept}
    assert asked == ["default", "default"]
