"""Issue 17 through the Memory API, on every store and both kernels: update, supersedes,
history, recall as of an instant, the trash, restore, purge."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from memwire import Memory
from memwire.errors import ConflictError, InvalidInputError, NotFoundError
from store_support import StoreFactory
from test_memory_on_stores import WordEmbedder


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(
        store=store_factory.make(tmp_path), backend=backend, embedder=WordEmbedder()
    ) as memory:
        yield memory


def ids(hits: object) -> list[str]:
    return [h.id for h in hits]  # type: ignore[attr-defined]


def tick() -> datetime:
    """An instant strictly between the writes before and after it (stored times are in µs)."""
    time.sleep(0.002)
    moment = datetime.now(timezone.utc)
    time.sleep(0.002)
    return moment


def test_update_content_supersedes_and_keeps_history(mem: Memory) -> None:
    old = mem.retain("the API listens on port 8080", tags=["net"], context="ops channel")
    new = mem.update(old, content="the API listens on port 9090")
    assert new != old
    record, previous = mem.get(new), mem.get(old)
    assert (record.content, record.tags, record.context) == (
        "the API listens on port 9090",
        ("net",),
        "ops channel",
    )
    assert (previous.status, previous.superseded_by) == ("superseded", new)
    assert previous.archived_at is not None and record.status == "live"
    assert [(r.id, r.status) for r in mem.history(old)] == [(old, "superseded"), (new, "live")]
    assert ids(mem.recall("API port")) == [new]
    assert [r.id for r in mem.memories()] == [new]
    with pytest.raises(ConflictError, match="superseded"):
        mem.update(old, content="again")
    third = mem.update(new, context="")  # a context change supersedes too; "" clears it
    assert mem.get(third).context is None
    assert [r.id for r in mem.history(new)] == [old, new, third]


def test_update_tags_only_is_in_place_and_filters_follow(mem: Memory) -> None:
    memory = mem.retain("the staging database is on host db2", tags=["infra"])
    assert ids(mem.recall("staging database", tags=["infra"])) == [memory]  # filter cached
    assert mem.update(memory, tags=["db"]) == memory
    assert mem.get(memory).tags == ("db",)
    assert ids(mem.recall("staging database", tags=["infra"])) == []
    assert ids(mem.recall("staging database", tags=["db"])) == [memory]
    assert mem.history(memory)[0].status == "live" and len(mem.history(memory)) == 1
    same = mem.update(memory, content="the staging database is on host db2", tags=["db"])
    assert same == memory  # nothing changed: nothing written


def test_update_refuses_bad_calls_and_writes_nothing(mem: Memory) -> None:
    memory = mem.retain("a note")
    with pytest.raises(InvalidInputError):
        mem.update(memory)
    with pytest.raises(NotFoundError):
        mem.update("mem_missing", content="x")
    with pytest.raises(NotFoundError):
        mem.update(memory, bank="other", content="x")
    with pytest.raises(InvalidInputError):
        mem.update(memory, content="   ")
    assert [r.id for r in mem.memories()] == [memory] and len(mem.history(memory)) == 1


def test_retain_supersedes_in_one_write(mem: Memory) -> None:
    a = mem.retain("the deploy window is Tuesday")
    b = mem.retain("deploys happen on Tuesday mornings")
    c = mem.retain("the deploy window is Thursday", supersedes=[a, b])
    assert [r.id for r in mem.memories()] == [c]
    assert {r.id for r in mem.history(c)} == {a, b, c}
    with pytest.raises(ConflictError):
        mem.retain("the deploy window is Friday", supersedes=[a])
    with pytest.raises(NotFoundError):
        mem.retain("the deploy window is Friday", supersedes=["mem_nope"])
    with pytest.raises(InvalidInputError):
        mem.retain("the deploy window is Friday", supersedes="mem_nope")
    assert [r.id for r in mem.memories()] == [c]
    [d] = mem.retain_many([{"content": "the deploy window is Monday", "supersedes": [c]}])
    assert mem.get(c).superseded_by == d


def test_recall_as_of_sees_what_was_live_then(mem: Memory) -> None:
    v1 = mem.retain("the API port is 8080")
    mem.retain("lunch is at noon")
    before = tick()
    v2 = mem.update(v1, content="the API port is 9090")
    after_update = tick()
    mem.forget(v2)
    assert ids(mem.recall("API port")) == []
    assert ids(mem.recall("API port", as_of=before)) == [v1]
    assert ids(mem.recall("API port", as_of=after_update.isoformat())) == [v2]
    naive = after_update.astimezone(timezone.utc).replace(tzinfo=None)
    assert ids(mem.recall("API port", as_of=naive)) == [v2]  # naive is UTC
    future = datetime.now(timezone.utc) + timedelta(days=1)
    assert ids(mem.recall("API port", as_of=future)) == []  # the future is now
    assert ids(mem.recall("API port", as_of="2001-01-01")) == []
    with pytest.raises(InvalidInputError, match="as_of"):
        mem.recall("API port", as_of="yesterday")


def test_recall_as_of_ranks_as_a_bank_of_those_memories_would(
    mem: Memory, store_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    texts = [f"note {i} about the release train and deploys" for i in range(12)]
    first = mem.retain_many(texts[:6])
    moment = tick()
    mem.retain_many(texts[6:])
    for memory in first[:3]:
        mem.forget(memory)
    past = mem.recall("release deploys", as_of=moment, limit=10)
    with Memory(
        store=store_factory.make(tmp_path / "twin"), backend=backend, embedder=WordEmbedder()
    ) as twin:
        twin.retain_many(texts[:6])
        now = twin.recall("release deploys", limit=10)
    assert [(h.content, h.score, h.bm25_rank, h.dense_rank) for h in past] == [
        (h.content, h.score, h.bm25_rank, h.dense_rank) for h in now
    ]


def test_recall_as_of_applies_the_tag_filters(mem: Memory) -> None:
    a = mem.retain("alpha release notes", tags=["keep"])
    mem.retain("alpha release plans", tags=["drop"])
    moment = tick()
    assert ids(mem.recall("alpha release", as_of=moment, tags=["keep"])) == [a]
    assert a not in ids(mem.recall("alpha release", as_of=moment, exclude_tags=["keep"]))


def test_forget_trash_restore_and_empty(mem: Memory) -> None:
    memory = mem.retain("the wifi password rotates monthly", tags=["wifi"])
    assert mem.forget(memory) is True
    assert ids(mem.recall("wifi password")) == []
    assert [(r.id, r.status) for r in mem.trash()] == [(memory, "trashed")]
    assert mem.forget(memory) is False
    assert mem.restore(memory) == memory
    assert ids(mem.recall("wifi password")) == [memory]
    assert ids(mem.recall("wifi password", tags=["wifi"])) == [memory]
    assert mem.trash() == []
    with pytest.raises(NotFoundError):
        mem.restore(memory)
    mem.forget(memory)
    assert mem.empty_trash(older_than_days=1) == 0
    assert mem.empty_trash() == 1
    with pytest.raises(NotFoundError):
        mem.get(memory)
    with pytest.raises(InvalidInputError):
        mem.empty_trash(older_than_days=-1)


def test_trash_days_zero_deletes_and_is_validated(mem: Memory) -> None:
    assert mem.get_config("default") if mem.banks() else True
    mem.set_config("default", {"trash_days": 0})
    memory = mem.retain("gone at once")
    assert mem.forget(memory) is True
    with pytest.raises(NotFoundError):
        mem.get(memory)
    for bad in (-1, 1.5, "30", True):
        with pytest.raises(InvalidInputError, match="trash_days"):
            mem.set_config("default", {"trash_days": bad})
    assert mem.get_config("default")["trash_days"] == 0


def test_restore_conflicts_with_a_live_replacement(mem: Memory) -> None:
    v1 = mem.retain("checklist one", document_id="doc")
    mem.forget(v1)
    v2 = mem.retain("checklist two", document_id="doc")
    with pytest.raises(ConflictError):
        mem.restore(v1)
    assert [r.id for r in mem.memories()] == [v2]


def test_the_sweep_empties_expired_trash(mem: Memory) -> None:
    mem.set_config("default", {"trash_days": 0})
    kept = mem.retain("kept")
    mem.set_config("default", {"trash_days": 30})
    gone = mem.retain("trashed long ago")
    mem.forget(gone)
    assert mem.sweep() == [] and mem.get(gone).status == "trashed"  # 30 days not over
    mem.set_config("default", {"trash_days": 0})
    assert mem.sweep() == []
    with pytest.raises(NotFoundError):
        mem.get(gone)
    assert mem.get(kept).status == "live"


def test_purge_removes_every_trace(mem: Memory) -> None:
    secret = mem.retain("the vault word is plumbergast")
    mem.recall("vault word")  # load the index
    new = mem.update(secret, content="the vault word was rotated")
    assert mem.purge(secret) is True
    with pytest.raises(NotFoundError):
        mem.get(secret)
    with pytest.raises(NotFoundError):
        mem.history(secret)
    assert [r.id for r in mem.history(new)] == [new]
    assert ids(mem.recall("plumbergast")) == []
    assert ids(mem.recall("vault word")) == [new]
    assert mem.purge(secret) is False
    assert mem.purge(new, bank="other") is False
    assert mem.purge(new) is True and mem.memories() == []
    mem.vacuum()


def test_a_bank_with_trash_is_swept_alone_when_first_loaded(
    store_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    """A load sweeps expired trash in the background and writes no snapshot for it."""
    if store_factory.reopen is None:
        pytest.skip("needs a store that outlives its Memory")
    with Memory(store=store_factory.make(tmp_path), backend=backend) as first:
        first.set_config("default", {"trash_days": 0})
        kept = first.retain("kept")
        gone = first.retain("trashed long ago")
        first.set_config("default", {"trash_days": 30})
        first.forget(gone)
        first.set_config("default", {"trash_days": 0})  # now past its time
        first._closed = True  # no snapshot at close: the next Memory loads from the rows
        first._snapshotter.stop()
        first._store.close()
    with Memory(store=store_factory.reopen(tmp_path), backend=backend) as second:
        saved: list[str] = []
        second._snapshotter._snapshot = saved.append  # type: ignore[method-assign]
        assert ids(second.recall("kept")) == [kept]  # the first load of the bank
        second._snapshotter.drain()
        with pytest.raises(NotFoundError):
            second.get(gone)
        assert saved == []


def test_another_process_sees_a_change_of_tags(
    durable_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    """A retag adds and removes nothing in the index: a reader's cached tag filter must still
    notice it (the change's seq tells it)."""
    assert durable_factory.reopen is not None
    with (
        Memory(store=durable_factory.make(tmp_path), backend=backend) as writer,
        Memory(store=durable_factory.reopen(tmp_path), backend=backend) as reader,
    ):
        memory = writer.retain("the backup job runs nightly", tags=["ops"])
        assert ids(reader.recall("backup job", tags=["ops"])) == [memory]  # filter cached
        writer.update(memory, tags=["cron"])
        assert ids(reader.recall("backup job", tags=["ops"])) == []
        assert ids(reader.recall("backup job", tags=["cron"])) == [memory]
        assert ids(reader.recall("backup job", exclude_tags=["cron"])) == []


def test_a_memory_trashed_before_a_reembed_comes_back_with_a_new_vector(
    durable_factory: StoreFactory, tmp_path: Path, backend: str
) -> None:
    """The reembed drops the trash's vectors (they are of the old space); a restore encodes
    the memory again, so the dense stream still finds it by a word it does not contain."""
    assert durable_factory.reopen is not None
    new = WordEmbedder("new", 12)
    with Memory(
        store=durable_factory.make(tmp_path), backend=backend, embedder=WordEmbedder()
    ) as m:
        m.retain("quarterly budget review with finance")
        gone = m.retain("the ferry leaves the harbour at noon")
        assert m.forget(gone) is True
    with Memory(store=durable_factory.reopen(tmp_path), backend=backend, embedder=new) as m:
        assert m.reembed("default") == 1
        assert m.restore(gone) == gone
        (vector,) = new.embed(["ferry"])
        assert vector is not None
        # A query of one word of the memory: its vector is that word's component, so the
        # memory is a dense neighbour whatever the lexical streams say.
        hit = next(h for h in m.recall("ferry", limit=5, min_score=0) if h.id == gone)
        assert hit.dense_rank >= 1
