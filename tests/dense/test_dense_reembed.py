"""Memory.reembed: re-encode a bank in place, resumably, switching its space only at the end."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from api_support import child_env
from dense_support import NOTES, TinyEmbedder, bank_space, recall_rows, stored_vectors
from memwire import Memory
from memwire.embed.static import MODEL_ID
from memwire.errors import InvalidInputError, NotFoundError

QUERIES = ["postgres backups", "staging database port", "what food can't he eat?", "cat"]


def _fresh_recall(path: Path, backend: str, embedder: TinyEmbedder | None) -> list[object]:
    with Memory(path, backend=backend, embedder=embedder) as m:
        return recall_rows(m, QUERIES)  # type: ignore[return-value]


def test_reembed_switches_a_static_bank_to_a_user_embedder(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        ids = m.retain_many([*NOTES, "𓀀𓀁"])
        m.recall("postgres")  # a loaded index, so close() writes a snapshot
    assert bank_space(db_path) == (MODEL_ID, 256)
    assert stored_vectors(db_path)[ids[-1]] is None  # no token the static table knows
    seen: list[tuple[int, int]] = []
    tiny = TinyEmbedder("team-model", dim=32)
    with Memory(db_path, backend=backend, embedder=tiny) as m:
        assert m.reembed("default", batch=5, progress=lambda d, t: seen.append((d, t))) == 19
        assert tiny.calls == [5, 5, 5, 4]
        assert seen == [(5, 19), (10, 19), (15, 19), (19, 19)]
        assert m.reembed_status("default") is None
        assert bank_space(db_path) == ("team-model", 32)
        vectors = stored_vectors(db_path)
        assert all(vectors[i] is not None and len(vectors[i] or b"") == 64 for i in ids)
        hits = m.recall("postgres backups")
        assert hits[0].id == ids[9] and hits[0].dense_rank >= 1
        after = recall_rows(m, QUERIES)
    with sqlite3.connect(db_path) as conn:  # nothing left over
        assert conn.execute("SELECT COUNT(*) FROM staged_vectors").fetchone()[0] == 0
        assert conn.execute("SELECT COUNT(*) FROM reembeds").fetchone()[0] == 0
    assert _fresh_recall(db_path, backend, TinyEmbedder("team-model", dim=32)) == after
    with Memory(db_path, backend=backend) as m, pytest.raises(InvalidInputError, match=MODEL_ID):
        m.recall("postgres")


def test_an_interrupted_reembed_resumes_where_it_stopped(db_path: Path, any_backend: str) -> None:
    backend = any_backend
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("old")) as m:
        ids = m.retain_many([f"note {i} about topic{i % 7}" for i in range(40)])
        before = recall_rows(m, ["topic3", "note 5"])
    crashing = TinyEmbedder("new", dim=24, fail_after=3)
    with Memory(db_path, backend=backend, embedder=crashing) as m:
        with pytest.raises(RuntimeError, match="crashed"):
            m.reembed("default", batch=7)
        assert m.reembed_status("default") == {
            "embedder": "new",
            "dim": 24,
            "done": 21,
            "total": 40,
        }
        # until it finishes, the bank keeps its space and vectors, for everyone
        assert bank_space(db_path) == ("old", 16)
        with pytest.raises(InvalidInputError, match="'old'"):
            m.recall("topic3")
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("old")) as m:
        assert recall_rows(m, ["topic3", "note 5"]) == before
        late = m.retain("note 99 about topic3, retained during the reembed")
    good = TinyEmbedder("new", dim=24)
    seen: list[tuple[int, int]] = []
    with Memory(db_path, backend=backend, embedder=good) as m:
        assert m.reembed("default", batch=7, progress=lambda d, t: seen.append((d, t))) == 20
        assert seen[0] == (28, 41) and seen[-1] == (41, 41)
        assert bank_space(db_path) == ("new", 24)
        vectors = stored_vectors(db_path)
        expected = dict(zip([*ids, late], good.embed([*_texts(db_path)]), strict=True))
        assert set(vectors) == set(expected)
        assert all(v is not None and len(v) == 48 for v in vectors.values())
        resumed = recall_rows(m, ["topic3", "note 5"])
    # the same result as a run that was never interrupted
    other = db_path.parent / "other.db"
    with Memory(other, backend=backend, embedder=TinyEmbedder("old")) as m:
        m.retain_many([f"note {i} about topic{i % 7}" for i in range(40)])
        m.retain("note 99 about topic3, retained during the reembed")
    with Memory(other, backend=backend, embedder=TinyEmbedder("new", dim=24)) as m:
        m.reembed("default")
        assert [[r[1:] for r in q] for q in recall_rows(m, ["topic3", "note 5"])] == [
            [r[1:] for r in q] for q in resumed
        ]
    assert stored_vectors(other).values().__len__() == 41
    assert list(stored_vectors(other).values()) == list(stored_vectors(db_path).values())


def _texts(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT content FROM memories ORDER BY ordinal")]


def test_a_reembed_into_another_space_discards_an_unfinished_one(
    db_path: Path, any_backend: str
) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder("old")) as m:
        m.retain_many([f"memory {i}" for i in range(10)])
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder("a", fail_after=1)) as m:
        with pytest.raises(RuntimeError):
            m.reembed("default", batch=4)
        assert (m.reembed_status("default") or {})["done"] == 4
        assert m.reembed("default", embedder=TinyEmbedder("b", dim=8), batch=4) == 10
    assert bank_space(db_path) == ("b", 8)


def test_reembed_with_the_same_embedder_refreshes_every_index(
    db_path: Path, any_backend: str
) -> None:
    """A fixed model under the same id: the vectors change, the space does not; an index loaded
    elsewhere before the switch must not keep serving the old vectors (nor snapshot them)."""
    backend = any_backend
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("m")) as m:
        m.retain_many(NOTES)
        m.recall("postgres")
    # (the reader embeds queries with the fixed model, so only the memories' vectors change)
    reader = Memory(db_path, backend=backend, embedder=TinyEmbedder("m", salt="v2"))
    old = recall_rows(reader, QUERIES)  # loaded from the snapshot
    try:
        with Memory(db_path, backend=backend, embedder=TinyEmbedder("m", salt="v2")) as m:
            assert m.reembed("default") == len(NOTES)
        new = _fresh_recall(db_path, backend, TinyEmbedder("m", salt="v2"))
        assert new != old
        assert recall_rows(reader, QUERIES) == new
    finally:
        reader.close()  # its snapshot (taken before the switch, if any) must not win
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM snapshots")  # what a rebuild from the rows gives
    assert _fresh_recall(db_path, backend, TinyEmbedder("m", salt="v2")) == new


def test_a_stale_index_cannot_store_its_snapshot_after_a_reembed(
    db_path: Path, any_backend: str
) -> None:
    backend = any_backend
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("m")) as m:
        m.retain_many(NOTES)
    stale = Memory(db_path, backend=backend, embedder=TinyEmbedder("m"))
    stale.recall("postgres")
    stale.retain("one more note, so the stale index has changes to snapshot")
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("m", salt="v2")) as m:
        m.reembed("default")
    stale._snapshot("default")  # the index still holds old vectors: refused
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 0
    stale.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM snapshots").fetchone()[0] == 0


def test_reembed_refusals(db_path: Path, any_backend: str) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        with pytest.raises(NotFoundError):
            m.reembed("nope")
        m.retain("x")
        for bad in (0, -1, 100_001, 1.5, True):
            with pytest.raises(InvalidInputError, match="batch"):
                m.reembed("default", batch=bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="progress"):
            m.reembed("default", progress=3)  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            m.reembed("default", embedder=object())  # type: ignore[arg-type]
        m.set_config("default", {"embedder": "none"})
        with pytest.raises(InvalidInputError, match="'none'"):
            m.reembed("default")
        with pytest.raises(NotFoundError):
            m.reembed_status("nope")


def test_an_empty_bank_and_an_unembedded_bank_can_be_reembedded(
    db_path: Path, any_backend: str
) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder()) as m:
        m.set_config("empty", {})
        assert m.reembed("empty") == 0
        assert bank_space(db_path, "empty") == ("tiny", 16)
        m.set_config("plain", {"embedder": "none"})
        ids = m.retain_many(["lexical one", "lexical two"], bank="plain")
        m.set_config("plain", {"embedder": "static"})
        assert m.reembed("plain") == 2
        assert all(stored_vectors(db_path, "plain")[i] is not None for i in ids)
        assert m.recall("two", bank="plain")[0].dense_rank == 1


CHILD_REEMBED = textwrap.dedent(
    """
    import sys, time
    sys.path[:0] = [sys.argv[3], sys.argv[3] + "/../api", sys.argv[3] + "/.."]
    from dense_support import TinyEmbedder
    from memwire import Memory
    path, backend = sys.argv[1], sys.argv[2]

    class Slow(TinyEmbedder):
        def embed(self, texts):
            time.sleep(0.02)
            return super().embed(texts)

    with Memory(path, backend=backend, embedder=Slow("new", dim=24)) as m:
        m.reembed("default", batch=10, progress=lambda d, t: print(d, t, flush=True))
        print("finished", flush=True)
    """
)


def test_a_reembed_killed_mid_run_resumes(db_path: Path, any_backend: str) -> None:
    backend = any_backend
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("old")) as m:
        m.retain_many([f"note {i} on subject{i % 5}" for i in range(200)])
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD_REEMBED, str(db_path), backend, str(Path(__file__).parent)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    assert child.stdout is not None
    try:
        done = 0
        for line in child.stdout:
            done = int(line.split()[0])
            if done >= 50:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        _, err = child.communicate()
    assert child.returncode == -signal.SIGKILL, err
    assert bank_space(db_path) == ("old", 16)
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("new", dim=24)) as m:
        status = m.reembed_status("default")
        assert status is not None and status["done"] >= done and status["total"] == 200
        assert m.reembed("default", batch=10) == 200 - status["done"]
        after = recall_rows(m, ["subject3", "note 17"])
    assert bank_space(db_path) == ("new", 24)
    assert all(v is not None and len(v) == 48 for v in stored_vectors(db_path).values())
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM snapshots")
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("new", dim=24)) as m:
        assert recall_rows(m, ["subject3", "note 17"]) == after
