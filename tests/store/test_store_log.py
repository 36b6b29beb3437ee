"""The change log: forget, TTL expiry, ``changes_since`` and its gaps, recall's filter, and
deleting a bank."""

from __future__ import annotations

import pytest
from memwire.store import Allowed, Expired, Expiring, Store, WriteResult
from store_support import OTHER_SPACE, day, item

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent


def bank_id(store: Store, bank: str = "b") -> int:
    head = store.head(bank)
    assert head is not None
    return head.bank_id


def test_forget_is_a_logged_removal(store: Store) -> None:
    a, b = item("a"), item("b")
    store.write("b", [a, b])
    result = store.forget(a.id, None)
    assert result == WriteResult("b", bank_id(store), [a.id], result.added, [1], 2, 3)
    assert result is not None and len(result.added) == 0
    assert store.get(a.id) is None
    assert store.forget(a.id, None) is None  # idempotent
    assert store.forget("mem_unknown", None) is None
    head = store.head("b")
    assert head is not None and head.last_seq == 3


def test_forget_in_another_bank_changes_nothing(store: Store) -> None:
    a = item("a")
    store.write("b", [a])
    store.write("c", [])
    assert store.forget(a.id, "c") is None
    assert store.get(a.id) is not None
    result = store.forget(a.id, "b")
    assert result is not None and result.bank == "b"


def test_changes_since_any_point_brings_an_index_to_the_live_rows(store: Store) -> None:
    a, b, c = item("a"), item("b"), item("c", vector=None)
    store.write("b", [a, b, c])  # ordinals 1 2 3
    store.forget(b.id, "b")  # seq 4 removes 2
    store.write("b", [item("d", document_id="doc")])  # 5
    store.write("b", [item("e", document_id="doc")])  # seq 6 removes 5, 7 adds e
    store.forget(a.id, "b")  # seq 8 removes 1
    ident = bank_id(store)
    expected = {
        0: ([], [3, 7]),
        1: ([2, 5, 1], [3, 7]),
        3: ([2, 5, 1], [7]),
        4: ([5, 1], [7]),
        5: ([5, 1], [7]),
        6: ([1], [7]),
        7: ([1], []),
        8: ([], []),
    }
    for since, (removed, added) in expected.items():
        changes = store.changes_since(ident, since)
        assert changes is not None
        assert (changes.removed, changes.added.ordinals) == (removed, added), since
        assert (changes.last_seq, changes.gap) == (8, False)
    full = store.changes_since(ident, 0)
    assert full is not None
    assert [(x.ordinal, x.content) for x in full.added] == [(3, "c"), (7, "e")]
    assert store.changes_since(ident + 100, 0) is None


def test_a_pruned_log_is_a_gap(store: Store) -> None:
    a, b, c = item("a"), item("b"), item("c")
    store.write("b", [a, b, c])
    store.forget(a.id, "b")  # seq 4
    store.forget(b.id, "b")  # seq 5
    ident = bank_id(store)
    assert store.save_snapshot(ident, 4, b"snap", "shell")  # prunes the removals up to 4
    for since in (1, 3):
        changes = store.changes_since(ident, since)
        assert changes is not None
        assert (changes.gap, changes.last_seq, changes.removed, len(changes.added)) == (
            True,
            5,
            [],
            0,
        )
    for since, removed in ((4, [2]), (5, [])):
        changes = store.changes_since(ident, since)
        assert changes is not None and (changes.gap, changes.removed) == (False, removed)
    fresh = store.changes_since(ident, 0)  # a rebuild never has a gap
    assert fresh is not None and (fresh.gap, fresh.added.ordinals) == (False, [3])


def test_expire_removes_older_memories_by_ordinal(store: Store) -> None:
    old2, new, old1 = (
        item("old2", created_at=day(2)),
        item("new", created_at=day(9)),
        item("old1", created_at=day(1)),
    )
    store.write("b", [old2, new, old1])
    dry = store.expire("b", day(5), dry_run=True)
    assert dry == Expired([old2.id, old1.id], None)
    assert store.count_rows(bank_id(store)) == 3
    done = store.expire("b", day(5), dry_run=False)
    assert done.ids == [old2.id, old1.id]
    assert done.result is not None
    assert (done.result.ids, done.result.removed) == ([old2.id, old1.id], [1, 3])
    assert (done.result.first_seq, done.result.last_seq) == (3, 5)
    assert [r.id for r in store.iter_rows("b")] == [new.id]
    assert store.expire("b", day(5), dry_run=False) == Expired([], None)
    assert store.expire("nope", day(5), dry_run=False) == Expired([], None)
    assert store.expire("nope", day(5), dry_run=True) == Expired([], None)
    assert store.head("nope") is None  # expire creates no bank


def test_the_cutoff_is_exclusive(store: Store) -> None:
    at = item("at", created_at=day(5))
    store.write("b", [at])
    assert store.expire("b", day(5), dry_run=False) == Expired([], None)


def test_allowed_filters_by_tags(store: Store) -> None:
    store.write(
        "b",
        [
            item("a", tags=["x"], created_at=day(1)),  # 1
            item("b", tags=["x", "y"], created_at=day(5)),  # 2
            item("c", tags=["z"], created_at=day(6)),  # 3
            item("d", created_at=day(7)),  # 4
        ],
    )
    ident = bank_id(store)
    assert store.allowed(ident, [], []) == Allowed(None)
    assert store.allowed(ident, ["x"], []) == Allowed([1, 2])
    assert store.allowed(ident, ["x", "z"], []) == Allowed([1, 2, 3])
    assert store.allowed(ident, [], ["y"]) == Allowed([1, 3, 4])
    assert store.allowed(ident, ["x"], ["y"]) == Allowed([1])
    nothing = store.allowed(ident, ["unknown"], [])
    assert nothing == Allowed([]) and nothing.nothing
    assert not Allowed(None).nothing and not Allowed([1]).nothing


def test_expiring_lists_the_memories_before_the_cutoff_and_the_next(store: Store) -> None:
    store.write(
        "b",
        [
            item("a", created_at=day(7)),  # 1
            item("b", created_at=day(1)),  # 2
            item("c", created_at=day(5)),  # 3
            item("d", created_at=day(5)),  # 4
        ],
    )
    store.write("other", [item("e", created_at=day(2))])
    ident = bank_id(store)
    assert store.expiring(ident, day(1)) == Expiring([], day(1))  # the cutoff is exclusive
    assert store.expiring(ident, day(2)) == Expiring([2], day(5))
    assert store.expiring(ident, day(6)) == Expiring([2, 3, 4], day(7))
    assert store.expiring(ident, day(8)) == Expiring([1, 2, 3, 4], None)
    store.expire("b", day(6), dry_run=False)
    assert store.expiring(ident, day(8)) == Expiring([1], None)  # live memories only
    assert store.expiring(bank_id(store, "other"), day(3)) == Expiring([1], None)
    assert store.expiring(ident + 100, day(8)) == Expiring([], None)  # no such bank


def test_delete_bank_removes_everything_of_it(store: Store) -> None:
    a = item("a")
    store.write("b", [a])
    store.write("c", [item("c")])
    store.update_config("b", lambda c: {"k": 1})
    old = bank_id(store)
    store.forget(a.id, "b")
    assert store.save_snapshot(old, 2, b"snap", "shell")
    store.write("b", [item("again")])
    store.start_reembed("b", OTHER_SPACE)
    assert store.delete_bank("b")
    assert not store.delete_bank("b")
    assert store.head("b") is None and store.get_config("b") is None
    assert store.bank_names() == ["c"]
    assert store.stats("b") is None and store.list_rows("b", 10, 0) == []
    assert list(store.iter_rows("b")) == []
    assert store.changes_since(old, 0) is None
    assert store.load_snapshot(old, "shell") is None
    assert store.reembed_state("b") is None
    assert store.rows_by_ordinal(old, [1, 3]) == {}
    assert store.count_rows(old) == 0
    # the bank comes back empty, under a new id
    store.write("b", [])
    assert bank_id(store) != old
    assert store.get_config("b") == {}


@pytest.mark.parametrize("bank", [None, "b"])
def test_forget_result_names_the_bank(store: Store, bank: str | None) -> None:
    a = item("a")
    store.write("b", [a])
    result = store.forget(a.id, bank)
    assert result is not None and (result.bank, result.bank_id) == ("b", bank_id(store))
