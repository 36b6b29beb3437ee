"""A stored snapshot is checked before it is trusted (issue 19): bits flipped, the blob cut
short, its covered seq raised so a replay would skip memories, or its vector bytes perturbed,
each reads as corrupt, is logged once at WARNING, and the index is rebuilt from the rows; every
memory is then found by its unique token, and the next snapshot stored is sound again."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from memwire import Memory
from memwire.memory import snapshot_check
from memwire.memory.snapshot_check import HEADER_SIZE, seal, unseal

FIRST, LATER = 40, 25  # memories in the snapshot, and written after it without one


def token(i: int) -> str:
    return f"tok{i}q{i * 7}z"


def _flip_payload_bit(seq: int, data: bytes) -> tuple[int, bytes]:
    at = HEADER_SIZE + (len(data) - HEADER_SIZE) // 2
    return seq, data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1 :]


def _flip_header_bit(seq: int, data: bytes) -> tuple[int, bytes]:
    at = 8  # the covered seq's low byte: the envelope's own numbers are checksummed too
    return seq, data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


def _truncate(seq: int, data: bytes) -> tuple[int, bytes]:
    return seq, data[: len(data) - 100]


def _seq_raised(seq: int, data: bytes) -> tuple[int, bytes]:
    return seq + LATER, data  # a replay from here would skip every later memory


def _seq_raised_and_resealed_payload(seq: int, data: bytes) -> tuple[int, bytes]:
    # The store's seq and the envelope's agree, but the checksum was of the old numbers.
    raised = seal(seq + LATER, unseal(seq, data))
    return seq + LATER, raised[: HEADER_SIZE - 32] + data[HEADER_SIZE - 32 :]


CORRUPTIONS: dict[str, Callable[[int, bytes], tuple[int, bytes]]] = {
    "payload-bit-flip": _flip_payload_bit,
    "header-bit-flip": _flip_header_bit,
    "truncated": _truncate,
    "seq-raised": _seq_raised,
    "seq-raised-in-envelope": _seq_raised_and_resealed_payload,
}


def _stored(path: Path) -> tuple[int, bytes]:
    with sqlite3.connect(path) as conn:
        seq, data = conn.execute("SELECT seq, data FROM snapshots").fetchone()
    conn.close()
    return int(seq), bytes(data)


def _restore(path: Path, seq: int, data: bytes) -> None:
    with sqlite3.connect(path) as conn:
        assert conn.execute("UPDATE snapshots SET seq = ?, data = ?", (seq, data)).rowcount == 1
    conn.close()


def _perturb_vectors(path: Path, seq: int, data: bytes) -> tuple[int, bytes]:
    """Change one component of every stored memory's vector inside the snapshot's bytes."""
    with sqlite3.connect(path) as conn:
        vectors = [bytes(v) for (v,) in conn.execute("SELECT vector FROM memories LIMIT 5")]
    conn.close()
    out = bytearray(data)
    changed = 0
    for vector in vectors:
        at = data.find(vector, HEADER_SIZE)
        if at >= 0:
            out[at] ^= 0x7F
            changed += 1
    assert changed, "the snapshot holds the memories' vectors"
    return seq, bytes(out)


def _build(path: Path, backend: str) -> list[str]:
    """FIRST memories in a snapshot, then LATER ones committed after it with no snapshot."""
    with Memory(path, backend=backend) as m:
        ids = m.retain_many([f"memory {i} about {token(i)}" for i in range(FIRST)])
        m.recall(token(0))  # load the index, so close() snapshots it
    m = Memory(path, backend=backend)
    ids += m.retain_many([f"memory {i} about {token(i)}" for i in range(FIRST, FIRST + LATER)])
    m._closed = True  # leave as a killed process would: the snapshot predates these
    m._snapshotter.stop()
    m._store.close()
    return ids


def _check_all_found(path: Path, backend: str, ids: list[str]) -> None:
    with Memory(path, backend=backend) as m:
        for i, mid in enumerate(ids):
            hits = m.recall(token(i), limit=1)
            assert hits and hits[0].id == mid, f"memory {i} not found by {token(i)}"


@pytest.fixture(params=["checked-first", "checked-while-loading"])
def overlap(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Small snapshots are checked before the kernel reads them, big ones while it does: this
    runs every case both ways (the bank here is small, so the threshold is lowered)."""
    if request.param == "checked-while-loading":
        monkeypatch.setattr(snapshot_check, "OVERLAP_BYTES", 0)


@pytest.mark.parametrize("how", [*CORRUPTIONS, "vectors-perturbed"])
@pytest.mark.usefixtures("overlap")
def test_a_corrupt_snapshot_is_rebuilt_from_rows(
    db_path: Path, backend: str, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _build(db_path, backend)
    seq, data = _stored(db_path)
    assert unseal(seq, data)  # sound as written
    if how == "vectors-perturbed":
        bad_seq, bad = _perturb_vectors(db_path, seq, data)
    else:
        bad_seq, bad = CORRUPTIONS[how](seq, data)
    _restore(db_path, bad_seq, bad)

    with caplog.at_level(logging.WARNING, logger="memwire"):
        _check_all_found(db_path, backend, ids)
    warnings = [r for r in caplog.records if "is corrupt" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING

    # close() replaced it with a sound snapshot of every memory: the next open trusts it.
    seq, data = _stored(db_path)
    assert seq >= FIRST + LATER and unseal(seq, data)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="memwire"):
        _check_all_found(db_path, backend, ids)
    assert "is corrupt" not in caplog.text and "not usable" not in caplog.text


def test_an_unsealed_snapshot_is_refused(db_path: Path, backend: str) -> None:
    """Kernel bytes with no envelope (as shell=2 wrote them, if one were found) are refused."""
    ids = _build(db_path, backend)
    seq, data = _stored(db_path)
    _restore(db_path, seq, unseal(seq, data))
    _check_all_found(db_path, backend, ids)
