"""A replica that fell behind converges (issue 14): another replica wrote, forgot and saved a
snapshot that pruned the removals the lagging one needs; the lagging one notices the gap at its
next recall and reloads, never answering with a forgotten memory."""

from __future__ import annotations

import pytest
from backends import require
from memwire import Memory
from memwire.store.postgres import PostgresStore
from postgres_support import fresh_schema, postgres_url


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    return require(request.param)


def test_a_lagging_replica_reloads_past_a_pruned_log(backend: str) -> None:
    schema = fresh_schema()
    url = postgres_url()
    lagging = Memory(store=PostgresStore(url, schema=schema), backend=backend)
    try:
        doomed = lagging.retain("the old staging host is stg1 on port 5433")
        kept = lagging.retain("the new staging host is stg2 on port 5434")
        assert {h.id for h in lagging.recall("staging host port")} == {doomed, kept}

        with Memory(store=PostgresStore(url, schema=schema), backend=backend) as busy:
            busy.recall("staging")  # its index is loaded, so close() snapshots it
            assert busy.forget(doomed)
            fresh = busy.retain_many([f"deploy note {n} for staging" for n in range(1200)])
            assert len(fresh) == 1200
        # busy's close() saved a snapshot at its head, pruning the log of doomed's removal.
        store = PostgresStore(url, schema=schema)
        try:
            head = store.head("default")
            assert head is not None
            changes = store.changes_since(head.bank_id, 2)  # where the lagging index stands
            assert changes is not None and changes.gap
        finally:
            store.close()

        hits = lagging.recall("staging host port", limit=50)
        assert doomed not in {h.id for h in hits}
        assert kept in {h.id for h in hits}
        assert lagging.stats()["count"] == 1201
        assert fresh[-1] in {h.id for h in lagging.recall("deploy note 1199 staging", limit=50)}
    finally:
        lagging.close()
