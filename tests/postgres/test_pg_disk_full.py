"""A database server out of disk (issue 19 on PostgreSQL): SQLSTATE 53100 (disk_full), the rest
of class 53 (insufficient resources) and 58030 (io_error) are StorageFullError, as SQLite's full
disk is: nothing of the write is stored, the store recovers without a restart.

Filling the server's disk is not practical here, so the server is made to raise those errors:
a trigger of the test's schema on the memories table raises them with their SQLSTATE, through
the store's real write path (the error comes from the server, not from a mock)."""

from __future__ import annotations

import pytest
from memwire import Memory
from memwire.errors import StorageFullError
from memwire.store.postgres import PostgresStore
from memwire.store.postgres.base import resource_failure
from postgres_support import connect, fresh_schema, postgres_url

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def schema() -> str:
    return fresh_schema()


def fail_inserts(schema: str, sqlstate: str | None) -> None:
    """Make every insert into the schema's memories fail with ``sqlstate`` (None: stop)."""
    with connect() as conn:
        conn.execute(f"DROP TRIGGER IF EXISTS fail_insert ON {schema}.memories")
        if sqlstate is None:
            return
        conn.execute(
            f"CREATE OR REPLACE FUNCTION {schema}.fail_insert() RETURNS trigger "
            f"LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'SELECT secret FROM nowhere' "
            f"USING ERRCODE = '{sqlstate}'; END $$"
        )
        conn.execute(
            f"CREATE TRIGGER fail_insert BEFORE INSERT ON {schema}.memories "
            f"FOR EACH ROW EXECUTE FUNCTION {schema}.fail_insert()"
        )


@pytest.mark.parametrize(
    ("sqlstate", "needle"),
    [
        ("53100", "disk is full"),
        ("53200", "ran out of a resource"),
        ("53400", "ran out of a resource"),
        ("58030", "I/O error"),
    ],
)
def test_a_full_or_failing_server_disk_is_storage_full(
    schema: str, sqlstate: str, needle: str
) -> None:
    with Memory(store=PostgresStore(postgres_url(), schema=schema), backend="python") as memory:
        kept = memory.retain("the backup runs at two in the morning")
        fail_inserts(schema, sqlstate)
        try:
            with pytest.raises(StorageFullError) as caught:
                memory.retain("written while the disk is full")
            message = str(caught.value)
            assert needle in message and "nothing of this request was written" in message
            assert "SELECT" not in message and "memwire_test" not in message
            # Reads go on meanwhile, on the same connections.
            assert memory.get(kept) is not None
        finally:
            fail_inserts(schema, None)
        later = memory.retain("written after space was freed")  # no restart
        assert [r.id for r in memory.memories(limit=10)] == [later, kept]


def test_only_resource_states_are_storage_full() -> None:
    assert resource_failure("53300") is not None  # too_many_connections, inside a call
    for state in (None, "40001", "40P01", "23505", "42P01", "57P01", "08006", "58P01"):
        assert resource_failure(state) is None
