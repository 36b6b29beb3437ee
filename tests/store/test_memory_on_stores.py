"""The Memory API on every store of the suite and both kernels: nothing above the protocol
knows which store it runs on."""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from memwire import Memory
from memwire.errors import ConflictError, InvalidInputError, StorageError
from memwire.records import Hit, Record
from memwire.store import ReferenceStore, Store
from store_support import StoreFactory


class WordEmbedder:
    """Deterministic vectors: each word hashed onto ``dim`` signed components."""

    def __init__(self, name: str = "words", dim: int = 8) -> None:
        self.id, self.dim = name, dim

    def embed(self, texts: Sequence[str]) -> list[list[float] | None]:
        out: list[list[float] | None] = []
        for text in texts:
            vector = [0.0] * self.dim
            for word in text.lower().split():
                h = hashlib.sha256((self.id + word).encode()).digest()
                vector[h[0] % self.dim] += 1.0 if h[1] & 1 else -1.0
            out.append(vector if any(vector) else None)
        return out


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(
        store=store_factory.make(tmp_path), backend=backend, embedder=WordEmbedder()
    ) as memory:
        yield memory


def words(hits: list[Hit]) -> list[str]:
    """The ids of the hits a word of the query matched (the dense stream adds neighbours)."""
    return [h.id for h in hits if h.bm25_rank or h.overlap_rank]


def indexed(memory: Memory, bank: str = "default") -> int:
    """How many memories the bank's index in this process holds."""
    index = memory._bank(bank).index
    assert index is not None
    return len(index)


def test_retain_recall_get_forget(mem: Memory) -> None:
    port = mem.retain("the staging database listens on port 5433", tags=["infra"])
    mem.retain("lunch is at noon on fridays", tags=["life"])
    hits = mem.recall("staging database port")
    assert hits[0].id == port and hits[0].tags == ("infra",)
    assert words(mem.recall("port", tags=["life"])) == []
    assert [h.id for h in mem.recall("port", tags=["infra"])] == [port]
    assert [h.id for h in mem.recall("staging port", exclude_tags=["life"])] == [port]
    assert mem.get(port).content.startswith("the staging database")
    assert [r.id for r in mem.memories()][-1] == port
    assert mem.stats()["count"] == 2 and mem.stats()["tags"] == {"infra": 1, "life": 1}
    assert mem.forget(port) and not mem.forget(port)
    assert port not in [h.id for h in mem.recall("staging database port")]
    assert indexed(mem) == 1


def test_document_upserts(mem: Memory) -> None:
    first = mem.retain("deploys go out on tuesdays", document_id="deploys")
    assert mem.retain("deploys go out on tuesdays", document_id="deploys") == first
    second = mem.retain("deploys go out on thursdays", document_id="deploys")
    assert second != first
    with pytest.raises(ConflictError, match="update_mode='replace'"):
        mem.retain("deploys go out daily", document_id="deploys", update_mode="append")
    assert words(mem.recall("deploys")) == [second]
    # two revisions in one batch: only the last is live, and only it is indexed
    ids = mem.retain_many(
        [
            {"content": "the oncall rota is weekly", "document_id": "rota"},
            {"content": "the oncall rota is daily", "document_id": "rota"},
        ]
    )
    assert words(mem.recall("oncall rota")) == [ids[1]]
    assert indexed(mem) == mem.stats()["count"] == 2


def test_sweep_and_config(mem: Memory) -> None:
    old = mem.retain("an old note about kafka", created_at="2020-01-01T00:00:00Z")
    mem.retain("a new note about kafka")
    mem.set_config("default", {"ttl_days": 30})
    assert mem.sweep(dry_run=True) == [old]
    assert mem.sweep() == [old]
    assert mem.sweep() == []
    older = mem.retain("an older note about kafka", created_at="2019-01-01T00:00:00Z")
    assert len(words(mem.recall("kafka note"))) == 1  # the old one is hidden at once
    assert older not in [h.id for h in mem.recall("kafka note")]
    mem._snapshotter.drain()  # which swept it: the recall met an expired memory
    assert mem.sweep(dry_run=True) == []
    assert mem.get_config("default") == {"ttl_days": 30}
    assert indexed(mem) == 1


def test_export_and_import_round_trip(mem: Memory, backend: str) -> None:
    mem.retain("alpha note", tags=["a"], context="why")
    mem.retain("beta note", document_id="doc")
    mem.set_config("default", {"recall_max_tokens": 500})
    buffer = io.StringIO()
    assert mem.export(buffer) == 2
    with Memory(store=ReferenceStore(), backend=backend, embedder=WordEmbedder()) as other:
        assert other.import_(io.StringIO(buffer.getvalue())) == 2
        assert other.import_(io.StringIO(buffer.getvalue())) == 0  # ids already present
        assert other.memories() == mem.memories()
        assert other.get_config("default") == {"recall_max_tokens": 500}
        assert words(other.recall("alpha")) == words(mem.recall("alpha")) != []


def test_import_into_another_bank_of_the_same_store_says_why_it_skips(mem: Memory) -> None:
    """Ids are unique in a store: each skipped memory comes with the stored one that stands for
    it, on every store (a live one, an archived one; the same content under another id)."""
    kept = mem.retain("kept note")
    old = mem.retain("old note")
    new = mem.update(old, content="new note")
    buffer = io.StringIO()
    assert mem.export(buffer) == 3
    skipped: list[tuple[str, Record]] = []
    assert mem.import_(io.StringIO(buffer.getvalue()), bank="copy", skipped=skipped) == 0
    assert {(i, r.id, r.bank, r.status) for i, r in skipped} == {
        (kept, kept, "default", "live"),
        (old, old, "default", "superseded"),
        (new, new, "default", "live"),
    }
    mem.purge(kept)
    twin = mem.retain("kept note", bank="copy")  # the same content, under another id
    skipped.clear()
    assert mem.import_(io.StringIO(buffer.getvalue()), bank="copy", skipped=skipped) == 0
    assert {(i, r.id, r.bank) for i, r in skipped if i == kept} == {(kept, twin, "copy")}
    assert len(skipped) == 3


def test_reembed_moves_the_bank_to_another_embedder(mem: Memory) -> None:
    ids = mem.retain_many([f"note {n} about the {w}" for n, w in enumerate(["cat", "dog", "eel"])])
    seen: list[tuple[int, int]] = []
    other = WordEmbedder("other", 4)
    encoded = mem.reembed(
        "default", embedder=other, batch=2, progress=lambda d, t: seen.append((d, t))
    )
    assert encoded == 3
    assert seen == [(2, 3), (3, 3)]
    assert mem.reembed_status("default") is None
    with pytest.raises(InvalidInputError, match="'other'"):
        mem.recall("cat")  # the bank now holds the other embedder's vectors
    mem.set_config("default", {"embedder": "none"})
    assert mem.recall("cat")[0].id == ids[0]


def test_memory_refuses_a_path_with_a_store_and_a_non_store() -> None:
    store = ReferenceStore()
    with pytest.raises(InvalidInputError, match="not both"):
        Memory(":memory:", store=store)
    for bad in (object(), "path.db", {}):
        with pytest.raises(InvalidInputError, match=r"memwire\.store\.Store"):
            Memory(store=bad)  # type: ignore[arg-type]
    assert isinstance(store, Store)
    store.close()


def test_memory_closes_its_store(backend: str) -> None:
    store = ReferenceStore()
    memory = Memory(store=store, backend=backend, embedder=WordEmbedder())
    memory.retain("x")
    memory.close()
    with pytest.raises(StorageError, match="closed"):
        store.head("default")
