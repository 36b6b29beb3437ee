"""Reads and their orders, bank config, closing, reopening and threads."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from memwire.errors import StorageError
from memwire.store import BankStats, Row, Store
from memwire.store.protocol import CLOSED
from store_support import DATE, SPACE, StoreFactory, day, dump, item, vec

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent


def test_get_returns_the_stored_row(store: Store) -> None:
    a = item("content", tags=["t1", "t2"], context="ctx", document_id="doc", created_at=day(3))
    store.write("b", [item("first"), a])
    assert store.get(a.id) == Row(a.id, "b", 2, "content", "ctx", ("t1", "t2"), day(3), DATE, "doc")
    assert store.get("mem_unknown") is None


def test_rows_by_ordinal_leaves_out_what_is_not_live(store: Store) -> None:
    a, b, c = item("a"), item("b"), item("c")
    result = store.write("b", [a, b, c])
    store.forget(b.id, "b")
    found = store.rows_by_ordinal(result.bank_id, [3, 2, 1, 99])
    assert {o: r.id for o, r in found.items()} == {3: c.id, 1: a.id}
    assert store.rows_by_ordinal(result.bank_id, []) == {}
    assert store.rows_by_ordinal(result.bank_id + 100, [1]) == {}
    many = store.rows_by_ordinal(result.bank_id, list(range(1, 1200)))  # past any query chunk
    assert sorted(many) == [1, 3]


def test_list_rows_is_newest_first_then_higher_ordinal(store: Store) -> None:
    store.write(
        "b",
        [
            item("mid", created_at=day(5)),  # 1
            item("old", created_at=day(1)),  # 2
            item("new", created_at=day(9)),  # 3
            item("mid too", created_at=day(5)),  # 4
        ],
    )
    assert [r.content for r in store.list_rows("b", 10, 0)] == ["new", "mid too", "mid", "old"]
    assert [r.content for r in store.list_rows("b", 2, 1)] == ["mid too", "mid"]
    assert store.list_rows("b", 10, 4) == []
    assert store.list_rows("nope", 10, 0) == []


def test_iter_rows_is_by_ordinal_across_pages(store: Store) -> None:
    items = [item(f"memory {i}", created_at=day(1 + i % 20)) for i in range(2100)]
    store.write("b", items)
    store.forget(items[5].id, "b")
    rows = list(store.iter_rows("b"))
    assert [r.ordinal for r in rows] == [o for o in range(1, 2101) if o != 6]
    assert [r.id for r in rows] == [i.id for n, i in enumerate(items) if n != 5]
    assert list(store.iter_rows("nope")) == []


def test_stats(store: Store) -> None:
    store.write("empty", [])
    assert store.stats("empty") == BankStats(0, {}, None, None)
    assert store.stats("nope") is None
    store.write(
        "b",
        [
            item("a", tags=["y", "x"], created_at=day(4)),
            item("b", tags=["x"], created_at=day(2)),
            item("c", created_at=day(8)),
        ],
    )
    stats = store.stats("b")
    assert stats == BankStats(3, {"x": 2, "y": 1}, day(2), day(8))
    assert stats is not None and list(stats.tags) == ["x", "y"]  # by tag


def test_bank_names_are_sorted(store: Store) -> None:
    for name in ("zeta", "Alpha", "alpha", "émile", "beta"):
        store.write(name, [])
    assert store.bank_names() == ["Alpha", "alpha", "beta", "zeta", "émile"]  # code points


def test_count_rows(store: Store) -> None:
    result = store.write("b", [item("a"), item("b"), item("c")])
    assert [store.count_rows(result.bank_id, after) for after in (0, 1, 3)] == [3, 2, 0]
    assert store.count_rows(result.bank_id + 100) == 0


# -- config ------------------------------------------------------------------------------------


def test_update_config_creates_the_bank_and_keeps_json(store: Store) -> None:
    assert store.get_config("b") is None
    seen: list[dict[str, Any]] = []

    def update(current: dict[str, Any]) -> dict[str, Any]:
        seen.append(current)
        return {**current, "tags": ("a", "b"), "n": 1}

    returned = store.update_config("b", update)
    assert seen == [{}] and returned["n"] == 1
    assert store.get_config("b") == {"n": 1, "tags": ["a", "b"]}  # kept as JSON
    head = store.head("b")
    assert head is not None and head.config == {"n": 1, "tags": ["a", "b"]}
    store.update_config("b", lambda c: {**c, "m": 2})
    assert store.get_config("b") == {"m": 2, "n": 1, "tags": ["a", "b"]}


def test_a_config_read_is_a_copy(store: Store) -> None:
    store.update_config("b", lambda c: {"k": [1]})
    got = store.get_config("b")
    assert got is not None
    got["k"].append(2)
    got["new"] = True
    head = store.head("b")
    assert head is not None
    head.config["other"] = 1
    assert store.get_config("b") == {"k": [1]}


def test_a_failing_config_update_changes_nothing(store: Store) -> None:
    def fail(current: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        store.update_config("new", fail)
    assert store.head("new") is None
    store.update_config("b", lambda c: {"k": 1})
    with pytest.raises(RuntimeError):
        store.update_config("b", fail)
    assert store.get_config("b") == {"k": 1}


def test_config_updates_from_threads_are_atomic(store: Store) -> None:
    store.update_config("b", lambda c: {"n": 0})

    def bump() -> None:
        for _ in range(50):
            store.update_config("b", lambda c: {"n": c["n"] + 1})

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get_config("b") == {"n": 200}


# -- lifecycle ---------------------------------------------------------------------------------


def test_writes_from_threads_all_land_with_distinct_ordinals(store: Store) -> None:
    def retain(worker: int) -> None:
        for n in range(25):
            store.write("b", [item(f"w{worker} n{n}"), item(f"w{worker} n{n} bis")])

    threads = [threading.Thread(target=retain, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = list(store.iter_rows("b"))
    assert [r.ordinal for r in rows] == list(range(1, 201))
    assert len({r.content for r in rows}) == 200


def test_a_closed_store_refuses_every_call(store: Store) -> None:
    result = store.write("b", [item("a")])
    store.close()
    store.close()  # idempotent
    calls = [
        lambda: store.head("b"),
        lambda: store.bank_names(),
        lambda: store.write("b", [item("x")]),
        lambda: store.get("mem_x"),
        lambda: list(store.iter_rows("b")),
        lambda: store.changes_since(result.bank_id, 0),
        lambda: store.update_config("b", lambda c: c),
        lambda: store.count_rows(result.bank_id),
    ]
    for call in calls:
        with pytest.raises(StorageError) as caught:
            call()
        assert str(caught.value) == CLOSED


def test_a_durable_store_reopens_as_it_was(durable_factory: StoreFactory, tmp_path: Path) -> None:
    assert durable_factory.reopen is not None
    first = durable_factory.make(tmp_path)
    a = item("a", vector=vec(1, 2, 3, 4), tags=["t"])
    result = first.write("b", [a, item("b", document_id="d")], space=SPACE)
    first.write("b", [item("b2", document_id="d")])
    first.forget(a.id, "b")
    first.update_config("b", lambda c: {"ttl_days": 3})
    assert first.save_snapshot(result.bank_id, 4, b"snapshot", "shell")
    first.start_reembed("b", SPACE)
    before = dump(first)
    first.close()
    again = durable_factory.reopen(tmp_path)
    try:
        assert dump(again) == before
        assert again.durable
        snap = again.load_snapshot(result.bank_id, "shell")
        assert snap is not None and (snap.seq, snap.data) == (4, b"snapshot")
    finally:
        again.close()
