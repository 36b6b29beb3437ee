"""Recall's read-back cache (memory/row_cache.py): rows are read from the store once and then
served from the cache, and what a recall returns is always what the store holds, after every
kind of write, from this process or another one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from memwire import Memory
from memwire.memory.row_cache import ROW_OVERHEAD, RowCache
from memwire.store import Row
from store_support import DATE, StoreFactory

QUERY = "kafka deploy window"


def _row(ordinal: int, content: str = "text", bank: str = "b") -> Row:
    return Row(
        id=f"mem_{ordinal:032x}",
        bank=bank,
        ordinal=ordinal,
        content=content,
        context=None,
        tags=(),
        created_at=DATE,
        retained_at=DATE,
        document_id=None,
    )


class _Store:
    """Rows by ordinal, counting what is asked of it."""

    def __init__(self, rows: Mapping[int, Row]) -> None:
        self.rows = dict(rows)
        self.asked: list[list[int]] = []

    def fetch(self, ordinals: list[int]) -> dict[int, Row]:
        self.asked.append(list(ordinals))
        return {o: self.rows[o] for o in ordinals if o in self.rows}


def test_rows_are_read_once_then_served_from_the_cache() -> None:
    store = _Store({o: _row(o) for o in range(1, 6)})
    cache = RowCache()
    rows = cache.bank()
    first = rows.read(7, [3, 1, 9], store.fetch)
    assert first == {3: store.rows[3], 1: store.rows[1]}  # 9 does not exist: not returned
    second = rows.read(7, [1, 2, 3], store.fetch)
    assert second == {1: store.rows[1], 2: store.rows[2], 3: store.rows[3]}
    assert store.asked == [[3, 1, 9], [2]]
    assert (cache.hits, cache.misses) == (2, 4)
    assert rows.read(7, [1, 3], store.fetch) == {1: store.rows[1], 3: store.rows[3]}
    assert len(store.asked) == 2


def test_the_least_recently_used_rows_go_first_and_the_size_stays_bounded() -> None:
    content = "x" * 100
    per_row = ROW_OVERHEAD + len(content)
    cache = RowCache(capacity=20 * per_row)
    rows = cache.bank()
    store = _Store({o: _row(o, content) for o in range(1, 30)})
    rows.read(1, list(range(1, 21)), store.fetch)
    rows.read(1, [1], store.fetch)  # 1 is now the most recent, 2 the least
    rows.read(1, [21], store.fetch)  # 2 goes
    assert len(cache) == 20 and cache.size == 20 * per_row
    store.asked.clear()
    rows.read(1, [1, 2, 3, 21], store.fetch)
    assert store.asked == [[2]]  # and 3 went for it
    rows.read(1, list(range(1, 30)), store.fetch)
    assert len(cache) == 20 and cache.size <= cache.capacity


def test_the_banks_of_a_memory_share_one_budget() -> None:
    content = "x" * 100
    cache = RowCache(capacity=20 * (ROW_OVERHEAD + len(content)))
    first, second = cache.bank(), cache.bank()
    one = _Store({o: _row(o, content, bank="one") for o in range(1, 16)})
    two = _Store({o: _row(o, content, bank="two") for o in range(1, 16)})
    assert first.read(1, list(range(1, 16)), one.fetch) == one.rows
    assert second.read(2, list(range(1, 16)), two.fetch) == two.rows
    assert len(cache) == 20 and cache.size <= cache.capacity
    # The same ordinals in another bank are that bank's rows.
    assert second.read(2, [14, 15], two.fetch) == {14: two.rows[14], 15: two.rows[15]}
    one.asked.clear()
    assert first.read(1, [1, 15], one.fetch) == {1: one.rows[1], 15: one.rows[15]}
    assert one.asked == [[1]]  # the first bank's oldest rows made room


def test_a_long_row_is_not_kept() -> None:
    cache = RowCache(capacity=16 * 1024)
    rows = cache.bank()
    store = _Store({1: _row(1, "y" * 2000), 2: _row(2, "short")})
    assert set(rows.read(1, [1, 2], store.fetch)) == {1, 2}
    assert len(cache) == 1
    rows.read(1, [1, 2], store.fetch)
    assert store.asked[-1] == [1]


def test_forget_drops_rows_and_clear_drops_the_bank() -> None:
    store = _Store({o: _row(o) for o in range(1, 4)})
    cache = RowCache()
    rows, other = cache.bank(), cache.bank()
    rows.read(1, [1, 2, 3], store.fetch)
    other.read(2, [1], store.fetch)
    rows.forget(1, [2, 99])
    assert len(cache) == 3 and cache.size == 3 * (ROW_OVERHEAD + 4)
    rows.clear()
    store.asked.clear()
    rows.read(1, [1, 3], store.fetch)
    other.read(2, [1], store.fetch)
    assert store.asked == [[1, 3]]  # the other bank kept its row


def test_a_read_that_began_before_a_clear_is_not_kept() -> None:
    store = _Store({1: _row(1, "old tags")})
    cache = RowCache()
    rows = cache.bank()

    def racing(ordinals: list[int]) -> dict[int, Row]:
        found = store.fetch(ordinals)
        rows.clear()  # a retag in place lands while the store is being read
        store.rows[1] = _row(1, "new tags")
        return found

    assert rows.read(1, [1], racing)[1].content == "old tags"  # this read saw the old row
    assert len(cache) == 0
    assert rows.read(1, [1], store.fetch)[1].content == "new tags"


def test_the_cache_answers_only_for_its_bank_id() -> None:
    rows = RowCache().bank()
    old = _Store({1: _row(1, "deleted bank")})
    new = _Store({1: _row(1, "new bank, same name")})
    rows.read(1, [1], old.fetch)
    assert rows.read(2, [1], new.fetch)[1].content == "new bank, same name"
    assert rows.read(2, [1], new.fetch)[1].content == "new bank, same name"
    assert len(new.asked) == 1


# -- through Memory, on every store and kernel ----------------------------------------------


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(store=store_factory.make(tmp_path), backend=backend) as memory:
        yield memory


def _fill(mem: Memory) -> list[str]:
    return mem.retain_many(
        [
            {"content": f"kafka deploy window {i} for service {i % 5}", "tags": [f"t{i % 3}"]}
            for i in range(30)
        ]
    )


def _seen(mem: Memory) -> list[tuple[str, str, tuple[str, ...], float]]:
    hits = mem.recall(QUERY, limit=20, min_score=0)
    return [(h.id, h.content, h.tags, h.score) for h in hits]


def test_a_repeated_recall_reads_no_row_again(mem: Memory) -> None:
    _fill(mem)
    first = _seen(mem)
    rows = mem._rows
    misses = rows.misses
    assert first and misses >= len(first)
    assert _seen(mem) == first
    assert rows.misses == misses and rows.hits >= len(first)


def test_recall_sees_every_kind_of_write(mem: Memory) -> None:
    ids = _fill(mem)
    before = {hit[0]: hit for hit in _seen(mem)}
    target = next(iter(before))
    # Tags changed in place: same id, same ordinal, new tags.
    mem.update(target, tags=["retagged"])
    after = {hit[0]: hit for hit in _seen(mem)}
    assert after[target][2] == ("retagged",)
    # A forgotten memory is not served; a replaced one is served as its new version.
    gone = next(i for i in after if i != target)
    mem.forget(gone)
    assert gone not in {hit[0] for hit in _seen(mem)}
    newer = mem.update(target, content="kafka deploy window moved to friday")
    served = {hit[0]: hit for hit in _seen(mem)}
    assert target not in served and served[newer][1] == "kafka deploy window moved to friday"
    assert served[newer][2] == ("retagged",)
    # Every hit is what the store holds.
    for memory_id, content, tags, _ in _seen(mem):
        stored = mem.get(memory_id)
        assert stored is not None and (stored.content, tuple(stored.tags)) == (content, tags)
    assert set(ids) >= set(before)


def test_a_deleted_and_recreated_bank_serves_its_new_rows(mem: Memory) -> None:
    _fill(mem)
    _seen(mem)
    assert mem.delete_bank("default")
    mem.retain_many([{"content": f"kafka deploy window, second life {i}"} for i in range(30)])
    assert all("second life" in content for _, content, _, _ in _seen(mem))


def test_writes_of_another_process_reach_the_cache(
    durable_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    assert durable_factory.reopen is not None
    with (
        Memory(store=durable_factory.make(tmp_path), backend=backend) as reader,
        Memory(store=durable_factory.reopen(tmp_path), backend=backend) as writer,
    ):
        _fill(writer)
        first = _seen(reader)
        target, other = first[0][0], first[1][0]
        writer.update(target, tags=["from", "elsewhere"])
        writer.forget(other)
        served = {hit[0]: hit for hit in _seen(reader)}
        assert served[target][2] == ("from", "elsewhere")
        assert other not in served
