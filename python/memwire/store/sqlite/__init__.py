"""The embedded store: one SQLite file (WAL) holding every bank (docs/storage.md).

:mod:`~memwire.store.sqlite.base` holds the schema, the connection and the retrying
transactions; :mod:`~memwire.store.sqlite.store` banks, memories and the change log;
:mod:`~memwire.store.sqlite.snapshots` and :mod:`~memwire.store.sqlite.reembed` their parts.
"""

from __future__ import annotations

from memwire.store.sqlite.base import SCHEMA_VERSION
from memwire.store.sqlite.store import SQLiteStore

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]
