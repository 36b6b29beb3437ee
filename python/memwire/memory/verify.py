"""``memwire doctor --full``: a bank's derived index compared with its rows, and repaired from
them when they disagree (docs/storage.md, "Snapshots and replay").

The index is loaded the way a recall loads it (the stored snapshot, checked by its envelope,
then a replay), so a refused snapshot shows up here too; every live row's ordinal must then be
in the index and the index must hold nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memwire.errors import MemwireError, StorageError

if TYPE_CHECKING:
    from memwire.memory.api import Memory

__all__ = ["IndexCheck", "check_index"]


@dataclass(frozen=True)
class IndexCheck:
    """One bank's index against its rows."""

    bank: str
    rows: int
    """Live memories in the store."""
    indexed: int
    """Entries in the index as loaded (before any repair)."""
    missing: int
    """Live memories the loaded index lacked."""
    extra: int
    """Index entries no live memory has."""
    snapshot: str
    """``"used"``, ``"none"`` (no snapshot of this format stored) or ``"refused"`` (corrupt or
    of another version: the index was rebuilt from rows and the snapshot replaced)."""
    repaired: str | None
    """What was repaired, or None."""

    @property
    def ok(self) -> bool:
        """The index agreed with the rows as loaded."""
        return not self.missing and not self.extra


def check_index(memory: Memory, bank: str) -> IndexCheck:
    """Load ``bank``'s index, compare it with the live rows, and rebuild it from them (then
    snapshot it) if they differ; a refused snapshot is replaced the same way."""
    state = memory._bank(bank)
    with memory._reading(state) as head:
        if head is None:
            raise StorageError(f"bank {bank!r} vanished during the check")
    store = memory._store
    with state.lock.write():
        index = state.index
        assert index is not None
        used = state.snap_seq > 0  # a fresh Memory: set only by loading a snapshot
        snapshot = "refused" if state.snap_unusable else ("used" if used else "none")
        rows = store.changes_since(state.bank_id, 0)
        if rows is None:
            raise StorageError(f"bank {bank!r} vanished during the check")
        live = rows.added.ordinals
        missing = sum(1 for ordinal in live if ordinal not in index)
        indexed = len(index)
        extra = indexed - (len(live) - missing)
        repaired = None
        if missing or extra:
            memory._reload(state, use_snapshot=False)
            state.snap_unusable = True  # the stored snapshot (if any) is replaced below
            repaired = f"index rebuilt from {len(live):,} rows"
    if repaired is not None or snapshot == "refused":
        try:
            memory._snapshot(bank)
            what = "snapshot replaced"
        except MemwireError as exc:  # a full disk, say: the index is sound in memory anyway
            what = f"snapshot not replaced ({exc})"
        repaired = what if repaired is None else f"{repaired}; {what}"
    return IndexCheck(bank, len(live), indexed, missing, extra, snapshot, repaired)
