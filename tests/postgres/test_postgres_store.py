"""What the PostgreSQL store does beyond the conformance suite (tests/store/): snapshots
uploaded in parts before the bank is locked, uploads left behind cleaned up, and writers of
one bank on several connections at once."""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Iterator

import pytest
from memwire.store import NewMemory
from memwire.store.postgres import PostgresStore
from memwire.store.postgres import store as pg_store
from postgres_support import connect, fresh_schema, postgres_url

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    opened = PostgresStore(postgres_url(), schema=fresh_schema())
    yield opened
    opened.close()


def parts(store: PostgresStore) -> list[tuple[int, int]]:
    with connect() as conn:
        rows = conn.execute(
            f"SELECT blob_id, part FROM {store._schema}.snapshot_parts ORDER BY blob_id, part"
        ).fetchall()
    return [(r[0], r[1]) for r in rows]


def test_a_snapshot_in_several_parts_reads_back_whole(
    store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_store, "SNAPSHOT_PART", 7)
    bank_id = store.write("b", []).bank_id
    data = bytes(range(256)) * 3
    assert store.save_snapshot(bank_id, 0, data, "s")
    loaded = store.load_snapshot(bank_id, "s")
    assert loaded is not None and (loaded.seq, loaded.data) == (0, data)
    first = parts(store)
    assert len(first) == -(-len(data) // 7)  # ceil: every part stored, in order
    # A newer snapshot replaces the old upload; a refused one leaves nothing behind.
    assert store.save_snapshot(bank_id, 0, b"newer", "s", replace_same=True)
    assert [p for _, p in parts(store)] == [0]
    assert not store.save_snapshot(bank_id, 0, b"same seq, refused", "s")
    assert len(parts(store)) == 1
    loaded = store.load_snapshot(bank_id, "s")
    assert loaded is not None and loaded.data == b"newer"


def test_an_upload_left_by_a_dead_process_is_removed_later(store: PostgresStore) -> None:
    bank_id = store.write("b", []).bank_id
    with connect() as conn:
        for blob_id, created in (
            (900, "2000-01-01T00:00:00.000000Z"),
            (901, "2999-01-01T00:00:00.000000Z"),
        ):
            conn.execute(
                f"INSERT INTO {store._schema}.snapshot_parts VALUES (%s, 0, %s, %s, 'x')",
                (blob_id, bank_id, created),
            )
    assert store.save_snapshot(bank_id, 0, b"snap", "s")
    left = {blob_id for blob_id, _ in parts(store)}
    assert 900 not in left  # an hour old and pointed at by nothing: an upload that died
    assert 901 in left  # recent: maybe another replica's upload about to be swapped in
    assert store.delete_bank("b")
    assert parts(store) == []


def test_concurrent_writers_of_one_bank_keep_the_sequence_and_dedupe_exact() -> None:
    """Four stores (four connections, as four hosts would have) write the same bank at once:
    the same 40 contents each (dedupe must give one memory per content, the same id to all),
    plus 40 of their own. Ordinals are then exactly 1..200, each once."""
    schema = fresh_schema()
    PostgresStore(postgres_url(), schema=schema).close()  # the schema, once
    stores = [PostgresStore(postgres_url(), schema=schema) for _ in range(4)]
    shared = [f"shared fact {n}" for n in range(40)]
    results: dict[int, dict[str, str]] = {}
    failures: list[BaseException] = []

    def work(w: int) -> None:
        try:
            got: dict[str, str] = {}
            for n in range(40):
                for content in (shared[(n + 10 * w) % 40], f"writer {w} own fact {n}"):
                    got[content] = store_item(stores[w], content)
            results[w] = got
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert failures == []
        for content in shared:  # every writer was given the same id for the same content
            assert len({results[w][content] for w in range(4)}) == 1
        rows = list(stores[0].iter_rows("b"))
        assert [r.ordinal for r in rows] == list(range(1, 201))
        assert len({r.content for r in rows}) == 200
        head = stores[0].head("b")
        assert head is not None and head.last_seq == 200
    finally:
        for opened in stores:
            opened.close()


def store_item(store: PostgresStore, content: str) -> str:
    item = NewMemory(
        id=f"mem_{uuid.uuid4().hex}",
        content=content,
        context=None,
        tags=(),
        created_at="2024-05-01T09:30:00.000000Z",
        retained_at="2024-05-01T09:30:00.000000Z",
        document_id=None,
        update_mode="replace",
        content_hash=hashlib.sha256(content.encode()).digest(),
    )
    return store.write("b", [item]).ids[0]
