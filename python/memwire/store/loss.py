"""Committed writes a store lost before it was opened: what it recorded against what it found
(docs/storage.md, "Loss at open").

SQLite drops every commit from the first damaged frame of a WAL on, silently (that is its
recovery rule); a database file restored from an older copy goes back in time just as quietly.
A store that can tell records, outside the database, how many transactions it had committed and
how many memories it held after the last one; at open, a database that has committed fewer is
reported here, kept in the store until cleared (``memwire doctor --clear-loss``), shown by
:meth:`memwire.Memory.health` and failed by ``memwire doctor``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["ChecksLoss", "StoreLoss", "clear_store_loss", "store_loss"]


@dataclass(frozen=True)
class StoreLoss:
    """A store found behind what it had recorded when it was opened."""

    recorded_commits: int
    """Write transactions committed, as recorded after the last one this store saw."""
    found_commits: int
    """Write transactions the database holds at open."""
    recorded_memories: int
    """Memories (every bank) the store held after that last recorded commit."""
    found_memories: int
    """Memories the database holds at open."""
    detected_at: str
    """When the open found it (ISO 8601, UTC)."""

    @property
    def missing_commits(self) -> int:
        return max(self.recorded_commits - self.found_commits, 0)

    @property
    def missing_memories(self) -> int:
        """Memories fewer than recorded (0 when the lost commits were forgets as much as
        retains: the commit count still shows the loss)."""
        return max(self.recorded_memories - self.found_memories, 0)

    def summary(self) -> str:
        """What was found, in one clause."""
        return (
            f"{self.missing_commits:,} of {self.recorded_commits:,} recorded transactions were "
            f"missing at an open of {self.detected_at}, leaving {self.found_memories:,} memories "
            f"where {self.recorded_memories:,} were recorded"
        )

    def describe(self) -> str:
        """One sentence for logs and ``doctor``: what was found, its likely causes, what to do."""
        return (
            f"the store lost committed writes before it was opened: {self.summary()} (a damaged "
            "or deleted WAL, or a database file replaced by an older copy); restore it from a "
            "backup if you have one, then clear this report with 'memwire doctor --clear-loss'"
        )


@runtime_checkable
class ChecksLoss(Protocol):
    """A store that checks for lost commits at open (the SQLite store does)."""

    def loss(self) -> StoreLoss | None:
        """The loss found at this open, else the one an earlier open recorded, else None."""

    def clear_loss(self) -> bool:
        """Forget the recorded loss; True if there was one."""


def store_loss(store: object) -> StoreLoss | None:
    """``store``'s recorded loss; None when it has none or does not check."""
    return store.loss() if isinstance(store, ChecksLoss) else None


def clear_store_loss(store: object) -> bool:
    """Clear ``store``'s recorded loss; True if there was one."""
    return store.clear_loss() if isinstance(store, ChecksLoss) else False
