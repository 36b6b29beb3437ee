"""A bank's derived index in this process (docs/storage.md); the background thread that keeps
it in shape is in :mod:`memwire.memory.background`."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence, Set
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pyroaring import BitMap

from memwire.memory.expiry import Expiry
from memwire.memory.filters import TagFilters
from memwire.memory.row_cache import BankRows, RowCache

if TYPE_CHECKING:
    from memwire._kernel.contract import Allow, BankIndex

__all__ = ["GATE_PROBE", "BankState", "Member", "ReadWriteLock", "fit_vectors", "is_lookup"]


Member = BitMap | Set[int]  # an allow-list as a set

# How deep the lookup gate looks without the filter before passing the filter to the kernel.
GATE_PROBE = 8


def is_lookup(
    index: BankIndex,
    query: str,
    allow: Allow | None,
    ratio: float,
    member: Member | None = None,
) -> bool:
    """Whether BM25's best hit (among ``allow``) leads the second by ``ratio`` (config
    ``lookup_ratio``).

    Such a query names something one memory has (an identifier, a rare name); the dense stream
    would only add neighbours that can outrank it, so recall runs it lexically. ``member``:
    ``allow`` as a set, when there is one (the kernel then often need not look at ``allow``)."""
    if ratio <= 0:
        return False
    top = _top_two(index, query, allow, member)
    return len(top) == 2 and top[0][1] >= ratio * top[1][1]


def _top_two(
    index: BankIndex, query: str, allow: Allow | None, member: Member | None
) -> list[tuple[int, float]]:
    if allow is not None and member is not None:
        # A filter changes no BM25 score nor their order: the filtered top two are the first
        # two allowed hits of the unfiltered ranking, when its first GATE_PROBE hold them (or
        # are all there is). This probe costs less than the kernel's filtered pass.
        probe = index.search_bm25(query, GATE_PROBE)
        kept = [hit for hit in probe if hit[0] in member][:2]
        if len(kept) == 2 or len(probe) < GATE_PROBE:
            return kept
    return index.search_bm25(query, 2, allow)


def fit_vectors(vectors: Sequence[bytes | None], dim: int) -> list[bytes | None]:
    """The vectors an index of ``dim`` can take (a vector of another size reads as none: the
    index is reloaded once the bank's recorded dimension and the index agree again)."""
    return [v if v is not None and dim and len(v) == 2 * dim else None for v in vectors]


class ReadWriteLock:
    """Many readers at once, or one writer (docs/architecture.md, "Reads in parallel").

    A waiting writer holds back new readers, so a stream of recalls cannot starve a write;
    except while a *long* reader (a snapshot being encoded) holds the lock: the writer has to
    wait for it anyway, so recalls keep coming in meanwhile instead of queueing behind both.
    Not reentrant: a holder must not take it again."""

    __slots__ = ("_cond", "_long", "_readers", "_waiting", "_writer")

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._long = 0
        self._waiting = 0
        self._writer = False

    @contextmanager
    def read(self, long: bool = False) -> Iterator[None]:
        with self._cond:
            while self._writer or (self._waiting and not self._long):
                self._cond.wait()
            self._readers += 1
            self._long += long
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._long -= long
                if self._readers == 0 or (long and self._long == 0):
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class BankState:
    """One bank's derived index in this process. Guarded by ``lock``: a recall reads the index
    under ``lock.read()``, everything that changes the index or these fields holds
    ``lock.write()``."""

    __slots__ = (
        "_inflight",
        "_inflight_lock",
        "applied",
        "bank_id",
        "expiry",
        "filters",
        "graph_unsaved",
        "index",
        "lock",
        "name",
        "rows",
        "snap_seq",
        "snap_unusable",
    )

    def __init__(self, name: str, rows: RowCache) -> None:
        self.name = name
        self.lock = ReadWriteLock()
        self.bank_id = 0
        self.index: BankIndex | None = None
        self.applied = 0  # the bank's change sequence the index reflects
        self.snap_seq = 0  # the newest stored snapshot this process knows of
        self.graph_unsaved = False  # the index has an HNSW graph no stored snapshot has
        # The stored snapshot could not be loaded (another format, contract or tokenizer
        # version, another dim): the next snapshot replaces it, even of the same changes.
        self.snap_unusable = False
        # This process's committed writes waiting for ``lock.write()`` to reach the index:
        # first_seq -> last_seq. Until one returns it is not acknowledged, so a recall may be
        # served from the index without it (see ``covers``) rather than wait.
        self._inflight: dict[int, int] = {}
        self._inflight_lock = threading.Lock()
        self.filters = TagFilters()  # recall's tag filters, changed with the index
        self.expiry = Expiry()  # recall's TTL cutoff, changed with the index
        # Recall's read-back, changed with the index (the Memory's cache, shared by its banks).
        self.rows: BankRows = rows.bank()

    def changed(self, added: Sequence[int], removed: Sequence[int]) -> None:
        """The index took ``added`` and dropped ``removed`` (ordinals)."""
        self.filters.changed(added, removed)
        self.expiry.changed(added, removed)
        self.rows.forget(self.bank_id, removed)

    def retagged(self) -> None:
        """Tags may have changed in place (``Memory.update``): what was built from them goes."""
        self.filters.clear()
        self.rows.clear()

    @contextmanager
    def inflight(self, first_seq: int, last_seq: int) -> Iterator[None]:
        """Mark the write ``first_seq`` -> ``last_seq`` as on its way into the index."""
        with self._inflight_lock:
            self._inflight[first_seq] = last_seq
        try:
            yield
        finally:
            with self._inflight_lock:
                self._inflight.pop(first_seq, None)

    def covers(self, last_seq: int) -> bool:
        """Whether the index (at ``applied``) misses nothing of the bank up to ``last_seq``
        but writes of this process still on their way in (not yet acknowledged)."""
        seq = self.applied
        with self._inflight_lock:
            while seq < last_seq and seq in self._inflight:
                seq = self._inflight[seq]
        return seq >= last_seq

    def clear(self) -> None:
        self.filters.clear()
        self.expiry.clear()
        self.rows.clear()
        self.index = None
        self.bank_id = 0
        self.applied = 0
        self.snap_seq = 0
        self.graph_unsaved = False
        self.snap_unusable = False
