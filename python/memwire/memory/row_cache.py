"""Recall's read-back of stored rows, kept per bank in a bounded cache (issue 18, "recall
read-back that does not dominate").

A recall ranks ordinals in the index and then reads their stored rows (content, tags, dates) for
the pack and the hits: one SQLite statement (a network round trip on PostgreSQL) that was the
largest cost of a recall at 10k memories after the kernel's own. A bank's most recently read
rows are kept here, least recently used dropped first, up to :data:`ROW_CACHE_BYTES` for all
the banks of a ``Memory`` together (each row counted as its text's characters plus
:data:`ROW_OVERHEAD`), so a memory that keeps coming back (what a prompt hook recalls turn after
turn) is read from the store once, and a server with many banks holds no more.

What is cached is exactly what the store would return, because the cache follows the index:

- ordinals are never reused (docs/storage.md), so an addition cannot make an entry wrong;
- a removal drops its ordinal (:meth:`forget`, with the index's changes);
- a change of tags in place (``Memory.update``), a reload or a deleted bank drops all of the
  bank's rows (:meth:`BankRows.clear`: its generation moves on, so its old entries are never
  found again and age out), and a read that began before such a drop is not kept;
- entries are keyed by bank id, so a bank deleted and made again under its name starts empty.

A row removed by another process but not yet replayed here is served from the cache until the
next recall's catch-up drops it: the same row the recall's own index ranked, as of the head that
recall read. Rows are frozen records, shared, never copied.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

from memwire.store import Row

__all__ = ["ROW_CACHE_BYTES", "ROW_OVERHEAD", "BankRows", "RowCache"]

# What the rows kept by one Memory may cost. 4 MiB hold ~4,800 rows of the benchmark corpus
# (218 characters on average); a loaded 100k bank grows by at most ~42 B per memory.
ROW_CACHE_BYTES = 4 * 1024 * 1024
# What a cached row costs beside its text: the record, its other strings, the map's entry
# and its key (tracemalloc over 8,000 rows of the corpus read from SQLite: 650 B).
ROW_OVERHEAD = 650

Key = tuple[int, int, int]  # bank id, the bank's generation, ordinal


def _cost(row: Row) -> int:
    return ROW_OVERHEAD + len(row.content) + len(row.context or "")


class RowCache:
    """The rows a ``Memory`` keeps, every bank's together, least recently used out first.
    Thread-safe: recalls read it at once, the banks' writes drop entries."""

    __slots__ = ("_bytes", "_lock", "_rows", "capacity", "hits", "misses")

    def __init__(self, capacity: int = ROW_CACHE_BYTES) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[Key, Row] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0  # rows served from the cache, for benchmarks and tests
        self.misses = 0  # rows asked of the store

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def size(self) -> int:
        """The cost of the rows held, in the units of ``capacity``."""
        return self._bytes

    def bank(self) -> BankRows:
        """A bank's view of the cache (one per bank state)."""
        return BankRows(self)


class BankRows:
    """One bank's rows in a :class:`RowCache`."""

    __slots__ = ("_cache", "_generation")

    def __init__(self, cache: RowCache) -> None:
        self._cache = cache
        self._generation = 0

    def clear(self) -> None:
        """Drop every row of the bank; reads already under way keep theirs to themselves."""
        with self._cache._lock:
            self._generation += 1

    def forget(self, bank_id: int, ordinals: Iterable[int]) -> None:
        """Drop the rows of ``ordinals`` (removed from bank ``bank_id``)."""
        cache = self._cache
        if not cache._rows:
            return
        with cache._lock:
            for ordinal in ordinals:
                row = cache._rows.pop((bank_id, self._generation, ordinal), None)
                if row is not None:
                    cache._bytes -= _cost(row)

    def read(
        self,
        bank_id: int,
        ordinals: Sequence[int],
        fetch: Callable[[list[int]], Mapping[int, Row]],
    ) -> dict[int, Row]:
        """The rows of ``ordinals`` of bank ``bank_id`` that exist: from the cache, the rest
        from ``fetch`` (the store's read of rows by ordinal), which are then kept."""
        cache = self._cache
        found: dict[int, Row] = {}
        missing: list[int] = []
        with cache._lock:
            generation = self._generation
            rows = cache._rows
            for ordinal in ordinals:
                key = (bank_id, generation, ordinal)
                row = rows.get(key)
                if row is None:
                    missing.append(ordinal)
                else:
                    rows.move_to_end(key)
                    found[ordinal] = row
            cache.hits += len(found)
            cache.misses += len(missing)
        if not missing:
            return found
        read = fetch(missing)
        found.update(read)
        if read:
            self._keep(bank_id, generation, read.values())
        return found

    def _keep(self, bank_id: int, generation: int, rows: Iterable[Row]) -> None:
        cache = self._cache
        with cache._lock:
            if self._generation != generation:
                return  # dropped while the store was read: these may be what was dropped
            kept = cache._rows
            for row in rows:
                cost = _cost(row)
                if cost > cache.capacity // 16:  # one long memory must not flush the rest
                    continue
                key = (bank_id, generation, row.ordinal)
                old = kept.pop(key, None)
                if old is not None:
                    cache._bytes -= _cost(old)
                kept[key] = row
                cache._bytes += cost
            while cache._bytes > cache.capacity and kept:
                _, dropped = kept.popitem(last=False)
                cache._bytes -= _cost(dropped)
