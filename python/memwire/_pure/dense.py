"""Dense vectors of one index: exact integer scoring, HNSW proposals above a size threshold."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from memwire._pure._generated import (
    DENSE_EXACT_MAX,
    DENSE_SCALE,
    HNSW_CONNECTIVITY,
    HNSW_EXPANSION_ADD,
    HNSW_EXPANSION_SEARCH,
    HNSW_OVERSAMPLE,
)
from memwire._pure.ranking import top_k
from memwire.errors import InvalidInputError, SnapshotError

# The canonical score divides the exact integer dot product by this, once, in f64.
_DIVISOR = float(DENSE_SCALE * DENSE_SCALE)


def decode(vector: bytes, dim: int) -> npt.NDArray[np.int16]:
    """Little-endian int16 bytes -> array, checked against the index dimension."""
    if dim == 0 or len(vector) != 2 * dim:
        raise InvalidInputError(f"vector has {len(vector) // 2} dimensions, index has {dim}")
    arr = np.frombuffer(vector, dtype="<i2").astype(np.int16)
    if not arr.any():
        raise InvalidInputError("vector must not be all zeros")
    return arr


class DenseStore:
    """Vectors by ordinal; the matrix used for scoring is rebuilt lazily after changes."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vectors: dict[int, npt.NDArray[np.int16]] = {}
        self._matrix: tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]] | None = None
        self._hnsw: Any = None  # usearch.index.Index, built at the first large search

    def __len__(self) -> int:
        return len(self.vectors)

    def add(self, ordinal: int, vector: npt.NDArray[np.int16]) -> None:
        self.vectors[ordinal] = vector
        self._matrix = None
        if self._hnsw is not None:
            self._hnsw.add(ordinal, vector.astype(np.float32) / np.float32(DENSE_SCALE), threads=1)

    def remove(self, ordinal: int) -> None:
        if self.vectors.pop(ordinal, None) is not None:
            self._matrix = None
            if self._hnsw is not None:
                self._hnsw.remove(ordinal)

    def _exact(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int64]]:
        if self._matrix is None:
            ords = np.array(sorted(self.vectors), dtype=np.intp)
            if len(ords):
                mat = np.stack([self.vectors[int(o)] for o in ords]).astype(np.int64)
            else:
                mat = np.zeros((0, self.dim), dtype=np.int64)
            self._matrix = (ords, mat)
        return self._matrix

    def _build_hnsw(self) -> Any:
        from usearch.index import Index

        index = Index(
            ndim=self.dim,
            metric="ip",
            dtype="f32",
            connectivity=HNSW_CONNECTIVITY,
            expansion_add=HNSW_EXPANSION_ADD,
            expansion_search=HNSW_EXPANSION_SEARCH,
        )
        ords = np.array(sorted(self.vectors), dtype=np.uint64)
        if len(ords):
            mat = np.stack([self.vectors[int(o)] for o in ords]).astype(np.float32)
            # One call, one thread: the graph is inserted in ascending ordinal order.
            index.add(ords, mat / np.float32(DENSE_SCALE), threads=1)
        return index

    def hnsw_bytes(self) -> bytes | None:
        """The graph serialised for a snapshot, when one was built."""
        return None if self._hnsw is None else bytes(self._hnsw.save())

    def load_hnsw(self, data: bytes) -> None:
        """Adopt a saved graph (from either backend); it must cover exactly these vectors."""
        from usearch.index import Index

        try:
            graph = Index.restore(bytes(data))
        except Exception:
            graph = None
        if graph is None:
            raise SnapshotError("corrupt snapshot: hnsw: header")
        keys = np.array(sorted(self.vectors), dtype=np.uint64)
        if graph.ndim != self.dim or len(graph) != len(keys) or not np.all(graph.contains(keys)):
            raise SnapshotError("corrupt snapshot: hnsw: does not match the vectors")
        graph.expansion_search = HNSW_EXPANSION_SEARCH  # type: ignore[misc]
        self._hnsw = graph

    def search(
        self, query: npt.NDArray[np.int16], k: int, allow: set[int] | None
    ) -> list[tuple[int, float]]:
        q = query.astype(np.int64)
        if len(self.vectors) <= DENSE_EXACT_MAX:
            ords, mat = self._exact()
            if allow is not None:
                keep = np.fromiter((int(o) in allow for o in ords), dtype=bool, count=len(ords))
                ords, mat = ords[keep], mat[keep]
            dots = mat @ q
        else:
            if self._hnsw is None:
                self._hnsw = self._build_hnsw()
            wanted = min(len(self.vectors), k * HNSW_OVERSAMPLE)
            found = self._hnsw.search(
                q.astype(np.float32) / np.float32(DENSE_SCALE), wanted, threads=1
            )
            cands: Iterable[int] = (int(key) for key in found.keys)
            if allow is not None:
                cands = (c for c in cands if c in allow)
            ords = np.array(sorted(set(cands)), dtype=np.intp)
            if len(ords) == 0:
                return []
            mat = np.stack([self.vectors[int(o)] for o in ords]).astype(np.int64)
            dots = mat @ q
        return top_k(ords, dots.astype(np.float64) / _DIVISOR, k)
