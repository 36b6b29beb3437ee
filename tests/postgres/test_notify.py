"""Replicas hear each other's writes (issue 14): a write sends a notification on the store's
channel at commit, and every other Memory on the store brings its loaded index of that bank up
to date at once, before any recall asks; polling backs up a missed notification, and a dropped
listening connection comes back by itself.

Each replica's poll interval is an hour unless the test is about polling, so that only a
notification can explain a catch-up. "Caught up" is read from the replica's index state and
then checked by a recall that is not allowed to replay anything (its store refuses): the
recall finds the token only because the index already held it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from memwire import Memory
from memwire.errors import InvalidInputError, StorageError
from memwire.store.postgres import PostgresStore
from postgres_support import connect, fresh_schema, postgres_url

pytestmark = pytest.mark.backend_independent

HOUR = 3600.0
BANK = "default"
PATIENCE_S = 60.0  # generous: a condition, not a budget
KERNEL = "python"  # what is tested is the store's; either kernel would do
MARKER = 999_999_999  # a bank id no test bank has


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {PATIENCE_S:.0f} s: {what}")
        time.sleep(0.02)


def applied(memory: Memory, bank: str = BANK) -> int:
    """The change sequence the replica's index of ``bank`` reflects (0: not loaded)."""
    state = memory._banks.get(bank)
    return 0 if state is None or state.index is None else state.applied


def listener(memory: Memory) -> Any:
    store = memory._store
    assert isinstance(store, PostgresStore)
    return store._listener


def head_seq(memory: Memory, bank: str = BANK) -> int:
    head = memory._store.head(bank)
    assert head is not None
    return head.last_seq


@contextmanager
def no_replay(memory: Memory) -> Iterator[None]:
    """Every way for ``memory`` to catch up with the store fails while inside."""
    store = memory._store

    def refuse(*_: object, **__: object) -> Any:
        raise AssertionError("the recall had to catch up by itself")

    saved = {name: getattr(store, name) for name in ("changes_since", "load_snapshot")}
    for name in saved:
        setattr(store, name, refuse)
    try:
        yield
    finally:
        for name in saved:
            delattr(store, name)


class Silent(PostgresStore):
    """A writer whose notifications are lost (sent where no replica listens)."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url, **options)
        self._channel = "memwire:nobody-listens-here"


def store_of(schema: str) -> PostgresStore:
    return PostgresStore(postgres_url(), schema=schema, poll_interval=HOUR)


@pytest.fixture
def schema() -> str:
    return fresh_schema()


def replica(schema: str, poll: float = HOUR) -> Memory:
    """A Memory with its index of BANK loaded, listening."""
    memory = Memory(
        store=PostgresStore(postgres_url(), schema=schema, poll_interval=poll), backend=KERNEL
    )
    memory.retain("the replica's first memory", bank=BANK)
    memory.recall("first memory", bank=BANK)  # loads the index, which starts the listener
    wait_for(lambda: listener(memory) is not None and listener(memory).sessions >= 1, "listening")
    return memory


def test_every_replica_hears_a_write_before_any_recall(schema: str) -> None:
    replicas = [replica(schema) for _ in range(2)]
    try:
        with Memory(store=store_of(schema), backend=KERNEL) as a:
            kept = a.retain("the zebrafish lives by the north pier", bank=BANK)
            seq = head_seq(a)
        for memory in replicas:
            wait_for(lambda m=memory: applied(m) >= seq, "the replica's index caught up")
            with no_replay(memory):
                hits = memory.recall("zebrafish north pier", bank=BANK)
            assert [h.id for h in hits][:1] == [kept]
    finally:
        for memory in replicas:
            memory.close()


def test_a_forget_and_a_deleted_bank_reach_the_replicas(schema: str) -> None:
    b = replica(schema)
    try:
        with Memory(store=store_of(schema), backend=KERNEL) as a:
            doomed = a.retain("the walrus lives by the north pier", bank=BANK)
            wait_for(lambda: applied(b) >= head_seq(a), "the retain reached the replica")
            assert a.forget(doomed, bank=BANK)
            seq = head_seq(a)
            wait_for(lambda: applied(b) >= seq, "the forget reached the replica")
            with no_replay(b):
                assert doomed not in {h.id for h in b.recall("walrus north pier", bank=BANK)}
            assert a.delete_bank(BANK)
        wait_for(lambda: applied(b) == 0, "the deleted bank's index was dropped")
    finally:
        b.close()


def test_polling_catches_a_missed_notification(schema: str) -> None:
    b = replica(schema, poll=0.2)
    silent = Silent(postgres_url(), schema=schema)
    try:
        with Memory(store=silent, backend=KERNEL) as a:
            kept = a.retain("the heron lives by the north pier", bank=BANK)
            seq = head_seq(a)
        wait_for(lambda: applied(b) >= seq, "a poll caught up the replica")
        with no_replay(b):
            assert kept in {h.id for h in b.recall("heron north pier", bank=BANK)}
    finally:
        b.close()


def test_without_a_notification_or_a_poll_the_index_waits_for_a_recall(schema: str) -> None:
    """The converse of the tests above (so they cannot pass by some other path): a write that
    sends no notification, under an hour's poll interval, leaves the index behind until a
    recall reads the head and replays, which still answers with the write."""
    b = replica(schema)
    before = applied(b)
    try:
        with Memory(store=Silent(postgres_url(), schema=schema), backend=KERNEL) as a:
            kept = a.retain("the ibis lives by the north pier", bank=BANK)
        # Notifications are delivered in commit order: once a marker sent after the write's
        # commit is heard, anything the write could have sent was heard before it.
        heard = threading.Event()
        store = b._store
        assert isinstance(store, PostgresStore)
        original = listener(b)._on_change

        def marker(bank_id: int | None, seq: int) -> None:
            if bank_id == MARKER:
                heard.set()
            else:
                original(bank_id, seq)

        listener(b)._on_change = marker
        with connect() as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (store._channel, f"{MARKER} 1"))
        wait_for(heard.is_set, "the marker was heard")
        assert applied(b) == before
        assert kept in {h.id for h in b.recall("ibis north pier", bank=BANK)}
        assert applied(b) > before
    finally:
        b.close()


def test_a_dropped_listening_connection_reconnects_and_catches_up(schema: str) -> None:
    b = replica(schema)
    try:
        first = listener(b).backend_pid
        assert first is not None
        with connect() as conn:
            assert conn.execute("SELECT pg_terminate_backend(%s)", (first,)).fetchone() == (True,)
        with Memory(store=store_of(schema), backend=KERNEL) as a:
            kept = a.retain("the osprey lives by the north pier", bank=BANK)
            seq = head_seq(a)
        wait_for(lambda: listener(b).sessions >= 2, "the listener reconnected")
        wait_for(lambda: applied(b) >= seq, "the replica caught up after reconnecting")
        assert listener(b).backend_pid not in (None, first)
        with no_replay(b):
            assert kept in {h.id for h in b.recall("osprey north pier", bank=BANK)}
    finally:
        b.close()


def test_a_replica_ignores_another_stores_channel(schema: str) -> None:
    """Two stores (schemas) in one database: a write to one is not heard by the other's
    replica as a change of its bank with the same id."""
    b = replica(schema)
    other = fresh_schema()
    try:
        calls: list[tuple[int | None, int]] = []
        original = listener(b)._on_change

        def spy(bank_id: int | None, seq: int) -> None:
            calls.append((bank_id, seq))
            original(bank_id, seq)

        listener(b)._on_change = spy
        with Memory(store=store_of(other), backend=KERNEL) as a:
            a.retain("a memory of the other store", bank=BANK)
            a.retain("another memory of the other store", bank=BANK)
        with Memory(store=store_of(schema), backend=KERNEL) as c:
            c.retain("a memory of this store", bank=BANK)
            seq = head_seq(c)
        wait_for(lambda: applied(b) >= seq, "this store's write was heard")
        assert all(s <= seq for _, s in calls) and (b._banks[BANK].bank_id, seq) in calls
        assert len([c for c in calls if c[0] is not None]) == 1
    finally:
        b.close()


@pytest.mark.parametrize("value", [0, 0.01, 86_401, "30", True])
def test_a_bad_poll_interval_is_refused(value: Any) -> None:
    with pytest.raises(InvalidInputError, match="poll_interval must be a number of seconds"):
        PostgresStore(postgres_url(), poll_interval=value)


@pytest.mark.parametrize("raw", ["0", "soon"])
def test_a_bad_poll_interval_in_the_environment_is_refused(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_PG_POLL_SECONDS", raw)
    with pytest.raises(InvalidInputError, match=r"\$MEMWIRE_PG_POLL_SECONDS must be a number"):
        PostgresStore(postgres_url())


def test_the_poll_interval_from_the_environment_drives_polling(
    schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_PG_POLL_SECONDS", "0.2")
    b = Memory(store=PostgresStore(postgres_url(), schema=schema), backend=KERNEL)
    try:
        b.retain("the replica's first memory", bank=BANK)
        b.recall("first memory", bank=BANK)
        with Memory(store=Silent(postgres_url(), schema=schema), backend=KERNEL) as a:
            a.retain("the plover lives by the north pier", bank=BANK)
            seq = head_seq(a)
        wait_for(lambda: applied(b) >= seq, "a poll caught up the replica")
    finally:
        b.close()


def test_a_store_is_watched_once_and_not_after_close(schema: str) -> None:
    store = store_of(schema)
    store.watch(lambda bank_id, seq: None)
    with pytest.raises(InvalidInputError, match="already watched"):
        store.watch(lambda bank_id, seq: None)
    store.close()
    fresh = store_of(schema)
    fresh.close()
    with pytest.raises(StorageError, match="closed"):
        fresh.watch(lambda bank_id, seq: None)


def test_a_replica_skips_the_notifications_of_its_own_writes(schema: str) -> None:
    """Its own write is applied by the writing call itself: the listener does not replay it
    again (the marker, sent after the write's commit, is heard after anything the write sent)."""
    b = replica(schema)
    try:
        heard: list[tuple[int | None, int]] = []
        marked = threading.Event()
        original = listener(b)._on_change

        def spy(bank_id: int | None, seq: int) -> None:
            if bank_id == MARKER:
                marked.set()
                return
            heard.append((bank_id, seq))
            original(bank_id, seq)

        listener(b)._on_change = spy
        kept = b.retain("the gannet lives by the north pier", bank=BANK)
        store = b._store
        assert isinstance(store, PostgresStore)
        with connect() as conn:
            conn.execute("SELECT pg_notify(%s, %s)", (store._channel, f"{MARKER} 1"))
        wait_for(marked.is_set, "the marker was heard")
        assert heard == []
        with no_replay(b):
            assert kept in {h.id for h in b.recall("gannet north pier", bank=BANK)}
    finally:
        b.close()
