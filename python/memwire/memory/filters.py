"""Recall's tag filters, per bank, kept in step with the bank's index instead of rebuilt in SQL
on every call (issue 18).

For each recently used ``(tags, exclude_tags)`` pair a bank keeps the ordinals that pass it
(a roaring bitmap), built once from the store and then updated by the same writes that update
the index: a removal is dropped at once, an addition is remembered and its tags read (one query
for just those memories) at the next recall that uses the filter. A prompt hook that excludes
the same tags on every recall, with a retain between recalls, thus pays for one or two rows per
recall rather than for the whole bank.

The kernel gets each entry as an ``AllowSet`` (docs/parity.md, "Filters"), made once from the
bitmap's portable serialisation and again only when the entry's set changed: a recall hands
the kernel a reference, not a list to convert (issue 18, "Filters in the kernel").
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyroaring import BitMap

from memwire.store import Store

if TYPE_CHECKING:
    from memwire._kernel.contract import AllowSet, Kernel

__all__ = ["MAX_FILTERS", "TagFilters"]

MAX_FILTERS = 8  # filter pairs kept per bank, least recently used dropped first

Key = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass
class _Entry:
    allowed: BitMap
    pending: BitMap = field(default_factory=BitMap)  # added since, tags not read yet
    kernel: AllowSet | None = None  # ``allowed`` as the kernel takes it (None: to be made)

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
                    if entry.allowed.intersect(gone):
                        entry.allowed -= gone
                        entry.kernel = None
                    entry.pending -= gone

    def allowed(
        self,
        store: Store,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
        kernel: Kernel,
    ) -> tuple[AllowSet, BitMap]:
        """The ordinals of the bank's memories with one of ``tags`` (when given) and none of
        ``exclude_tags``, as ``kernel``'s AllowSet and as a bitmap (the caller must not change
        it). The store may be ahead of the index: an ordinal it no longer has is left out (it
        is on its way out of the index), one the index lacks yet is ignored by the kernel."""
        key: Key = (tuple(sorted(set(tags))), tuple(sorted(set(exclude_tags))))
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                found = store.allowed(bank_id, key[0], key[1]).ordinals
                entry = _Entry(BitMap(found or ()))
                self._entries[key] = entry
                while len(self._entries) > MAX_FILTERS:
                    self._entries.popitem(last=False)
            else:
                self._entries.move_to_end(key)
            if entry.pending:
                rows = store.rows_by_ordinal(bank_id, list(entry.pending))
                passed = [o for o, row in rows.items() if entry.passes(key, row.tags)]
                entry.pending.clear()
                if passed:
                    entry.allowed.update(passed)
                    entry.kernel = None
            if entry.kernel is None:
                entry.kernel = kernel.AllowSet.from_bytes(entry.allowed.serialize())
            return entry.kernel, entry.allowed
