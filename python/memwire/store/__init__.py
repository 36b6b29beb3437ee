"""The source of truth behind :class:`memwire.Memory`: the :class:`Store` protocol and its records.

:mod:`memwire.store.protocol` states the protocol and the semantics every store keeps;
:mod:`memwire.store.sqlite` is the embedded default; :class:`ReferenceStore`
(:mod:`memwire.store.reference`) keeps everything in plain Python objects, for tests and as the
readable statement of the semantics. Nothing above this package knows which store it talks to.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from memwire.errors import InvalidInputError
from memwire.locations import default_path, is_postgres_url
from memwire.store.protocol import (
    LIVE,
    MAX_ORDINAL,
    SUPERSEDED,
    TRASHED,
    Addition,
    Additions,
    Allowed,
    ArchivedMemory,
    BankHead,
    BankStats,
    Changes,
    Expired,
    Expiring,
    NewMemory,
    ReembedItem,
    ReembedState,
    Row,
    Snapshot,
    Space,
    StagedVector,
    Store,
    Version,
    WriteResult,
    space_mismatch,
)

if TYPE_CHECKING:
    from memwire.store.reference import ReferenceStore


def __getattr__(name: str) -> Any:
    # The reference store is for tests and the conformance suite: imported when asked for, so
    # that opening a store (`memwire serve` before its first /health) does not pay for it.
    if name == "ReferenceStore":
        from memwire.store.reference import ReferenceStore

        return ReferenceStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LIVE",
    "MAX_ORDINAL",
    "SUPERSEDED",
    "TRASHED",
    "Addition",
    "Additions",
    "Allowed",
    "ArchivedMemory",
    "BankHead",
    "BankStats",
    "Changes",
    "Expired",
    "Expiring",
    "NewMemory",
    "ReembedItem",
    "ReembedState",
    "ReferenceStore",
    "Row",
    "Snapshot",
    "Space",
    "StagedVector",
    "Store",
    "Version",
    "WriteResult",
    "default_path",
    "is_postgres_url",
    "open_store",
    "space_mismatch",
]


def open_store(location: str | os.PathLike[str]) -> Store:
    """The store at ``location``: a ``postgresql://`` (or ``postgres://``) URL for the PostgreSQL
    store (needs the ``postgres`` extra), a SQLite file path, or ``":memory:"`` for an ephemeral
    SQLite database (``sqlite:PATH`` names a SQLite file explicitly). Raises
    :class:`~memwire.errors.InvalidInputError` for a blank location."""
    if not isinstance(location, (str, os.PathLike)):
        raise InvalidInputError(f"path must be a string or a path, got {type(location).__name__}")
    text = str(location)
    if not text.strip():
        raise InvalidInputError("path must not be blank")
    if is_postgres_url(location):
        from memwire.store.postgres import PostgresStore

        return PostgresStore(text)
    if isinstance(location, str) and text.startswith("sqlite:"):
        location = text[len("sqlite:") :]
        if not location.strip():
            raise InvalidInputError("sqlite: needs a path")
    from memwire.store.sqlite import SQLiteStore

    return SQLiteStore(location)
