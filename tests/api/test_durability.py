"""Durability and concurrency: crashes lose nothing acknowledged, processes share one file,
snapshots plus replay always equal a rebuild from the rows."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from api_support import BACKENDS, child_env, lexical, run_and_kill
from memwire import Memory
from memwire.memory import api as memory_module

CHILD_RETAIN_LOOP = textwrap.dedent(
    """
    import sys
    import memwire.memory.api as mm
    mm.SNAPSHOT_MIN_CHANGES = 25   # snapshot often, so the kill lands around snapshots too
    path, backend, bulk = sys.argv[1], sys.argv[2], sys.argv[3] == "bulk"
    m = mm.Memory(path, backend=backend)
    i = 0
    while True:
        if bulk:
            batch = [f"bulk memory {i + j} marker q{i + j}z" for j in range(7)]
            for j, mid in enumerate(m.retain_many(batch, bank="crash")):
                print(f"{i + j} {mid}", flush=True)
            i += 7
        else:
            mid = m.retain(f"stream memory {i} marker q{i}z", bank="crash",
                           tags=[f"t{i % 3}"], context=f"context {i}")
            print(f"{i} {mid}", flush=True)
            if i % 10 == 0:
                m.forget(m.retain(f"short lived {i}", bank="crash"))
                m.recall(f"q{i}z", bank="crash")
            i += 1
    """
)


def _run_and_kill(path: Path, backend: str, mode: str, at_least: int) -> dict[int, str]:
    return run_and_kill(CHILD_RETAIN_LOOP, [str(path), backend, mode], at_least)


@pytest.mark.parametrize("mode", ["single", "bulk"])
def test_sigkill_mid_stream_loses_nothing_acknowledged(
    db_path: Path, backend: str, mode: str
) -> None:
    acknowledged = _run_and_kill(db_path, backend, mode, at_least=150)
    assert len(acknowledged) >= 150
    with Memory(db_path, backend=backend) as m:
        word = "stream" if mode == "single" else "bulk"
        for number, mid in acknowledged.items():
            record = m.get(mid, bank="crash")
            assert record.content == f"{word} memory {number} marker q{number}z"
            hits = m.recall(f"q{number}z", bank="crash", limit=1)
            assert [h.id for h in hits] == [mid], number
        assert lexical(m.recall("short lived", bank="crash")) == []
    # and the index the next opener builds (from whatever snapshot the crash left) matches a
    # rebuild from the rows alone
    assert _recall_everything(db_path, backend) == _recall_everything(
        db_path, backend, drop_snapshots=True
    )


CHILD_WRITER = textwrap.dedent(
    """
    import sys
    import memwire
    path, backend, who = sys.argv[1], sys.argv[2], sys.argv[3]
    with memwire.Memory(path, backend=backend) as m:
        for i in range(60):
            mid = m.retain(f"writer {who} memory {i} shared-word w{who}n{i}", bank="shared")
            print(mid, flush=True)
            if i % 15 == 0:
                m.recall("shared-word", bank="shared")
        ids = m.retain_many([f"writer {who} bulk {i} shared-word" for i in range(40)],
                            bank="shared")
        for mid in ids:
            print(mid, flush=True)
    """
)


def test_four_processes_retain_into_one_file(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        m.retain("before the crowd", bank="shared")
    children = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD_WRITER, str(db_path), backend, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for n in range(4)
    ]
    ids: list[str] = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
        assert err == ""
        ids.extend(out.split())
    assert len(ids) == 4 * 100 and len(set(ids)) == 400
    with Memory(db_path, backend=backend) as m:
        assert m.stats(bank="shared")["count"] == 401
        for mid in ids:
            assert m.get(mid, bank="shared").bank == "shared"
        for who in range(4):
            for i in (0, 33, 59):
                hits = m.recall(f"w{who}n{i}", bank="shared", limit=1)
                assert hits and hits[0].content == f"writer {who} memory {i} shared-word w{who}n{i}"
        assert len(m.recall("shared-word", bank="shared", limit=100)) == 100


# -- snapshot + replay ---------------------------------------------------------------------


def _recall_everything(
    path: Path, backend: str, drop_snapshots: bool = False
) -> list[list[tuple[str, float, int, int, int]]]:
    if drop_snapshots:
        with sqlite3.connect(path) as conn:
            conn.execute("DELETE FROM snapshots")
    m = Memory(path, backend=backend)
    try:
        out = []
        for bank in m.banks():
            for query in ("memory", "marker context", "alpha beta", "q3z q5z", "stream 12"):
                out.append(
                    [
                        (h.id, h.score, h.bm25_rank, h.overlap_rank, h.dense_rank)
                        for h in m.recall(query, bank=bank, limit=100)
                    ]
                )
        return out
    finally:
        m._closed = True  # leave without writing snapshots: keep the file as the test left it
        m._snapshotter.stop()
        m._store.close()


def _snapshot_seq(path: Path, bank: str = "default") -> int | None:
    with sqlite3.connect(path) as conn:
        found = conn.execute(
            "SELECT s.seq FROM snapshots s JOIN banks b ON b.id = s.bank_id WHERE b.name = ?",
            (bank,),
        ).fetchone()
    return None if found is None else int(found[0])


def _abandon(m: Memory) -> None:
    """Drop a Memory as a killed process would: no snapshot, no clean close."""
    m._closed = True
    m._snapshotter.stop()
    m._store.close()


def test_snapshot_at_close_then_replay_after_an_unclean_exit(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        ids = m.retain_many([f"memory {i} alpha" for i in range(50)])
        m.recall("alpha")  # load the index, so close() snapshots it
    seq = _snapshot_seq(db_path)
    assert seq is not None and seq >= 50

    m = Memory(db_path, backend=backend)
    more = m.retain_many([f"memory {i} beta" for i in range(50, 80)])
    assert m.forget(ids[3]) and m.forget(ids[7])
    assert len(lexical(m.recall("alpha", limit=100))) == 48
    _abandon(m)  # killed: the snapshot on disk predates the beta memories and the forgets
    assert _snapshot_seq(db_path) == seq

    with Memory(db_path, backend=backend) as m:
        alpha = {h.id for h in lexical(m.recall("alpha", limit=100))}
        assert alpha == set(ids) - {ids[3], ids[7]}
        assert {h.id for h in lexical(m.recall("beta", limit=100))} == set(more)
    assert _recall_everything(db_path, backend) == _recall_everything(
        db_path, backend, drop_snapshots=True
    )


def test_a_corrupt_snapshot_is_rebuilt_from_rows(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        ids = m.retain_many([f"memory {i} alpha" for i in range(20)])
        m.recall("alpha")
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("UPDATE snapshots SET data = x'00ff00ff'").rowcount == 1
    with Memory(db_path, backend=backend) as m:
        assert {h.id for h in m.recall("alpha", limit=100)} == set(ids)
    assert _snapshot_seq(db_path) is not None  # and close() wrote a good one again
    with Memory(db_path, backend=backend) as m:
        assert {h.id for h in m.recall("alpha", limit=100)} == set(ids)


def test_background_snapshots_and_pruned_removals(
    db_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_module, "SNAPSHOT_MIN_CHANGES", 10)
    reader = Memory(db_path, backend=backend)
    writer = Memory(db_path, backend=backend)
    try:
        first = writer.retain("the first memory alpha")
        assert [h.id for h in reader.recall("alpha")] == [first]  # reader's index: seq 1
        writer.recall("alpha")
        doomed = writer.retain_many([f"doomed {i} alpha" for i in range(30)])
        for mid in doomed:
            writer.forget(mid)
        writer.close()  # snapshot saved, the removal log before it pruned
        assert _snapshot_seq(db_path) is not None
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM removals").fetchone()[0] == 0
        # the reader lags behind the pruned log: it must reload, not miss the forgets
        assert [h.id for h in reader.recall("alpha", limit=100)] == [first]
        assert lexical(reader.recall("doomed", limit=100)) == []
    finally:
        reader.close()


def test_other_processes_writes_are_caught_up_before_recall(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as a, Memory(db_path, backend=backend) as b:
        assert b.recall("kiwi") == []
        kiwi = a.retain("kiwi harvest in may")
        assert [h.id for h in b.recall("kiwi")] == [kiwi]
        a.forget(kiwi)
        assert b.recall("kiwi") == []
        a.delete_bank("default")
        again = a.retain("kiwi harvest in june")
        assert [h.id for h in b.recall("kiwi")] == [again]
        b.retain("kiwi jam recipe")
        assert len(a.recall("kiwi")) == 2


@pytest.mark.skipif(len(BACKENDS) < 2, reason="needs both backends (Rust extension not built)")
def test_both_backends_give_identical_recall_and_share_snapshots(tmp_path: Path) -> None:
    path = tmp_path / "parity.db"
    words = ["alpha", "beta", "gamma", "delta", "rivers", "mountains", "Straße", "東京都", "café"]
    with Memory(path, backend="rust") as m:
        m.retain_many(
            [
                {
                    "content": " ".join(words[(i * k) % len(words)] for k in range(1, 2 + i % 5)),
                    "context": f"note {i % 7}",
                    "tags": [f"t{i % 4}"],
                }
                for i in range(300)
            ]
        )
        m.recall("alpha")  # close() writes a Rust snapshot
    queries = ["alpha", "rivers mountains", "strasse", "東京", "cafe note", "note 3", "gamma t1"]

    def run(backend: str) -> list[list[tuple[str, float, int, int, int]]]:
        with Memory(path, backend=backend) as m:
            return [
                [
                    (h.id, h.score, h.bm25_rank, h.overlap_rank, h.dense_rank)
                    for h in m.recall(q, limit=100, tags=tags)
                ]
                for q in queries
                for tags in (None, ["t1", "t2"])
            ]

    from_rust_snapshot = run("python")
    rust = run("rust")
    assert from_rust_snapshot == rust
    assert _recall_everything(path, "python", drop_snapshots=True) == _recall_everything(
        path, "rust", drop_snapshots=True
    )
