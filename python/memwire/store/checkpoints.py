"""Stores whose log checkpoints run in the background, and how a caller holds them back.

The SQLite store copies its write-ahead log back into the database file on a thread of its own
(memwire/store/sqlite/checkpoint.py). A copy beside the work that follows a commit (a bulk
write's rows applied to a loaded bank's index, while recalls wait for it) slows that work, so
:class:`~memwire.Memory` holds checkpoints back around each commit and its apply. Other stores
have no such thread: :func:`checkpoints_held` is then a section that does nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["DefersCheckpoints", "checkpoints_held"]


@runtime_checkable
class DefersCheckpoints(Protocol):
    """A store that checkpoints its log in the background (the SQLite store does)."""

    def checkpoints_held(self) -> contextlib.AbstractContextManager[None]:
        """A section in which no checkpoint starts (for a bounded time once one is due)."""


def checkpoints_held(store: object) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """What makes a section of ``store`` without checkpoints: its own method, or a section that
    does nothing (checked once: callers keep the answer for their store)."""
    if isinstance(store, DefersCheckpoints):
        return store.checkpoints_held
    return contextlib.nullcontext
