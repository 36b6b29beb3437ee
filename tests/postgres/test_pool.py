"""The PostgreSQL store's connection pool (issue 14): concurrent calls of one process run on
separate connections (up to ``pool_size``) instead of queueing on one; the size is an option
with an environment default, checked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from memwire import Memory
from memwire.errors import InvalidInputError
from memwire.store.postgres import PostgresStore
from postgres_support import fresh_schema, postgres_url

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def schema() -> str:
    return fresh_schema()


def meet(store: PostgresStore, callers: int, timeout: float) -> list[int]:
    """``callers`` threads, each inside a store call at once (a barrier in the call): the
    backend pid each ran on. Raises BrokenBarrierError if they could not all be in at once."""
    barrier = threading.Barrier(callers, timeout=timeout)

    def call(_: int) -> int:
        def inside(conn: Any) -> int:
            pid: int = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
            barrier.wait()
            return pid

        return store._one(inside, "read")

    with ThreadPoolExecutor(callers) as pool:
        return list(pool.map(call, range(callers)))


def test_concurrent_calls_run_on_separate_connections(schema: str) -> None:
    store = PostgresStore(postgres_url(), schema=schema, pool_size=3)
    try:
        pids = meet(store, 3, timeout=60)
        assert len(set(pids)) == 3
        # The connections stay open for the next calls: no new ones.
        assert set(meet(store, 3, timeout=60)) == set(pids)
    finally:
        store.close()


def test_calls_beyond_the_pool_wait_for_a_connection(schema: str) -> None:
    store = PostgresStore(postgres_url(), schema=schema, pool_size=1)
    try:
        with pytest.raises(threading.BrokenBarrierError):
            meet(store, 2, timeout=2)  # the second caller waits for the first's connection
        assert len(set(meet(store, 1, timeout=60))) == 1  # and the store still works
    finally:
        store.close()


@pytest.fixture
def no_pool_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    monkeypatch.delenv("MEMWIRE_PG_POOL_SIZE", raising=False)
    yield monkeypatch


def test_pool_size_from_the_environment(schema: str, no_pool_env: pytest.MonkeyPatch) -> None:
    no_pool_env.setenv("MEMWIRE_PG_POOL_SIZE", "2")
    store = PostgresStore(postgres_url(), schema=schema)
    try:
        assert len(set(meet(store, 2, timeout=60))) == 2
        with pytest.raises(threading.BrokenBarrierError):
            meet(store, 3, timeout=2)
    finally:
        store.close()


@pytest.mark.parametrize("size", [0, -1, 65, 2.5, True, "4"])
def test_a_bad_pool_size_is_refused(size: Any) -> None:
    with pytest.raises(InvalidInputError, match="pool_size must be an integer from 1 to 64"):
        PostgresStore(postgres_url(), pool_size=size)


@pytest.mark.parametrize("raw", ["0", "lots", "1.5"])
def test_a_bad_pool_size_in_the_environment_is_refused(
    raw: str, no_pool_env: pytest.MonkeyPatch
) -> None:
    no_pool_env.setenv("MEMWIRE_PG_POOL_SIZE", raw)
    with pytest.raises(InvalidInputError, match=r"\$MEMWIRE_PG_POOL_SIZE must be an integer"):
        PostgresStore(postgres_url())


def test_concurrent_recalls_and_retains_through_one_memory(schema: str) -> None:
    """A Memory shared by threads on a pooled store: every retain is found by every thread."""
    store = PostgresStore(postgres_url(), schema=schema, pool_size=4)
    with Memory(store=store, backend="python") as memory:

        def work(n: int) -> tuple[str, int]:
            kept = memory.retain(f"harbour note {n} about the crane schedule")
            return kept, n

        with ThreadPoolExecutor(4) as pool:
            kept = dict(pool.map(work, range(40)))
        with ThreadPoolExecutor(4) as pool:
            found = dict(
                pool.map(lambda n: (n, memory.recall(f"harbour note {n}", limit=5)), range(40))
            )
        for memory_id, n in kept.items():
            assert memory_id in {h.id for h in found[n]}
        assert memory.stats()["count"] == 40
