"""Index snapshots: which one a store keeps, and the log it prunes."""

from __future__ import annotations

import pytest
from memwire.store import Snapshot, Store
from store_support import item

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent


def bank_at(store: Store, seq: int) -> int:
    """A bank "b" whose last_seq is ``seq`` (``seq`` memories)."""
    return store.write("b", [item(f"m{n}") for n in range(seq)]).bank_id


def test_a_snapshot_is_loaded_for_its_shell_only(store: Store) -> None:
    ident = bank_at(store, 3)
    assert store.load_snapshot(ident, "shell=1") is None
    assert store.save_snapshot(ident, 3, b"\x00data\xff", "shell=1")
    assert store.load_snapshot(ident, "shell=1") == Snapshot(3, b"\x00data\xff")
    assert store.load_snapshot(ident, "shell=2") is None
    assert store.load_snapshot(ident + 100, "shell=1") is None


def test_an_older_snapshot_never_replaces_a_newer_one(store: Store) -> None:
    ident = bank_at(store, 5)
    assert store.save_snapshot(ident, 4, b"four", "s")
    assert not store.save_snapshot(ident, 3, b"three", "s")
    assert not store.save_snapshot(ident, 3, b"three", "s", replace_same=True)
    assert store.load_snapshot(ident, "s") == Snapshot(4, b"four")
    assert store.save_snapshot(ident, 5, b"five", "s")
    assert store.load_snapshot(ident, "s") == Snapshot(5, b"five")


def test_the_same_seq_replaces_only_when_asked(store: Store) -> None:
    ident = bank_at(store, 2)
    assert store.save_snapshot(ident, 2, b"plain", "s")
    assert not store.save_snapshot(ident, 2, b"with graph", "s")
    assert store.load_snapshot(ident, "s") == Snapshot(2, b"plain")
    assert store.save_snapshot(ident, 2, b"with graph", "s", replace_same=True)
    assert store.load_snapshot(ident, "s") == Snapshot(2, b"with graph")


def test_a_snapshot_of_another_shell_is_always_replaced(store: Store) -> None:
    ident = bank_at(store, 5)
    assert store.save_snapshot(ident, 5, b"old format", "old")
    assert store.save_snapshot(ident, 5, b"new format", "new")
    assert store.load_snapshot(ident, "old") is None
    assert store.load_snapshot(ident, "new") == Snapshot(5, b"new format")


def test_saving_prunes_the_removals_it_covers(store: Store) -> None:
    items = [item(f"m{n}") for n in range(4)]
    ident = store.write("b", items).bank_id
    for doomed in items[:3]:
        store.forget(doomed.id, "b")  # seqs 5, 6, 7 remove 1, 2, 3
    assert store.save_snapshot(ident, 6, b"six", "s")
    changes = store.changes_since(ident, 6)
    assert changes is not None and (changes.gap, changes.removed) == (False, [3])
    stale = store.changes_since(ident, 5)
    assert stale is not None and stale.gap


def test_a_snapshot_of_a_deleted_bank_or_before_a_reembed_is_refused(store: Store) -> None:
    ident = bank_at(store, 3)
    store.start_reembed("b", ("e", 4))
    store.stage_vectors(ident, ("e", 4), [], 3)
    switched = store.finish_reembed(ident, ("e", 4))
    assert switched == 4
    assert not store.save_snapshot(ident, 3, b"old vectors", "s")  # older than the switch
    assert store.save_snapshot(ident, 4, b"new vectors", "s")
    store.delete_bank("b")
    assert not store.save_snapshot(ident, 4, b"late", "s")
    assert store.load_snapshot(ident, "s") is None
