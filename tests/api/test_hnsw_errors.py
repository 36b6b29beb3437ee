"""An HNSW library failure is not a corrupt snapshot, and never costs a memory.

The kernels raise :class:`memwire.errors.HnswError` when usearch cannot create, save or load a
graph (tests/parity/test_contract.py). Memory treats a snapshot whose graph will not load like
any unusable snapshot (rebuild from rows), and a graph that cannot be saved as a snapshot to
try again later.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from memwire.errors import HnswError
from memwire.memory import Memory


class _FailingIndexType:
    """Stands in for a kernel's ``BankIndex`` type: ``from_bytes`` fails as a graph load."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __call__(self, dim: int = 0) -> Any:
        return self._real(dim)

    def from_bytes(self, data: bytes) -> Any:
        raise HnswError("hnsw graph load failed")


class _FailingKernel:
    def __init__(self, real: Any) -> None:
        self._real = real
        self.BankIndex = _FailingIndexType(real.BankIndex)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


class _UnsavableIndex:
    """Wraps a loaded index whose graph cannot be saved."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def to_bytes(self) -> bytes:
        raise HnswError("hnsw graph save failed")

    def __len__(self) -> int:
        return len(self._real)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _fill(path: Path, backend: str) -> list[str]:
    with Memory(path, backend=backend) as mem:
        ids = mem.retain_many([f"note {i} about the staging deploy" for i in range(30)])
        assert mem.recall("staging deploy")  # loads the index, so close() snapshots it
        return ids


def test_a_snapshot_whose_graph_will_not_load_is_rebuilt_from_rows(
    db_path: Path, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = _fill(db_path, backend)  # close() wrote a snapshot
    with Memory(db_path, backend=backend) as mem:
        mem._kernel = _FailingKernel(mem._kernel)  # type: ignore[assignment]
        with caplog.at_level("INFO", logger="memwire"):
            hits = mem.recall("note 7 staging", limit=30, min_score=0)
    assert sorted(h.id for h in hits) == sorted(ids)
    assert "hnsw graph load failed" in caplog.text and "rebuilding" in caplog.text


def test_a_graph_that_cannot_be_saved_loses_nothing(
    db_path: Path, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    mem = Memory(db_path, backend=backend)
    ids = mem.retain_many([f"fact {i} on the release train" for i in range(20)])
    assert len(mem.recall("release train", limit=20, min_score=0)) == 20  # the index is loaded
    state = mem._banks["default"]
    state.index = _UnsavableIndex(state.index)  # type: ignore[assignment]
    with caplog.at_level("WARNING", logger="memwire"):
        mem.close()  # snapshots every changed bank: this one fails to encode
    assert "hnsw graph save failed" in caplog.text
    with Memory(db_path, backend=backend) as again:
        hits = again.recall("release train", limit=20, min_score=0)
        assert sorted(h.id for h in hits) == sorted(ids)
