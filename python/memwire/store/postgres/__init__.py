"""The PostgreSQL store: the source of truth for many memwire processes on many hosts
(docs/scaling.md). Needs psycopg 3 (the ``[postgres]`` extra); importing this package
without it works, opening a store raises a :class:`~memwire.errors.StorageError` saying so.

:mod:`~memwire.store.postgres.base` holds the schema, the connection and the retrying
transactions; :mod:`~memwire.store.postgres.store` everything the protocol asks.
"""

from __future__ import annotations

from memwire.store.postgres.base import SCHEMA_VERSION
from memwire.store.postgres.store import PostgresStore

__all__ = ["SCHEMA_VERSION", "PostgresStore"]
