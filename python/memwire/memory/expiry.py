"""Recall's TTL cutoff, per bank, applied in the kernel without reading the bank (issue 18).

A TTL bank hides the memories whose ``created_at`` is before ``now - ttl_days`` until the
background sweep deletes them. Listing the live ordinals in SQL on every recall cost the whole
bank (2.1 -> 166 ms at 60k for one expired memory). Instead a bank keeps the few *expired*
ordinals (a roaring bitmap) and the next ``created_at`` to come due, read through the store's
``(bank_id, created_at)`` index (:meth:`Store.expiring`), and reads them again only when the
cutoff passes that next ``created_at``, when memories were added since (their ``created_at``
is unknown here; an imported or backdated one may be expired already) or when the cutoff moved
back (``ttl_days`` raised). A removal (the sweep's) is dropped from the set at once, so once
the sweep has run a recall passes no filter at all.

The kernel gets the complement, every ordinal below a bound but the expired ones, as an
``AllowSet`` (docs/parity.md, "Filters": ordinals an index does not hold are ignored, so the
bound may run ahead of the index), which every stream applies as it applies a tag filter. The
bound is rounded up, so the set is made again only when the expired set changes or the index
passes the bound, not at every retain.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyroaring import BitMap

from memwire.store import MAX_ORDINAL, Store

if TYPE_CHECKING:
    from memwire._kernel.contract import AllowSet, Kernel

__all__ = ["Expiry"]

_BOUND_STEP = 1 << 16  # the allow set's bound is a multiple of this (one roaring container)


class Expiry:
    """One bank's expired ordinals. :meth:`changed` is called with the index's changes (under
    the bank's write lock), :meth:`expired` and :meth:`allow` by recalls (under its read lock,
    so several at once: a lock of its own guards the fields)."""

    __slots__ = ("_cutoff", "_expired", "_lock", "_made", "_next_at", "_stale", "_swept")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cutoff: str | None = None  # the cutoff ``_expired`` holds for; None: not read
        self._next_at: str | None = None  # the least created_at at or after it, when read
        self._stale = False  # memories were added since the read
        self._expired = BitMap()  # never changed in place: a recall may hold it
        self._made: tuple[int, AllowSet, BitMap] | None = None  # bound, complement as both
        self._swept = False  # the background sweep was asked for since ``_expired`` changed

    def clear(self) -> None:
        with self._lock:
            self._cutoff = self._next_at = self._made = None
            self._stale = self._swept = False
            self._expired = BitMap()

    def changed(self, added: Sequence[int], removed: Sequence[int]) -> None:
        """The index took ``added`` and dropped ``removed`` (ordinals)."""
        if self._cutoff is None:
            return
        with self._lock:
            if added:
                self._stale = True
            if removed and self._expired:
                gone = BitMap(removed)
                if self._expired.intersect(gone):
                    self._expired = self._expired - gone
                    self._made = None

    def expired(self, store: Store, bank_id: int, cutoff: str) -> BitMap:
        """The ordinals of the bank's memories with ``created_at`` before ``cutoff`` (the
        caller must not change the bitmap). The store may be ahead of the index: an ordinal
        the index lacks yet is kept out when it arrives, one the store has removed already
        leaves the set with the index's removal."""
        with self._lock:
            if (
                self._cutoff is None
                or self._stale
                or cutoff < self._cutoff
                or (self._next_at is not None and self._next_at < cutoff)
            ):
                found = store.expiring(bank_id, cutoff)
                fresh = BitMap(found.ordinals)
                if fresh != self._expired:
                    self._expired = fresh
                    self._made = None
                    self._swept = False
                self._next_at = found.next_at
                self._stale = False
            self._cutoff = cutoff
            return self._expired

    def sweep_due(self) -> bool:
        """True once for each new set of expired memories: the caller hands the bank to the
        background sweep (which retries a failed sweep itself)."""
        with self._lock:
            if not self._expired or self._swept:
                return False
            self._swept = True
            return True

    def allow(self, kernel: Kernel, bound: int) -> tuple[AllowSet, BitMap]:
        """Every ordinal below ``bound`` (or a larger bound) but the expired ones, as
        ``kernel``'s AllowSet and as a bitmap (the caller must not change it)."""
        with self._lock:
            made = self._made
            if made is None or made[0] < bound:
                top = min(-(-bound // _BOUND_STEP) * _BOUND_STEP, MAX_ORDINAL + 1)
                kept = BitMap(range(top))
                kept -= self._expired
                kept.run_optimize()
                made = (top, kernel.AllowSet.from_bytes(kept.serialize()), kept)
                self._made = made
            return made[1], made[2]
