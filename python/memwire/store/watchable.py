"""The optional side of a store shared by many processes: telling this one of the others'
writes, so that it brings its derived indexes up to date before a recall asks (the PostgreSQL
store's LISTEN/NOTIFY, docs/scaling.md). A store without it is only read on demand; nothing
depends on it for correctness."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Watchable"]


@runtime_checkable
class Watchable(Protocol):
    def watch(self, on_change: Callable[[int | None, int], None]) -> None:
        """Call ``on_change(bank_id, seq)`` (from a thread of the store) when a write of any
        process moves bank ``bank_id`` to ``seq`` (0: the bank was deleted), and
        ``on_change(None, 0)`` when any bank may have moved unseen. Once per store; stopped
        when the store closes."""
        ...
