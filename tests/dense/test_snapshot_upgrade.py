"""A snapshot written before the HNSW graph became i8 (snapshot version 1, contract 1, an f32
graph; version 2, contract 5, an f16 graph) is not an error: the store rebuilds the index from
its rows, answers recalls as before, builds an i8 graph in the background and replaces the old
snapshot, even when no memory changed since it was written."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import msgpack
import numpy as np
import pytest
from dense_support import TinyEmbedder
from memwire import Memory
from memwire._kernel.pure._generated import DENSE_SCALE, HNSW_SCALAR, SNAPSHOT_VERSION
from memwire.memory import SHELL_FORMAT
from memwire.memory.snapshot_check import seal, unseal
from pyroaring import BitMap
from test_dense_graph_background import THRESHOLD, lowered, notes, stored_graph, wait_for
from usearch.index import Index


def stored_doc(m: Memory, bank: str = "default") -> dict[str, object]:
    snap = m._store.load_snapshot(m._bank(bank).bank_id, SHELL_FORMAT)
    assert snap is not None
    doc: dict[str, object] = msgpack.unpackb(unseal(snap.seq, snap.data))
    return doc


# The snapshot versions before this one: (version, contract, the graph's scalar).
OLD_FORMATS = [(1, 1, "f32"), (2, 5, "f16")]


def old_graph(doc: dict[str, object], scalar: str) -> bytes:
    """The graph an older writer stored: ``scalar`` copies of the same vectors, same keys."""
    dim = doc["dim"]
    assert isinstance(dim, int) and isinstance(doc["vectors"], bytes)
    assert isinstance(doc["vec_docs"], bytes)
    keys = np.array(list(BitMap.deserialize(doc["vec_docs"])), dtype=np.uint64)
    mat = np.frombuffer(doc["vectors"], dtype="<i2").reshape(len(keys), dim)
    graph = Index(ndim=dim, metric="ip", dtype=scalar, connectivity=16)
    graph.add(keys, mat.astype(np.float32) / np.float32(DENSE_SCALE), threads=1)
    return bytes(graph.save())


def make_old(path: Path, with_graph: bool, old: tuple[int, int, str]) -> None:
    """Rewrite the stored snapshot as an older version wrote it (same changes covered)."""
    version, contract, scalar = old
    with sqlite3.connect(path) as conn:
        (seq, data) = conn.execute("SELECT seq, data FROM snapshots").fetchone()
        doc = msgpack.unpackb(unseal(seq, data))
        graph = old_graph(doc, scalar) if with_graph else None
        doc.update(version=version, contract=contract, hnsw=graph)
        conn.execute("UPDATE snapshots SET data = ?", (seal(seq, msgpack.packb(doc)),))
    conn.close()


def scalar_of(graph: bytes) -> str:
    return str(Index.metadata(graph)["kind_scalar"].name).lower()


@pytest.mark.parametrize("former", OLD_FORMATS, ids=lambda f: f"v{f[0]}-{f[2]}")
@pytest.mark.parametrize("with_graph", [True, False])
def test_an_old_snapshot_is_rebuilt_and_replaced(
    db_path: Path,
    any_backend: str,
    with_graph: bool,
    former: tuple[int, int, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = TinyEmbedder()
    queries = ["topic3 item17", "note 41", "item5 topic2"]
    with Memory(db_path, backend=any_backend, embedder=embedder) as m:
        m.retain_many(notes(THRESHOLD + 10))
        if with_graph:
            lowered(m)
            m.recall("note")  # hands the bank to the background thread
            wait_for(lambda: stored_graph(m) is not None, "the graph in a stored snapshot")
            graph = stored_graph(m)
            assert graph is not None and scalar_of(graph) == HNSW_SCALAR
        else:
            m.recall("note")
        before = [[(h.id, h.score) for h in m.recall(q)] for q in queries]
    make_old(db_path, with_graph, former)
    with sqlite3.connect(db_path) as conn:
        old = msgpack.unpackb(unseal(*conn.execute("SELECT seq, data FROM snapshots").fetchone()))
    conn.close()
    assert old["version"] == former[0]
    if with_graph:
        assert scalar_of(old["hnsw"]) == former[2]

    with caplog.at_level(logging.INFO, logger="memwire"):
        m = Memory(db_path, backend=any_backend, embedder=embedder)
        after = [[(h.id, h.score) for h in m.recall(q)] for q in queries]
    assert after == before
    assert f"not usable (unsupported snapshot version {former[0]}); rebuilding" in caplog.text
    if with_graph:
        lowered(m)
        m.recall("note")
        # The i8 graph is built from the rows and replaces the old snapshot of the same changes.
        wait_for(lambda: stored_doc(m)["version"] == SNAPSHOT_VERSION, "a new snapshot")
        wait_for(lambda: stored_graph(m) is not None, "the new graph in a stored snapshot")
        graph = stored_graph(m)
        assert graph is not None and scalar_of(graph) == HNSW_SCALAR == "i8"
        assert [[(h.id, h.score) for h in m.recall(q)] for q in queries] == before
    m.close()

    # No memory changed, yet the old snapshot was replaced: the next open loads it.
    caplog.clear()
    with (
        caplog.at_level(logging.INFO, logger="memwire"),
        Memory(db_path, backend=any_backend, embedder=embedder) as m,
    ):
        assert [[(h.id, h.score) for h in m.recall(q)] for q in queries] == before
        doc = stored_doc(m)
        index = m._bank("default").index
        assert index is not None
        loaded_graph = msgpack.unpackb(index.to_bytes())["hnsw"]
    assert "not usable" not in caplog.text
    assert doc["version"] == SNAPSHOT_VERSION
    if with_graph:
        assert isinstance(doc["hnsw"], bytes) and scalar_of(doc["hnsw"]) == HNSW_SCALAR
        assert loaded_graph == doc["hnsw"], "the graph came from the snapshot"
    else:
        assert doc["hnsw"] is None
