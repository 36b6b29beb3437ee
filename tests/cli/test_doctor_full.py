"""``memwire doctor --full`` compares each bank's index with its rows and says what it repaired
(issue 19): a snapshot that passes its checksum yet holds five forgotten memories, and a
snapshot with flipped bits."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from memwire.__main__ import main
from memwire.memory import Memory
from memwire.memory.snapshot_check import HEADER_SIZE, seal, unseal


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "home"))


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _stored(path: Path) -> tuple[int, bytes]:
    with sqlite3.connect(path) as conn:
        seq, data = conn.execute("SELECT seq, data FROM snapshots").fetchone()
    conn.close()
    return int(seq), bytes(data)


def _replace(path: Path, seq: int, data: bytes) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE snapshots SET seq = ?, data = ?", (seq, data))
    conn.close()


def _doctor(
    capsys: pytest.CaptureFixture[str], db: Path
) -> tuple[int, dict[str, dict[str, object]]]:
    code, out, _ = run(capsys, "doctor", "--db", str(db), "--json", "--port", "1", "--full")
    return code, {c["name"]: c for c in json.loads(out)["checks"]}


def _recall_all(db: Path, ids: list[str]) -> None:
    with Memory(db) as m:
        for i, mid in enumerate(ids):
            hits = m.recall(f"tok{i}q{i * 7}z", limit=1)
            assert hits and hits[0].id == mid


def _thirty(db: Path) -> list[str]:
    """A bank of 30 memories, each with a unique token, and its snapshot."""
    with Memory(db) as m:
        ids = m.retain_many([f"memory {i} about tok{i}q{i * 7}z" for i in range(30)])
        m.recall("memory")
    return ids


def test_a_wrong_but_well_sealed_index_is_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memory.db"
    ids = _thirty(db)
    seq, data = _stored(db)
    stale = unseal(seq, data)  # the index of all 30
    with Memory(db) as m:
        for mid in ids[:5]:
            assert m.forget(mid)
        m.recall("memory")
    seq, _ = _stored(db)
    _replace(db, seq, seal(seq, stale))  # checksum and seq agree; the content is wrong

    code, checks = _doctor(capsys, db)
    index = checks["index 'default'"]
    assert (index["rows"], index["indexed"], index["missing"], index["extra"]) == (25, 30, 0, 5)
    assert index["status"] == "warn"
    assert index["repaired"] == "index rebuilt from 25 rows; snapshot replaced"
    assert checks["background"]["status"] == "ok"
    assert code == 0

    code, checks = _doctor(capsys, db)  # the replaced snapshot is sound
    index = checks["index 'default'"]
    assert index["status"] == "ok" and index["snapshot"] == "used" and index["repaired"] is None
    with Memory(db) as m:
        assert {h.id for h in m.recall("memory", limit=100) if h.bm25_rank} == set(ids[5:])


def test_a_corrupt_snapshot_is_reported_and_replaced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memory.db"
    ids = _thirty(db)
    seq, data = _stored(db)
    at = HEADER_SIZE + 10
    _replace(db, seq, data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])

    code, checks = _doctor(capsys, db)
    assert code == 0  # repaired: a warning, not a failure
    index = checks["index 'default'"]
    assert index["snapshot"] == "refused" and index["status"] == "warn"
    assert (index["rows"], index["missing"], index["extra"]) == (30, 0, 0)
    assert index["repaired"] == "snapshot replaced"
    seq, data = _stored(db)
    assert unseal(seq, data)
    _recall_all(db, ids)
