"""Vectors are durable: they come back from rows and snapshots (never re-embedded on open),
survive an unclean exit and a SIGKILL, and snapshot + replay equals a rebuild from the rows."""

from __future__ import annotations

import sqlite3
import textwrap
from pathlib import Path

import pytest
from api_support import run_and_kill
from dense_support import NOTES, PARAPHRASES, TinyEmbedder, bank_space, recall_rows, stored_vectors
from memwire import Memory
from memwire.embed.static import MODEL_ID
from memwire.store.sqlite import SCHEMA_VERSION

QUERIES = [q for _, q in PARAPHRASES] + ["postgres backups", "staging database port", "𓀀𓀁"]


def _abandon(m: Memory) -> None:
    """Drop a Memory as a killed process would: no snapshot, no clean close."""
    m._closed = True
    m._snapshotter.stop()
    m._store.close()


def _drop_snapshots(path: Path) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM snapshots")


def test_vectors_survive_close_and_reopen(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        m.retain_many([*NOTES, "𓀀𓀁"])
        before = recall_rows(m, QUERIES)
    assert any(row[4] for q in before for row in q)  # the dense stream took part
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, QUERIES) == before
    _drop_snapshots(db_path)
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, QUERIES) == before


def test_opening_never_re_embeds(db_path: Path, any_backend: str) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        m.retain_many(NOTES)
        before = recall_rows(m, QUERIES)
    for drop in (False, True):  # from the snapshot, then from the rows alone
        if drop:
            _drop_snapshots(db_path)
        tiny = TinyEmbedder()
        with Memory(db_path, backend=any_backend, embedder=tiny) as m:
            assert recall_rows(m, QUERIES) == before
        assert tiny.calls == [1] * len(QUERIES)  # the queries, nothing else


def test_snapshot_then_replay_after_an_unclean_exit(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        ids = m.retain_many(NOTES)
        m.recall("postgres")  # close() snapshots the loaded index
    m = Memory(db_path, backend=backend)
    m.retain_many(["the kitten sleeps on the keyboard", "peanut butter is banned at the office"])
    m.forget(ids[15])
    m.retain("auth moved to keycloak", document_id="auth")
    live = recall_rows(m, QUERIES)
    _abandon(m)  # the snapshot on disk predates the last writes
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, QUERIES) == live
    _drop_snapshots(db_path)
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, QUERIES) == live


def test_a_lexical_bank_switched_to_vectors_mixes_cleanly(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        m.set_config("default", {"embedder": "none"})
        old = m.retain_many(NOTES[:9])
        m.recall("postgres")  # a dim-0 index, snapshotted at close
    with Memory(db_path, backend=backend) as m:
        m.recall("postgres")  # loaded from the dim-0 snapshot
        m.set_config("default", {"embedder": "static"})
        new = m.retain_many(NOTES[9:])
        assert bank_space(db_path) == (MODEL_ID, 256)
        hits = m.recall("what food can't he eat?", limit=20, min_score=0)
        dense = {h.id for h in hits if h.dense_rank}
        # Old memories have no vector until a reembed (a new one whose cosine is not positive
        # and that shares no term scores 0 and is not returned).
        assert dense and dense <= set(new)
        assert set(old).isdisjoint(dense)
        live = recall_rows(m, QUERIES)
    _drop_snapshots(db_path)
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, QUERIES) == live
        assert m.reembed("default") == len(NOTES)
        assert all(v is not None for v in stored_vectors(db_path).values())


CHILD_RETAIN_LOOP = textwrap.dedent(
    """
    import sys
    import memwire.memory.api as mm
    mm.SNAPSHOT_MIN_CHANGES = 25   # snapshot often, so the kill lands around snapshots too
    path, backend, bulk = sys.argv[1], sys.argv[2], sys.argv[3] == "bulk"
    m = mm.Memory(path, backend=backend)
    words = ["river", "mountain", "kitchen", "invoice", "holiday", "server", "garden"]
    i = 0
    while True:
        if bulk:
            batch = [f"{words[(i + j) % 7]} note {i + j} marker q{i + j}z" for j in range(7)]
            for j, mid in enumerate(m.retain_many(batch, bank="crash")):
                print(f"{i + j} {mid}", flush=True)
            i += 7
        else:
            mid = m.retain(f"{words[i % 7]} note {i} marker q{i}z", bank="crash")
            print(f"{i} {mid}", flush=True)
            if i % 10 == 0:
                m.forget(m.retain(f"short lived {i}", bank="crash"))
                m.recall(f"q{i}z", bank="crash")
            i += 1
    """
)


@pytest.mark.parametrize("mode", ["single", "bulk"])
def test_sigkill_keeps_every_acknowledged_vector(db_path: Path, backend: str, mode: str) -> None:
    acknowledged = run_and_kill(CHILD_RETAIN_LOOP, [str(db_path), backend, mode], at_least=120)
    vectors = stored_vectors(db_path, "crash")
    assert bank_space(db_path, "crash") == (MODEL_ID, 256)
    for mid in acknowledged.values():
        assert vectors[mid] is not None and len(vectors[mid] or b"") == 512
    queries = ["river", "kitchen holiday", "q7z", "a place to cook", "vacation"]
    with Memory(db_path, backend=backend) as m:
        for number, mid in list(acknowledged.items())[:40]:
            assert [h.id for h in m.recall(f"q{number}z", bank="crash", limit=1)] == [mid]
        live = recall_rows(m, queries, bank="crash")
    assert any(row[4] for q in live for row in q)
    _drop_snapshots(db_path)
    with Memory(db_path, backend=backend) as m:
        assert recall_rows(m, queries, bank="crash") == live


def test_a_version_1_store_is_upgraded_in_place(db_path: Path, any_backend: str) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        mid = m.retain("kept across the upgrade")
    with sqlite3.connect(db_path) as conn:
        conn.execute("DROP TABLE reembeds")
        conn.execute("DROP TABLE staged_vectors")
        conn.execute("PRAGMA user_version=1")
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        assert [h.id for h in m.recall("upgrade")] == [mid]
        assert m.reembed("default") == 1
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION  # all ran
