"""History and trash on every store (the protocol's "History"): supersession, trash, restore,
empty_trash, purge, retag and the versions live at an instant."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import postgres_support
import pytest
from memwire.errors import ConflictError, InvalidInputError, NotFoundError
from memwire.store import ArchivedMemory, NewMemory, Space, Store
from memwire.store.postgres import SCHEMA_VERSION as POSTGRES_SCHEMA
from store_support import SPACE, StoreFactory, day, item, vec


def at(memory: NewMemory, n: int, *supersedes: str) -> NewMemory:
    """``memory`` retained on day ``n`` of May 2024, superseding ``supersedes``."""
    return dataclasses.replace(memory, retained_at=day(n), supersedes=supersedes)


def live(store: Store, bank: str = "b") -> list[str]:
    return [r.content for r in store.iter_rows(bank)]


def states(store: Store, memory_id: str) -> list[tuple[str, str, str | None]]:
    return [(r.content, r.status, r.superseded_by) for r in store.history(memory_id)]


def test_supersedes_archives_the_old_versions_then_adds_the_new(store: Store) -> None:
    a, b = at(item("port 8080"), 1), at(item("other"), 1)
    store.write("b", [a, b])
    new = at(item("port 9090"), 2, a.id)
    result = store.write("b", [new])
    assert result.ids == [new.id]
    assert (result.removed, result.added.ordinals) == ([1], [4])  # removal seq 3, addition 4
    assert (result.first_seq, result.last_seq) == (2, 4)
    old = store.get(a.id)
    assert old is not None
    assert (old.status, old.superseded_by, old.archived_at) == ("superseded", new.id, day(2))
    assert old.ordinal == 1 and old.content == "port 8080"
    assert live(store) == ["other", "port 9090"]
    assert (
        states(store, a.id)
        == states(store, new.id)
        == [
            ("port 8080", "superseded", new.id),
            ("port 9090", "live", None),
        ]
    )
    assert states(store, b.id) == [("other", "live", None)]
    changes = store.changes_since(result.bank_id, 2)
    assert changes is not None and (changes.removed, changes.added.ordinals) == ([1], [4])
    stats = store.stats("b")
    assert stats is not None and stats.count == 2


def test_a_chain_of_supersessions_is_one_history(store: Store) -> None:
    v1 = at(item("v1"), 1)
    store.write("b", [v1])
    v2 = at(item("v2"), 2, v1.id)
    store.write("b", [v2])
    v3 = at(item("v3"), 3, v2.id)
    store.write("b", [v3])
    expected = [("v1", "superseded", v2.id), ("v2", "superseded", v3.id), ("v3", "live", None)]
    assert states(store, v1.id) == states(store, v2.id) == states(store, v3.id) == expected
    assert store.history("mem_nothing") == []


def test_supersedes_refuses_what_is_not_a_live_memory_of_the_bank(store: Store) -> None:
    v1 = item("v1")
    store.write("b", [v1])
    v2 = item("v2", tags=["x"])
    store.write("b", [dataclasses.replace(v2, supersedes=(v1.id,))])
    elsewhere = item("elsewhere")
    store.write("c", [elsewhere])
    before = {name: store.head(name) for name in ("b", "c")}
    for ids, error in (
        (("mem_unknown",), NotFoundError),
        ((elsewhere.id,), NotFoundError),  # another bank's
        ((v1.id,), ConflictError),  # superseded already
        ((v2.id, v1.id), ConflictError),  # all or nothing
    ):
        with pytest.raises(error):
            store.write("b", [item("fresh"), dataclasses.replace(item("v3"), supersedes=ids)])
        assert {name: store.head(name) for name in ("b", "c")} == before
        assert live(store) == ["v2"]
    with pytest.raises(ConflictError, match="superseded"):
        store.write("b", [dataclasses.replace(item("v3"), supersedes=(v1.id,))])


def test_a_duplicate_superseding_resolves_to_the_live_copy(store: Store) -> None:
    old, same = item("old fact"), item("new fact")
    store.write("b", [old, same])
    again = dataclasses.replace(item("new fact"), supersedes=(old.id,))
    result = store.write("b", [again])
    assert result.ids == [same.id]  # deduplicated into the live copy, which supersedes old
    assert live(store) == ["new fact"]
    assert states(store, same.id) == [
        ("old fact", "superseded", same.id),
        ("new fact", "live", None),
    ]


def test_dedupe_ignores_the_memories_being_superseded(store: Store) -> None:
    old, doc = item("same words", context="before"), item("doc words", document_id="d")
    store.write("b", [old, doc])
    edits = [
        dataclasses.replace(item("same words", context="after"), supersedes=(old.id,)),
        dataclasses.replace(item("doc words", document_id="d"), supersedes=(doc.id,)),
    ]
    result = store.write("b", edits)
    assert result.ids == [e.id for e in edits]  # new versions, not the old ones again
    assert [(r.content, r.context) for r in store.iter_rows("b")] == [
        ("same words", "after"),
        ("doc words", None),
    ]
    assert [r.status for r in store.history(old.id)] == ["superseded", "live"]


def test_document_replace_supersedes_and_append_still_conflicts(store: Store) -> None:
    v1 = at(item("v1", document_id="d"), 1)
    store.write("b", [v1])
    v2 = at(item("v2", document_id="d"), 2)
    store.write("b", [v2])
    assert states(store, v2.id) == [("v1", "superseded", v2.id), ("v2", "live", None)]
    with pytest.raises(ConflictError):
        store.write("b", [item("v3", document_id="d", update_mode="append")])
    # An explicit supersedes of the document's memory is the same single supersession.
    v3 = at(item("v3", document_id="d"), 3, v2.id)
    result = store.write("b", [v3])
    assert len(result.removed) == 1 and live(store) == ["v3"]


def test_forget_to_the_trash_and_restore_with_a_new_ordinal(store: Store) -> None:
    kept, gone = item("kept"), item("gone", tags=["t"], vector=vec(1, 2, 3, 4))
    first = store.write("b", [kept, gone], space=SPACE)
    result = store.forget(gone.id, "b", trash=True)
    assert result is not None and result.removed == [2]
    assert store.forget(gone.id, "b", trash=True) is None  # not live any more
    trashed = store.get(gone.id)
    assert trashed is not None and (trashed.status, trashed.superseded_by) == ("trashed", None)
    assert trashed.archived_at is not None
    assert [r.id for r in store.trash_rows("b", 10, 0)] == [gone.id]
    assert live(store) == ["kept"]
    assert store.allowed(first.bank_id, ["t"], []).ordinals == []
    with pytest.raises(NotFoundError):
        store.restore(gone.id, "other bank")
    with pytest.raises(NotFoundError):
        store.restore(kept.id, None)  # live, not in the trash
    back = store.restore(gone.id, None)
    assert back.ids == [gone.id] and back.added.ordinals == [4]  # ordinals are never reused
    assert next(iter(back.added)).vector == vec(1, 2, 3, 4)  # no re-encoding needed
    row = store.get(gone.id)
    assert row is not None and (row.status, row.ordinal, row.tags) == ("live", 4, ("t",))
    assert store.allowed(first.bank_id, ["t"], []).ordinals == [4]
    assert store.trash_rows("b", 10, 0) == []
    with pytest.raises(NotFoundError):
        store.restore(gone.id, None)


def test_restore_refuses_when_something_live_took_the_place(store: Store) -> None:
    doc, loose = item("v1", document_id="d"), item("loose")
    store.write("b", [doc, loose])
    store.forget(doc.id, "b", trash=True)
    store.forget(loose.id, "b", trash=True)
    store.write("b", [item("v2", document_id="d"), item("loose")])
    before = store.head("b")
    for memory_id in (doc.id, loose.id):
        with pytest.raises(ConflictError, match="live in its place"):
            store.restore(memory_id, "b")
    assert store.head("b") == before


def test_forget_without_trash_deletes(store: Store) -> None:
    gone = item("gone")
    store.write("b", [gone])
    assert store.forget(gone.id, "b") is not None
    assert store.get(gone.id) is None and store.trash_rows("b", 10, 0) == []


def test_empty_trash_by_age_and_all(store: Store) -> None:
    a, b = item("a"), item("b")
    store.write("b", [a, b])
    store.forget(a.id, "b", trash=True)
    store.forget(b.id, "b", trash=True)
    assert store.empty_trash("b", "2000-01-01T00:00:00.000000Z") == []
    assert sorted(store.empty_trash("b", None)) == sorted([a.id, b.id])
    assert store.get(a.id) is None and store.trash_rows("b", 10, 0) == []
    assert store.empty_trash("no bank", None) == []


def test_trash_rows_pages_newest_first(store: Store) -> None:
    memories = [item(f"m{i}") for i in range(3)]
    store.write("b", memories)
    for memory in memories:
        store.forget(memory.id, "b", trash=True)
    rows = store.trash_rows("b", 10, 0)
    assert len(rows) == 3
    assert [(r.archived_at, r.id) for r in rows] == sorted(
        [(r.archived_at, r.id) for r in rows], reverse=True
    )
    assert store.trash_rows("b", 2, 1) == rows[1:3]


def test_purge_deletes_in_any_state_relinks_and_forces_a_rebuild(store: Store) -> None:
    v1 = at(item("v1 secret"), 1)
    store.write("b", [v1])
    v2 = at(item("v2"), 2, v1.id)
    store.write("b", [v2])
    v3 = at(item("v3"), 3, v2.id)
    store.write("b", [v3])
    head = store.head("b")
    assert head is not None
    assert store.save_snapshot(head.bank_id, head.last_seq, b"index", "shell")
    result = store.purge(v2.id, "b")  # the middle of the chain
    assert result is not None and result.removed == []
    assert store.get(v2.id) is None
    assert states(store, v3.id) == [("v1 secret", "superseded", v3.id), ("v3", "live", None)]
    assert store.load_snapshot(head.bank_id, "shell") is None
    after = store.head("b")
    assert after is not None and after.last_seq == head.last_seq + 1
    changes = store.changes_since(head.bank_id, head.last_seq)
    assert changes is not None and changes.gap  # every index rebuilds from the rows
    live_result = store.purge(v3.id, None)  # a live memory: its removal too
    assert live_result is not None and live_result.removed == [5]
    assert live(store) == [] and states(store, v1.id) == [("v1 secret", "superseded", None)]
    assert store.purge(v1.id, "other bank") is None and store.get(v1.id) is not None
    assert store.purge(v1.id, "b") is not None and store.history(v1.id) == []
    assert store.purge(v1.id, None) is None


def test_retag_changes_tags_in_place_as_a_change(store: Store) -> None:
    memory = item("tagged", tags=["old"])
    first = store.write("b", [memory])
    result = store.retag(memory.id, "b", ["new", "more"])
    assert result is not None
    assert (result.first_seq, result.last_seq, result.removed) == (1, 2, [])
    assert len(result.added) == 0
    row = store.get(memory.id)
    assert row is not None and (row.tags, row.ordinal) == (("new", "more"), 1)
    assert store.allowed(first.bank_id, ["new"], []).ordinals == [1]
    assert store.allowed(first.bank_id, ["old"], []).ordinals == []
    stats = store.stats("b")
    assert stats is not None and stats.tags == {"more": 1, "new": 1}
    assert store.retag(memory.id, "other", ["x"]) is None
    store.forget(memory.id, "b", trash=True)
    assert store.retag(memory.id, "b", ["x"]) is None


def test_versions_at_an_instant(store: Store) -> None:
    v1 = at(item("v1", vector=vec(1, 0, 0, 0)), 1)
    other = at(item("other"), 2)
    store.write("b", [v1, other], space=SPACE)
    v2 = at(item("v2"), 3, v1.id)
    result = store.write("b", [v2])
    bank_id = result.bank_id

    def contents(when: str) -> list[str]:
        return [v.row.content for v in store.versions_at(bank_id, when)]

    assert contents(day(1)) == ["v1"]
    assert contents(day(2)) == ["v1", "other"]
    assert contents(day(3)) == ["other", "v2"]  # archived at v2's retained_at: never both
    assert contents("2024-05-02T23:59:59.999999Z") == ["v1", "other"]
    first = store.versions_at(bank_id, day(1))[0]
    assert first.vector == vec(1, 0, 0, 0) and first.row.status == "superseded"
    assert store.versions_at(bank_id, "2024-04-01T00:00:00.000000Z") == []
    assert store.versions_at(10_000, day(3)) == []


def test_an_import_skips_ids_in_the_archive(store: Store) -> None:
    v1 = item("v1")
    store.write("b", [v1])
    store.write("b", [dataclasses.replace(item("v2"), supersedes=(v1.id,))])
    result = store.write("b", [item("v1", id=v1.id)], imported=True)
    assert result.ids == [v1.id] and len(result.added) == 0 and live(store) == ["v2"]


def test_archive_page_reads_the_archive_by_ordinal_with_vectors(store: Store) -> None:
    v1, doomed = item("v1", vector=vec(1, 2, 3, 4)), item("doomed", tags=["t"])
    first = store.write("b", [v1, doomed], space=SPACE)
    v2 = at(item("v2"), 2, v1.id)
    store.write("b", [v2])
    store.forget(doomed.id, "b", trash=True)
    page = store.archive_page(first.bank_id, 0, 10)
    assert [(v.row.id, v.row.ordinal, v.row.status) for v in page] == [
        (v1.id, 1, "superseded"),
        (doomed.id, 2, "trashed"),
    ]
    assert (page[0].vector, page[0].row.superseded_by, page[0].row.archived_at) == (
        vec(1, 2, 3, 4),
        v2.id,
        day(2),
    )
    assert page[1].vector is None and page[1].row.tags == ("t",)
    assert [v.row.id for v in store.archive_page(first.bank_id, 1, 10)] == [doomed.id]
    assert [v.row.id for v in store.archive_page(first.bank_id, 0, 1)] == [v1.id]
    assert store.archive_page(10_000, 0, 10) == []


def test_import_archived_adds_as_given_and_skips_ids_present(store: Store) -> None:
    v2 = at(item("v2"), 2)
    store.write("b", [v2])  # seq 1
    old_v1 = at(item("v1", tags=["x"], vector=vec(4, 3, 2, 1)), 1)
    v1 = ArchivedMemory(old_v1, "superseded", v2.id, day(2))
    gone = ArchivedMemory(item("gone"), "trashed", None, day(3))
    assert store.import_archived("b", [v1, gone], SPACE) == [v1.memory.id, gone.memory.id]
    head = store.head("b")
    assert head is not None and head.last_seq == 3 and head.space == SPACE
    old = store.get(v1.memory.id)
    assert old is not None
    assert (old.ordinal, old.status, old.superseded_by, old.archived_at, old.tags) == (
        2,
        "superseded",
        v2.id,
        day(2),
        ("x",),
    )
    assert states(store, v2.id) == [("v1", "superseded", v2.id), ("v2", "live", None)]
    assert [r.id for r in store.trash_rows("b", 10, 0)] == [gone.memory.id]
    assert live(store) == ["v2"]  # nothing archived is live, nothing is logged
    changes = store.changes_since(head.bank_id, 1)
    assert changes is not None and (changes.removed, len(changes.added)) == ([], 0)
    again = ArchivedMemory(item("v2", id=v2.id), "trashed", None, day(4))
    assert store.import_archived("b", [v1, gone, again], SPACE) == []  # every id is present already
    assert store.head("b") == head
    back = store.restore(gone.memory.id, "b")
    assert back.added.ordinals == [4]


def test_import_archived_refuses_another_space_and_changes_nothing(store: Store) -> None:
    store.write("b", [item("live", vector=vec(1, 1, 1, 1))], space=SPACE)
    head = store.head("b")
    odd = ArchivedMemory(item("odd", vector=vec(1, 2, 3, 4)), "trashed", None, day(1))
    with pytest.raises(InvalidInputError):
        store.import_archived("b", [odd], Space("other", 4))
    with pytest.raises(InvalidInputError):
        store.import_archived("b", [odd], None)
    assert store.head("b") == head and store.get(odd.memory.id) is None


def test_delete_bank_takes_the_archive_along(store: Store) -> None:
    v1, doomed = item("v1"), item("doomed")
    store.write("b", [v1, doomed])
    store.write("b", [dataclasses.replace(item("v2"), supersedes=(v1.id,))])
    store.forget(doomed.id, "b", trash=True)
    assert store.delete_bank("b")
    assert store.get(v1.id) is None and store.get(doomed.id) is None
    store.write("b", [item("fresh")])
    assert store.trash_rows("b", 10, 0) == []


def _trashed_after_reembed(store: Store, content: str) -> str:
    """A memory with a vector, trashed, then its bank re-encoded into ``SPACE`` again."""
    memory = item(content, vector=vec(1, 2, 3, 4))
    store.write("b", [memory], space=SPACE)
    store.forget(memory.id, "b", trash=True)
    head = store.head("b")
    assert head is not None
    store.start_reembed("b", SPACE)
    assert store.finish_reembed(head.bank_id, SPACE) is not None
    return memory.id


def test_reembed_drops_the_archives_vectors(store: Store) -> None:
    back = store.restore(_trashed_after_reembed(store, "v1"), "b")
    assert next(iter(back.added)).vector is None


def test_restore_fills_a_dropped_vector_in_the_banks_space(store: Store) -> None:
    memory_id = _trashed_after_reembed(store, "v1")
    back = store.restore(memory_id, "b", vector=vec(4, 3, 2, 1), space=SPACE)
    assert next(iter(back.added)).vector == vec(4, 3, 2, 1)
    head = store.head("b")
    assert head is not None
    changes = store.changes_since(head.bank_id, 0)  # what a fresh index loads
    assert changes is not None and [a.vector for a in changes.added] == [vec(4, 3, 2, 1)]


def test_restore_ignores_a_vector_of_another_space(store: Store) -> None:
    memory_id = _trashed_after_reembed(store, "v1")
    back = store.restore(memory_id, "b", vector=vec(4, 3, 2, 1), space=Space("other", 4))
    assert next(iter(back.added)).vector is None
    head = store.head("b")
    assert head is not None and head.space == SPACE
    changes = store.changes_since(head.bank_id, 0)
    assert changes is not None and [a.vector for a in changes.added] == [None]


def test_restore_keeps_the_archived_vector(store: Store) -> None:
    v1 = item("v1", vector=vec(1, 2, 3, 4))
    store.write("b", [v1], space=SPACE)
    store.forget(v1.id, "b", trash=True)
    back = store.restore(v1.id, "b", vector=vec(4, 3, 2, 1), space=SPACE)
    assert next(iter(back.added)).vector == vec(1, 2, 3, 4)


def test_the_archive_is_durable(durable_factory: StoreFactory, tmp_path: Path) -> None:
    assert durable_factory.reopen is not None
    store = durable_factory.make(tmp_path)
    v1 = item("v1")
    store.write("b", [v1])
    v2 = dataclasses.replace(item("v2"), supersedes=(v1.id,))
    store.write("b", [v2])
    store.vacuum()
    store.close()
    store = durable_factory.reopen(tmp_path)
    try:
        assert states(store, v2.id) == [("v1", "superseded", v2.id), ("v2", "live", None)]
    finally:
        store.close()


def test_a_postgres_store_of_the_previous_schema_opens_with_its_memories(tmp_path: Path) -> None:
    store = postgres_support.make_store(tmp_path)
    schema = store._schema  # type: ignore[attr-defined]
    kept = item("a memory from before history", tags=["old"])
    store.write("b", [kept])
    store.close()
    with postgres_support.connect() as conn:  # as the previous version left it
        conn.execute(f"DROP TABLE {schema}.archive")
        conn.execute(
            f"UPDATE {schema}.memwire_meta SET value = %s WHERE key = 'schema_version'",
            (str(POSTGRES_SCHEMA - 1),),
        )
    store = postgres_support.reopen_store(tmp_path)
    try:
        row = store.get(kept.id)
        assert row is not None and (row.content, row.tags) == (kept.content, ("old",))
        new = dataclasses.replace(item("a memory after history"), supersedes=(kept.id,))
        store.write("b", [new])
        assert states(store, new.id)[0] == (kept.content, "superseded", new.id)
    finally:
        store.close()
    with postgres_support.connect() as conn:
        version = conn.execute(
            f"SELECT value FROM {schema}.memwire_meta WHERE key = 'schema_version'"
        ).fetchone()
    assert version == (str(POSTGRES_SCHEMA),)
