"""The store conformance suite: every test here runs once per store in ``FACTORIES``.

A new :class:`memwire.store.Store` (PostgreSQL, say) joins the suite by adding one
:class:`StoreFactory` to ``FACTORIES``: how to make an empty store under a temporary
directory, how to open the same store again after ``close()`` (durable stores only), and one
test hook, ``set_last_seq``, that moves a bank's change sequence so the suite can reach
``MAX_ORDINAL`` without four billion writes. Nothing else in the suite knows which store it
tests; ``ReferenceStore`` is also the oracle of the differential test (test_store_differential).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import postgres_support
import pytest
from backends import require
from memwire.store import ReferenceStore, Store
from memwire.store.sqlite import SQLiteStore
from store_support import StoreFactory


def _sqlite_set_last_seq(store: Store, bank: str, seq: int) -> None:
    cast(SQLiteStore, store).conn.execute(
        "UPDATE banks SET last_seq = ? WHERE name = ?", (seq, bank)
    )


def _reference_set_last_seq(store: Store, bank: str, seq: int) -> None:
    cast(ReferenceStore, store)._banks[bank].last_seq = seq


FACTORIES = [
    StoreFactory(
        "sqlite-file",
        lambda d: SQLiteStore(d / "store.db"),
        lambda d: SQLiteStore(d / "store.db"),
        _sqlite_set_last_seq,
    ),
    StoreFactory("sqlite-memory", lambda d: SQLiteStore(":memory:"), None, _sqlite_set_last_seq),
    StoreFactory("reference", lambda d: ReferenceStore(), None, _reference_set_last_seq),
    # PostgreSQL when a server is given (MEMWIRE_TEST_POSTGRES_URL; tests/postgres_support.py):
    # a fresh schema per store, dropped at the end of the session.
    StoreFactory(
        "postgres",
        postgres_support.make_store,
        postgres_support.reopen_store,
        postgres_support.set_last_seq,
    ),
]


DURABLE = [f for f in FACTORIES if f.reopen is not None]


@pytest.fixture(params=FACTORIES, ids=[f.name for f in FACTORIES])
def store_factory(request: pytest.FixtureRequest) -> StoreFactory:
    return cast(StoreFactory, request.param)


@pytest.fixture(params=DURABLE, ids=[f.name for f in DURABLE])
def durable_factory(request: pytest.FixtureRequest) -> StoreFactory:
    return cast(StoreFactory, request.param)


@pytest.fixture
def store(store_factory: StoreFactory, tmp_path: Path) -> Iterator[Store]:
    opened = store_factory.make(tmp_path)
    yield opened
    opened.close()


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    """A kernel backend for the tests that run a Memory on a store."""
    return require(request.param)
