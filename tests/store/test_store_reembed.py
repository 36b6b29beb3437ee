"""The reembed state machine: start or resume, pages, staging, the switch, and its conflicts."""

from __future__ import annotations

import pytest
from memwire.errors import ConflictError, InvalidInputError, NotFoundError
from memwire.store import ReembedItem, ReembedState, StagedVector, Store
from memwire.store.protocol import reembed_gone, reembed_moved, space_mismatch
from store_support import OTHER_SPACE, SPACE, item, vec

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent

NEW = OTHER_SPACE


def bank(store: Store, n: int = 3) -> int:
    """Bank "b" with ``n`` memories carrying vectors of ``SPACE``."""
    items = [
        item(f"m{i}", context="c" if i == 0 else None, vector=vec(i, 0, 0, 0)) for i in range(n)
    ]
    return store.write("b", items, space=SPACE).bank_id


def test_start_resume_and_restart(store: Store) -> None:
    with pytest.raises(NotFoundError):
        store.start_reembed("nope", NEW)
    ident = bank(store)
    assert store.reembed_state("b") is None
    assert store.start_reembed("b", NEW) == ReembedState(ident, NEW, 0)
    store.stage_vectors(ident, NEW, [StagedVector(1, vec(9, 9, 9, 9))], 1)
    assert store.reembed_state("b") == ReembedState(ident, NEW, 1)
    assert store.start_reembed("b", NEW) == ReembedState(ident, NEW, 1)  # resumed
    third = ("third", 2)
    assert store.start_reembed("b", third) == ReembedState(ident, third, 0)  # restarted
    # the discarded run's staged vector is gone: finishing gives memory 1 no vector
    store.stage_vectors(ident, third, [StagedVector(2, b"\x01\x00\x02\x00")], 3)
    assert store.finish_reembed(ident, third) == 4
    changes = store.changes_since(ident, 0)
    assert changes is not None and changes.added.vectors == [None, b"\x01\x00\x02\x00", None]


def test_pages_are_live_memories_by_ordinal(store: Store) -> None:
    ident = bank(store, 5)
    store.forget(store.rows_by_ordinal(ident, [2])[2].id, "b")
    assert store.reembed_page(ident, 0, 2) == [
        ReembedItem(1, "m0", "c"),
        ReembedItem(3, "m2", None),
    ]
    assert [p.ordinal for p in store.reembed_page(ident, 3, 10)] == [4, 5]
    assert store.reembed_page(ident, 5, 10) == []
    assert store.reembed_page(ident + 100, 0, 10) == []


def test_the_switch_swaps_vectors_records_the_space_and_leaves_a_gap(store: Store) -> None:
    ident = bank(store)
    assert store.save_snapshot(ident, 3, b"old", "s")
    store.start_reembed("b", NEW)
    store.stage_vectors(ident, NEW, [StagedVector(1, vec(5, 5, 5, 5))], 1)
    store.stage_vectors(ident, NEW, [StagedVector(2, vec(6, 6, 6, 6)), StagedVector(3, None)], 3)
    # until the switch the bank keeps its space and vectors
    head = store.head("b")
    assert head is not None and head.space == SPACE
    with pytest.raises(InvalidInputError) as caught:
        store.write("b", [item("new", vector=vec(1, 1, 1, 1))], space=NEW)
    assert str(caught.value) == space_mismatch("b", SPACE, NEW)
    assert store.finish_reembed(ident, NEW) == 4
    head = store.head("b")
    assert head is not None and (head.space, head.last_seq) == (NEW, 4)
    assert store.reembed_state("b") is None
    assert store.load_snapshot(ident, "s") is None  # the old vectors' snapshot is dropped
    gap = store.changes_since(ident, 3)
    assert gap is not None and gap.gap  # every index of the old vectors reloads
    fresh = store.changes_since(ident, 0)
    assert fresh is not None
    assert fresh.added.vectors == [vec(5, 5, 5, 5), vec(6, 6, 6, 6), None]
    assert store.write("b", [item("new", vector=vec(1, 1, 1, 1))], space=NEW).dim == 4


def test_memories_above_the_cursor_hold_the_switch_back(store: Store) -> None:
    ident = bank(store, 2)
    store.start_reembed("b", NEW)
    store.stage_vectors(ident, NEW, [StagedVector(1, vec(1, 0, 0, 0))], 1)
    assert store.finish_reembed(ident, NEW) is None  # memory 2 is not encoded yet
    head = store.head("b")
    assert head is not None and (head.space, head.last_seq) == (SPACE, 2)
    store.write("b", [item("late", vector=vec(3, 0, 0, 0))], space=SPACE)  # 3, the old space
    store.stage_vectors(ident, NEW, [StagedVector(2, vec(2, 0, 0, 0))], 2)
    assert store.finish_reembed(ident, NEW) is None
    assert [p.ordinal for p in store.reembed_page(ident, 2, 10)] == [3]
    store.stage_vectors(ident, NEW, [StagedVector(3, vec(3, 3, 3, 3))], 3)
    assert store.finish_reembed(ident, NEW) == 4


def test_the_cursor_never_moves_back_and_a_later_vector_wins(store: Store) -> None:
    ident = bank(store)
    store.start_reembed("b", NEW)
    store.stage_vectors(ident, NEW, [StagedVector(1, vec(1, 0, 0, 0))], 3)
    store.stage_vectors(ident, NEW, [StagedVector(1, vec(7, 0, 0, 0))], 1)
    assert store.reembed_state("b") == ReembedState(ident, NEW, 3)
    assert store.finish_reembed(ident, NEW) == 4
    changes = store.changes_since(ident, 0)
    assert changes is not None and changes.added.vectors == [vec(7, 0, 0, 0), None, None]


def test_a_reembed_that_is_gone_or_moved_conflicts(store: Store) -> None:
    ident = bank(store)
    for call in (
        lambda: store.stage_vectors(ident, NEW, [], 1),
        lambda: store.finish_reembed(ident, NEW),
    ):
        with pytest.raises(ConflictError) as caught:
            call()
        assert str(caught.value) == reembed_gone(bank_exists=True)
    store.start_reembed("b", ("third", 2))
    with pytest.raises(ConflictError) as moved:
        store.stage_vectors(ident, NEW, [StagedVector(1, None)], 1)
    assert str(moved.value) == reembed_moved("third")
    assert store.reembed_state("b") == ReembedState(ident, ("third", 2), 0)  # nothing staged
    store.delete_bank("b")
    with pytest.raises(NotFoundError) as deleted:
        store.finish_reembed(ident, ("third", 2))
    assert str(deleted.value) == reembed_gone(bank_exists=False)
