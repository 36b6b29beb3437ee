"""Writes: ordinals, dedupe, document upsert, imports, config tags, spaces, atomicity."""

from __future__ import annotations

from typing import Any

import pytest
from memwire.errors import ConflictError, InvalidInputError, StorageError
from memwire.store import MAX_ORDINAL, Addition, Additions, Store
from memwire.store.protocol import EXHAUSTED, NO_SPACE, document_conflict, space_mismatch
from store_support import OTHER_SPACE, SPACE, StoreFactory, item, vec

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent


def live(store: Store, bank: str = "b") -> list[tuple[int, str]]:
    return [(r.ordinal, r.content) for r in store.iter_rows(bank)]


def test_the_store_is_a_store(store: Store, store_factory: StoreFactory) -> None:
    assert isinstance(store, Store)
    assert store.durable is (store_factory.reopen is not None)


def test_ordinals_are_the_change_sequence_from_one(store: Store) -> None:
    a, b, c = item("a"), item("b"), item("c", context="ctx", vector=vec(1, 2, 3, 4))
    result = store.write("b", [a, b, c], space=SPACE)
    assert result.ids == [a.id, b.id, c.id]
    assert list(result.added) == [
        Addition(1, "a", None, None),
        Addition(2, "b", None, None),
        Addition(3, "c", "ctx", vec(1, 2, 3, 4)),
    ]
    assert (result.removed, result.first_seq, result.last_seq, result.dim) == ([], 0, 3, 4)
    head = store.head("b")
    assert head is not None
    assert (head.bank_id, head.last_seq, head.space) == (result.bank_id, 3, SPACE)
    assert live(store) == [(1, "a"), (2, "b"), (3, "c")]


def test_an_empty_write_creates_the_bank(store: Store) -> None:
    assert store.head("b") is None
    result = store.write("b", [])
    assert (result.ids, len(result.added), result.first_seq, result.last_seq) == ([], 0, 0, 0)
    assert result.dim == 0
    head = store.head("b")
    assert head is not None and (head.last_seq, head.config, head.space) == (0, {}, None)
    assert store.bank_names() == ["b"]


def test_identical_content_returns_the_existing_id_and_changes_nothing(store: Store) -> None:
    first = item("same", tags=["t"])
    store.write("b", [first])
    again = item("same", tags=["other"], context="new context")
    result = store.write("b", [again])
    assert result.ids == [first.id]
    assert (len(result.added), result.removed, result.first_seq, result.last_seq) == (0, [], 1, 1)
    row = store.get(first.id)
    assert row is not None and (row.tags, row.context) == (("t",), None)  # nothing merged
    assert store.get(again.id) is None


def test_dedupe_sees_earlier_items_of_the_same_batch(store: Store) -> None:
    a, b = item("x"), item("x")
    result = store.write("b", [a, b])
    assert result.ids == [a.id, a.id]
    assert result.added.ordinals == [1]


def test_dedupe_is_per_bank_and_only_among_memories_without_a_document(store: Store) -> None:
    plain = item("x")
    store.write("b", [plain])
    documented = item("x", document_id="d")
    elsewhere = item("x")
    assert store.write("b", [documented]).ids == [documented.id]  # not deduplicated
    assert store.write("c", [elsewhere]).ids == [elsewhere.id]  # another bank
    assert store.write("b", [item("x")]).ids == [plain.id]  # the plain one, not the document's
    assert live(store) == [(1, "x"), (2, "x")]


def test_a_document_with_the_same_content_returns_its_id(store: Store) -> None:
    first = item("v1", document_id="d")
    store.write("b", [first])
    for mode in ("replace", "append"):
        result = store.write("b", [item("v1", document_id="d", update_mode=mode)])
        assert (result.ids, result.last_seq) == ([first.id], 1)


def test_replace_removes_the_old_revision_then_adds_the_new(store: Store) -> None:
    other, old = item("other"), item("v1", document_id="d")
    store.write("b", [other, old])
    new = item("v2", document_id="d")
    result = store.write("b", [new])
    assert result.ids == [new.id]
    assert result.removed == [2]  # seq 3 removed ordinal 2
    assert list(result.added) == [Addition(4, "v2", None, None)]
    assert (result.first_seq, result.last_seq) == (2, 4)
    archived = store.get(old.id)  # superseded: in the archive, not live
    assert archived is not None
    assert (archived.status, archived.superseded_by) == ("superseded", new.id)
    assert live(store) == [(1, "other"), (4, "v2")]
    changes = store.changes_since(result.bank_id, 2)
    assert changes is not None
    assert (changes.removed, changes.added.ordinals, changes.last_seq) == ([2], [4], 4)


def test_a_replace_within_one_batch_shows_only_the_net_change(store: Store) -> None:
    v1, v2 = item("v1", document_id="d"), item("v2", document_id="d")
    result = store.write("b", [v1, v2])
    assert result.ids == [v1.id, v2.id]
    # v1 took ordinal 1, its removal seq 2, v2 ordinal 3: only v2 is left to index
    assert (result.added.ordinals, result.removed, result.last_seq) == ([3], [], 3)
    assert [(r.id, r.status) for r in store.history(v2.id)] == [
        (v1.id, "superseded"),
        (v2.id, "live"),
    ]
    assert live(store) == [(3, "v2")]


def test_append_to_a_document_with_a_memory_conflicts_and_writes_nothing(store: Store) -> None:
    store.write("b", [item("v1", document_id="d")])
    before = store.head("b")
    fresh = item("fresh")
    with pytest.raises(ConflictError) as caught:
        store.write("b", [fresh, item("v2", document_id="d", update_mode="append")])
    assert str(caught.value) == document_conflict("b", "d")
    assert store.head("b") == before
    assert store.get(fresh.id) is None
    assert live(store) == [(1, "v1")]


def test_append_to_a_new_document_adds_it(store: Store) -> None:
    first = item("v1", document_id="d", update_mode="append")
    assert store.write("b", [first]).ids == [first.id]
    assert live(store) == [(1, "v1")]


def test_an_import_skips_ids_already_in_the_store(store: Store) -> None:
    here, there = item("here"), item("there")
    store.write("b", [here])
    store.write("c", [there])
    fresh = item("fresh")
    result = store.write(
        "b",
        [
            item("other content", id=here.id),  # the id decides, not the content
            item("there", id=there.id),  # present in another bank
            fresh,
            item("fresh", id=fresh.id),  # present since the item before
        ],
        imported=True,
    )
    assert result.ids == [here.id, there.id, fresh.id, fresh.id]
    assert (result.added.ordinals, result.last_seq) == ([2], 2)
    assert live(store) == [(1, "here"), (2, "fresh")]


def test_a_new_memory_with_an_id_already_stored_is_refused_whole(store: Store) -> None:
    taken = item("taken")
    store.write("b", [taken])
    fresh = item("fresh")
    for clash in (item("new content", id=taken.id), item("doc", id=taken.id, document_id="d")):
        with pytest.raises(StorageError):
            store.write("b", [fresh, clash])
        assert store.get(fresh.id) is None and live(store) == [(1, "taken")]
    # dedupe is decided first: the same content under a taken id is the existing memory
    assert store.write("b", [item("taken", id=taken.id)]).ids == [taken.id]


def test_config_tags_are_added_after_the_items_own(store: Store) -> None:
    store.update_config("b", lambda c: {"extra": ["x", "y"]})
    seen: list[dict[str, Any]] = []

    def tags(config: Any) -> list[str]:
        seen.append(dict(config))
        return list(config["extra"])

    first = item("a", tags=["a", "x"])
    store.write("b", [first, item("b")], config_tags=tags)
    assert seen and all(s == {"extra": ["x", "y"]} for s in seen)
    assert [r.tags for r in store.iter_rows("b")] == [("a", "x", "y"), ("x", "y")]


def test_ordinals_are_never_reused(store: Store) -> None:
    a, b = item("a"), item("b")
    store.write("b", [a, b])
    forgotten = store.forget(b.id, "b")
    assert forgotten is not None and (forgotten.removed, forgotten.last_seq) == ([2], 3)
    assert store.write("b", [item("b")]).added.ordinals == [4]  # not 2, not 3
    old = store.head("b")
    assert old is not None
    assert store.delete_bank("b")
    again = store.write("b", [item("a")])
    assert again.bank_id != old.bank_id  # a new bank: its own sequence, from 1
    assert (again.added.ordinals, again.last_seq) == ([1], 1)


def test_exhausting_the_ordinals_is_a_storage_error(
    store: Store, store_factory: StoreFactory
) -> None:
    kept = item("kept")
    store.write("b", [kept, item("v1", document_id="d")])
    store_factory.set_last_seq(store, "b", MAX_ORDINAL - 2)
    with pytest.raises(StorageError) as caught:
        store.write("b", [item("one"), item("two"), item("three")])
    assert str(caught.value) == EXHAUSTED
    head = store.head("b")
    assert head is not None and head.last_seq == MAX_ORDINAL - 2  # nothing of the batch
    # a replace: the removal takes MAX_ORDINAL - 1, the new revision the last ordinal
    result = store.write("b", [item("v2", document_id="d")])
    assert (result.removed, result.added.ordinals) == ([2], [MAX_ORDINAL])
    with pytest.raises(StorageError, match="exhausted"):
        store.write("b", [item("three")])
    with pytest.raises(StorageError, match="exhausted"):
        store.write("b", [item("v3", document_id="d")])
    assert store.write("b", [item("kept")]).ids == [kept.id]  # dedupe takes no seq
    # removals are not bounded: a full bank can still be emptied
    forgotten = store.forget(kept.id, None)
    assert forgotten is not None and forgotten.last_seq == MAX_ORDINAL + 1
    assert live(store) == [(MAX_ORDINAL, "v2")]


def test_the_first_vector_records_the_bank_space(store: Store) -> None:
    store.write("b", [item("no vector")], space=SPACE)  # no vector: no space recorded
    head = store.head("b")
    assert head is not None and head.space is None
    result = store.write("b", [item("v", vector=vec(1, 0, 0, 0))], space=SPACE)
    assert result.dim == 4
    head = store.head("b")
    assert head is not None and (head.embedder, head.dim, head.space) == ("tiny", 4, SPACE)
    assert store.write("b", [item("w", vector=vec(0, 1, 0, 0))], space=SPACE).dim == 4


def test_vectors_of_another_space_are_refused_whole(store: Store) -> None:
    store.write("b", [item("v", vector=vec(1, 0, 0, 0))], space=SPACE)
    plain = item("plain")
    with pytest.raises(InvalidInputError) as caught:
        store.write("b", [plain, item("w", vector=vec(0, 1, 0, 0))], space=OTHER_SPACE)
    assert str(caught.value) == space_mismatch("b", SPACE, OTHER_SPACE)
    assert store.get(plain.id) is None
    # no vector, no check: a write without vectors in another space is fine
    assert store.write("b", [plain], space=OTHER_SPACE).dim == 4


def test_vectors_without_a_space_are_refused_before_anything(store: Store) -> None:
    with pytest.raises(InvalidInputError) as caught:
        store.write("b", [item("v", vector=vec(1, 0, 0, 0))])
    assert str(caught.value) == NO_SPACE
    assert store.head("b") is None


@pytest.mark.parametrize("failure", ["conflict", "id", "exhausted"])
def test_a_failing_item_leaves_nothing_of_its_batch(
    store: Store, store_factory: StoreFactory, failure: str
) -> None:
    store.write("b", [item("doc", document_id="d"), item("kept")])
    if failure == "exhausted":
        store_factory.set_last_seq(store, "b", MAX_ORDINAL - 3)
    before = store.head("b")
    assert before is not None
    rows = list(store.iter_rows("b"))
    bad = {
        "conflict": item("doc2", document_id="d", update_mode="append"),
        "id": item("clash", id=rows[1].id),
        "exhausted": item("one too many"),
    }[failure]
    batch = [
        item("new", vector=vec(1, 1, 1, 1)),  # would record the bank's space
        item("doc3", document_id="d"),  # would replace the document (a removal)
        bad,
    ]
    with pytest.raises((ConflictError, StorageError)):
        store.write("b", batch, space=SPACE)
    assert store.head("b") == before  # no seq taken, no space recorded
    assert list(store.iter_rows("b")) == rows
    assert all(store.get(i.id) is None for i in batch[:2])
    changes = store.changes_since(before.bank_id, before.last_seq)
    assert changes is not None and (changes.removed, len(changes.added)) == ([], 0)


def test_a_failing_write_to_a_new_bank_does_not_create_it(store: Store) -> None:
    with pytest.raises(ConflictError):
        store.write(
            "new",
            [item("a", document_id="d"), item("b", document_id="d", update_mode="append")],
        )
    assert store.head("new") is None and store.bank_names() == []


def test_additions_columns() -> None:
    rows = [Addition(1, "a", None, None), Addition(3, "c", "x", b"\x01\x00")]
    added = Additions.of(rows)
    assert added == Additions([1, 3], ["a", "c"], [None, "x"], [None, b"\x01\x00"])
    assert list(added) == rows and len(added) == 2 and not Additions.of([])
    assert Additions.from_rows([(1, "a", None, None)]) == Additions.of(rows[:1])
    with pytest.raises(ValueError, match="length"):
        Additions([1], [], [], [])
