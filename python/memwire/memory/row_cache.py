"""Recall's read-back of stored rows, kept per bank in a bounded cache (issue 18, "recall
read-back that does not dominate").

A recall ranks ordinals in the index and then reads their stored rows (content, tags, dates) for
the pack and the hits: one SQLite statement (a network round trip on PostgreSQL) that was the
largest cost of a recall at 10k memories after the kernel's own. A bank's most recently read
rows are kept here, least recently used dropped first, up to :data:`ROW_CACHE_BYTES` per bank
(each row counted as its text's characters plus :data:`ROW_OVERHEAD`), so a memory that keeps
coming back (what a prompt hook recalls turn after turn) is read from the store once.

What is cached is exactly what the store would return, because the cache follows the index:

- ordinals are never reused (docs/storage.md), so an addition cannot make an entry wrong;
- a removal drops its ordinal (:meth:`forget`, with the index's changes);
- a change of tags in place (``Memory.update``), a reload or a deleted bank drops everything
  (:meth:`clear`), and a read that began before such a drop is not kept (the generation);
- the cache answers only for the bank id it was filled for.

A row removed by another process but not yet replayed here is served from the cache until the
next recall's catch-up drops it: the same row the recall's own index ranked, as of the head that
recall read. Rows are frozen records, shared, never copied.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence

from memwire.store import Row

__all__ = ["ROW_CACHE_BYTES", "ROW_OVERHEAD", "RowCache"]

# What the rows kept per bank may cost. 4 MiB hold ~5,200 rows of the benchmark corpus (218
# characters on average); a loaded 100k bank grows by at most ~42 B per memory.
ROW_CACHE_BYTES = 4 * 1024 * 1024
# What a cached row costs beside its text: the record, its other strings and the map's entry
# (tracemalloc over 8,000 rows of the corpus read from SQLite: 586 B, rounded up).
ROW_OVERHEAD = 600


def _cost(row: Row) -> int:
    return ROW_OVERHEAD + len(row.content) + len(row.context or "")


class RowCache:
    """One bank's recently read rows by ordinal. Thread-safe: recalls read it at once, the
    bank's writes (under its write lock) drop entries."""

    __slots__ = (
        "_bank_id",
        "_bytes",
        "_generation",
        "_lock",
        "_rows",
        "capacity",
        "hits",
        "misses",
    )

    def __init__(self, capacity: int = ROW_CACHE_BYTES) -> None:
        self.capacity = capacity
        self._rows: OrderedDict[int, Row] = OrderedDict()
        self._bytes = 0
        self._bank_id = 0
        self._generation = 0
        self._lock = threading.Lock()
        self.hits = 0  # rows served from the cache, for benchmarks and tests
        self.misses = 0  # rows asked of the store

    def __len__(self) -> int:
        return len(self._rows)

    @property
    def size(self) -> int:
        """The cost of the rows held, in the units of ``capacity``."""
        return self._bytes

    def clear(self) -> None:
        """Drop every row; reads already under way keep theirs to themselves."""
        with self._lock:
            self._rows.clear()
            self._bytes = 0
            self._generation += 1

    def forget(self, ordinals: Iterable[int]) -> None:
        """Drop the rows of ``ordinals`` (removed from the bank)."""
        if not self._rows:
            return
        with self._lock:
            for ordinal in ordinals:
                row = self._rows.pop(ordinal, None)
                if row is not None:
                    self._bytes -= _cost(row)

    def read(
        self,
        bank_id: int,
        ordinals: Sequence[int],
        fetch: Callable[[list[int]], Mapping[int, Row]],
    ) -> dict[int, Row]:
        """The rows of ``ordinals`` of bank ``bank_id`` that exist: from the cache, the rest
        from ``fetch`` (the store's read of rows by ordinal), which are then kept."""
        found: dict[int, Row] = {}
        missing: list[int] = []
        with self._lock:
            if self._bank_id != bank_id:
                if self._rows:  # another bank under this name now: nothing here is its
                    self._rows.clear()
                    self._bytes = 0
                    self._generation += 1
                self._bank_id = bank_id
            generation = self._generation
            rows = self._rows
            for ordinal in ordinals:
                row = rows.get(ordinal)
                if row is None:
                    missing.append(ordinal)
                else:
                    rows.move_to_end(ordinal)
                    found[ordinal] = row
            self.hits += len(found)
            self.misses += len(missing)
        if not missing:
            return found
        read = fetch(missing)
        found.update(read)
        if read:
            self._keep(bank_id, generation, read.values())
        return found

    def _keep(self, bank_id: int, generation: int, rows: Iterable[Row]) -> None:
        with self._lock:
            if self._generation != generation or self._bank_id != bank_id:
                return  # dropped while the store was read: these may be what was dropped
            for row in rows:
                cost = _cost(row)
                if cost > self.capacity // 16:  # one long memory must not flush the rest
                    continue
                old = self._rows.pop(row.ordinal, None)
                if old is not None:
                    self._bytes -= _cost(old)
                self._rows[row.ordinal] = row
                self._bytes += cost
            while self._bytes > self.capacity and self._rows:
                _, dropped = self._rows.popitem(last=False)
                self._bytes -= _cost(dropped)
