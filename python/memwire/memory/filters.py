"""Recall's tag filters, per bank, kept in step with the bank's index instead of rebuilt in SQL
on every call (issue 18).

For each recently used ``(tags, exclude_tags)`` pair a bank keeps the ordinals that pass it
(a roaring bitmap), built once from the store and then updated by the same writes that update
the index: a removal is dropped at once, an addition is remembered and its tags read (one query
for just those memories) at the next recall that uses the filter. A prompt hook that excludes
the same tags on every recall, with a retain between recalls, thus pays for one or two rows per
recall rather than for the whole bank.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from pyroaring import BitMap

from memwire.store import Store

__all__ = ["MAX_FILTERS", "TagFilters"]

MAX_FILTERS = 8  # filter pairs kept per bank, least recently used dropped first

Key = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class _Entry:
    allowed: BitMap
    pending: BitMap = field(default_factory=BitMap)  # added since, tags not read yet
    listed: list[int] | None = None  # ``allowed`` as the kernel takes it

    def passes(self, key: Key, tags: Sequence[str]) -> bool:
        want, avoid = key
        return (not want or any(t in want for t in tags)) and not any(t in avoid for t in tags)


class TagFilters:
    """One bank's filters. :meth:`changed` is called with the index's changes (under the bank's
    write lock), :meth:`allowed` by recalls (under its read lock, so several at once: a lock of
    its own guards the entries then)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def changed(self, added: Sequence[int], removed: Sequence[int]) -> None:
        """The index took ``added`` and dropped ``removed`` (ordinals)."""
        if not self._entries:
            return
        with self._lock:
            gone = BitMap(removed)
            for entry in self._entries.values():
                if added:
                    entry.pending.update(added)
                if gone:
                    entry.allowed -= gone
                    entry.pending -= gone
                entry.listed = None

    def allowed(
        self, store: Store, bank_id: int, tags: Sequence[str], exclude_tags: Sequence[str]
    ) -> tuple[list[int], BitMap]:
        """The ordinals (ascending) of the bank's memories with one of ``tags`` (when given)
        and none of ``exclude_tags``, as a list (for the kernel) and a set (the caller must not
        change either). The store may be ahead of the index: an ordinal it no longer has is
        left out (it is on its way out of the index), one the index lacks yet is ignored by
        the kernel."""
        key: Key = (tuple(sorted(set(tags))), tuple(sorted(set(exclude_tags))))
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                found = store.allowed(bank_id, key[0], key[1], None).ordinals
                entry = _Entry(BitMap(found or ()))
                self._entries[key] = entry
                while len(self._entries) > MAX_FILTERS:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            if entry.pending:
                rows = store.rows_by_ordinal(bank_id, list(entry.pending))
                entry.allowed.update(o for o, row in rows.items() if entry.passes(key, row.tags))
                entry.pending.clear()
                entry.listed = None
            if entry.listed is None:
                entry.listed = list(entry.allowed)
            return entry.listed, entry.allowed
