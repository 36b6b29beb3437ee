"""The PostgreSQL server of the tests (issue 14): a real one, never a mock.

``MEMWIRE_TEST_POSTGRES_URL`` names a scratch database (``scripts/ci/postgres.sh`` starts one and
sets it in CI, with ``MEMWIRE_REQUIRE_POSTGRES=1``). Without a URL the PostgreSQL tests skip,
unless ``MEMWIRE_REQUIRE_POSTGRES=1``: then they fail, so a CI run cannot pass without them.
Each store under test lives in a schema of its own, dropped when the test session ends.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
from pathlib import Path
from typing import Any

import pytest
from memwire.store import Store

URL = os.environ.get("MEMWIRE_TEST_POSTGRES_URL", "").strip() or None
REQUIRED = os.environ.get("MEMWIRE_REQUIRE_POSTGRES") == "1"
NO_SERVER = (
    "no PostgreSQL server: set MEMWIRE_TEST_POSTGRES_URL (bash scripts/ci/postgres.sh starts "
    "one and prints it)"
)

_schemas: dict[Path, str] = {}
_created: list[str] = []
_counter = itertools.count(1)


def postgres_url() -> str:
    """The test server's URL; skips the test without one (fails it when one is required)."""
    if URL is None:
        if REQUIRED:
            pytest.fail(f"MEMWIRE_REQUIRE_POSTGRES=1 but {NO_SERVER}")
        pytest.skip(NO_SERVER)
    return URL


def connect() -> Any:
    """A plain psycopg connection to the test database (autocommit), for test hooks."""
    import psycopg

    return psycopg.connect(postgres_url(), autocommit=True)


def fresh_schema() -> str:
    """A new, empty schema name (dropped when the session ends)."""
    name = f"mwtest_{os.getpid()}_{next(_counter)}"
    with connect() as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")
    if not _created:
        atexit.register(_drop_all)
    _created.append(name)
    return name


def _drop_all() -> None:
    if URL is None:
        return
    with contextlib.suppress(Exception):
        import psycopg

        with psycopg.connect(URL, autocommit=True) as conn:
            for name in _created:
                conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


def make_store(directory: Path) -> Store:
    """A new, empty PostgreSQL store in a schema of its own (``directory`` names it)."""
    from memwire.store.postgres import PostgresStore

    url = postgres_url()
    schema = _schemas[directory] = fresh_schema()
    return PostgresStore(url, schema=schema)


def reopen_store(directory: Path) -> Store:
    from memwire.store.postgres import PostgresStore

    return PostgresStore(postgres_url(), schema=_schemas[directory])


def set_last_seq(store: Store, bank: str, seq: int) -> None:
    schema = store._schema  # type: ignore[attr-defined]
    with connect() as conn:
        conn.execute(f"UPDATE {schema}.banks SET last_seq = %s WHERE name = %s", (seq, bank))
