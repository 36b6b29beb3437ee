"""Dense vectors of one index: exact integer scoring, HNSW proposals above a size threshold."""

from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from memwire._kernel.pure._generated import (
    DENSE_EXACT_MAX,
    DENSE_SCALE,
    HNSW_CONNECTIVITY,
    HNSW_EXPANSION_ADD,
    HNSW_EXPANSION_SEARCH,
    HNSW_OVERSAMPLE,
    HNSW_SCALAR,
)
from memwire._kernel.pure.allow import AllowSet
from memwire._kernel.pure.ranking import top_k
from memwire.errors import HnswError, InvalidInputError, SnapshotError

# The canonical score divides the exact integer dot product by this, once, in f64.
_DIVISOR = float(DENSE_SCALE * DENSE_SCALE)
# Dot products are taken in f64 (BLAS) yet exact: every product of two int16 is below 2**30
# and every partial sum, in any order, an integer below MAX_DIM * 2**30 = 2**42 < 2**53, so no
# operation rounds (nor does a fused multiply-add) and the result is the i64 dot exactly.
_EXACT = np.float64


def decode(vector: bytes, dim: int) -> npt.NDArray[np.int16]:
    """Little-endian int16 bytes -> array, checked against the index dimension."""
    if dim == 0 or len(vector) != 2 * dim:
        raise InvalidInputError(f"vector has {len(vector) // 2} dimensions, index has {dim}")
    arr = np.frombuffer(vector, dtype="<i2").astype(np.int16)
    if not arr.any():
        raise InvalidInputError("vector must not be all zeros")
    return arr


def _failed(op: str) -> HnswError:
    """A failure of the HNSW library itself: the Rust kernel's message, never the library's
    text (its bindings word errors differently); the cause stays chained for tracebacks."""
    return HnswError(f"hnsw graph {op} failed")


def _new_graph(dim: int) -> Any:
    from usearch.index import Index

    try:
        return Index(
            ndim=dim,
            metric="ip",
            dtype=HNSW_SCALAR,
            connectivity=HNSW_CONNECTIVITY,
            expansion_add=HNSW_EXPANSION_ADD,
            expansion_search=HNSW_EXPANSION_SEARCH,
        )
    except Exception as exc:
        raise _failed("create") from exc


def _as_f32(vectors: npt.NDArray[np.int16]) -> npt.NDArray[np.float32]:
    # Same op as the Rust kernel: `f32::from(x) / DENSE_SCALE as f32`. The graph gets these f32
    # values and converts them to HNSW_SCALAR itself (the binding passes the f32 buffer to the
    # C++ as is), in the same C++ as the Rust kernel's binding.
    return vectors.astype(np.float32) / np.float32(DENSE_SCALE)


# (ordinal, vector) for an add, (ordinal, None) for a removal.
_Change = tuple[int, "npt.NDArray[np.int16] | None"]

# Vectors inserted per call while building: a cancel takes effect between two calls. Chunking
# does not change the graph (one thread, same order, thread slot 0's level generator).
_BUILD_CHUNK = 1024
# A build stops catching up with the journal once a pass finds at most this many changes.
_CATCH_UP_TAIL = 64


def _graph_add(graph: Any, ordinal: int, vector: npt.NDArray[np.int16]) -> None:
    # `threads=1` inserts with thread slot 0, so every level is drawn from slot 0's generator:
    # the Rust kernel reserves before each insertion to take slot 0 too (docs/parity.md,
    # "Dense stream"), and the two graphs are byte-identical.
    # As in the Rust kernel, a failed insertion only loses an HNSW proposal (exact scores never
    # depend on the graph), and the add that made it has already happened: it is not raised.
    with contextlib.suppress(Exception):
        graph.add(ordinal, _as_f32(vector), threads=1)


def _replay(graph: Any, changes: list[_Change]) -> None:
    """Apply recorded changes to a graph, in the order they were made."""
    for ordinal, vector in changes:
        if vector is None:
            graph.remove(ordinal)
        else:
            _graph_add(graph, ordinal, vector)


class GraphBuild:
    """A graph built off the index (docs/parity.md, "Dense stream"): planned by
    :meth:`DenseStore.plan_graph`, built by :meth:`build` with no lock held, installed by
    :meth:`DenseStore.install_graph`, which replays the changes recorded meanwhile."""

    def __init__(self, dim: int, ords: npt.NDArray[np.uint64], mat: npt.NDArray[np.int16]):
        self._dim = dim
        self._ords = ords
        self._mat = mat
        self.journal: list[_Change] = []
        self.journal_lock = threading.Lock()
        self.cancelled = threading.Event()
        self.graph: Any = None
        self._lock = threading.Lock()

    def take_journal(self) -> list[_Change]:
        with self.journal_lock:
            changes, self.journal = self.journal, []
        return changes

    def build(self) -> bool:
        """Insert every planned vector in ascending ordinal order on one thread, then the
        changes recorded so far, in order (the install replays the rest); False when
        cancelled."""
        with self._lock:
            if self.graph is not None:
                return True
            graph = _new_graph(self._dim)
            for start in range(0, len(self._ords), _BUILD_CHUNK):
                if self.cancelled.is_set():
                    return False
                stop = start + _BUILD_CHUNK
                try:
                    graph.add(self._ords[start:stop], _as_f32(self._mat[start:stop]), threads=1)
                except Exception as exc:
                    raise _failed("build") from exc
            # Catch up with the changes recorded meanwhile (a bulk import goes on during a
            # build), so that the install, under the store's lock, replays only a short tail.
            while True:
                changes = self.take_journal()
                _replay(graph, changes)
                if self.cancelled.is_set():
                    return False
                if len(changes) <= _CATCH_UP_TAIL:
                    break
            self.graph = graph
            return True

    def cancel(self) -> None:
        """Stop a running :meth:`build` early; the plan can then not be installed."""
        self.cancelled.set()


class DenseStore:
    """Vectors by ordinal; the matrix used for scoring is rebuilt lazily after changes.

    Guarded by its own lock, so that a graph can be planned and installed from another thread
    than the one writing and searching."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.vectors: dict[int, npt.NDArray[np.int16]] = {}
        self.members = BitMap()  # the keys of ``vectors``, for filtered searches
        self.exact_max = DENSE_EXACT_MAX
        self._matrix: tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]] | None = None
        self._hnsw: Any = None  # usearch.index.Index, installed by install_graph or a snapshot
        # The newest GraphBuild while it is alive: changes are recorded in its journal.
        self._journal: weakref.ref[GraphBuild] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.vectors)

    def _record(self, change: _Change) -> None:
        build = self._journal() if self._journal is not None else None
        if build is not None:
            with build.journal_lock:
                build.journal.append(change)

    def add(self, ordinal: int, vector: npt.NDArray[np.int16]) -> None:
        with self._lock:
            self.vectors[ordinal] = vector
            self.members.add(ordinal)
            self._matrix = None
            if self._hnsw is not None:
                _graph_add(self._hnsw, ordinal, vector)
            self._record((ordinal, vector))

    def remove(self, ordinal: int) -> None:
        with self._lock:
            if self.vectors.pop(ordinal, None) is not None:
                self.members.discard(ordinal)
                self._matrix = None
                if self._hnsw is not None:
                    self._hnsw.remove(ordinal)
                self._record((ordinal, None))

    def needs_graph(self) -> bool:
        """More than ``exact_max`` vectors and no graph installed (searches are exact)."""
        return self._hnsw is None and len(self.vectors) > self.exact_max

    def plan_graph(self) -> GraphBuild | None:
        """Phase 1: copy the vectors in ascending ordinal order and start recording changes
        (a newer plan supersedes an older one). None when no graph is needed."""
        with self._lock:
            if not self.needs_graph():
                return None
            ords = np.array(sorted(self.vectors), dtype=np.uint64)
            mat = np.stack([self.vectors[int(o)] for o in ords])
            build = GraphBuild(self.dim, ords, mat)
            self._journal = weakref.ref(build)
            return build

    def install_graph(self, build: GraphBuild) -> bool:
        """Phase 3: replay the recorded changes onto the built graph, in call order, and
        install it; False when the build is unfinished, cancelled, superseded or foreign, or a
        graph is already installed."""
        with self._lock:
            current = self._journal is not None and self._journal() is build
            if current:
                self._journal = None
            if not current or build.graph is None or build.cancelled.is_set():
                return False
            if self._hnsw is not None:
                return False
            _replay(build.graph, build.take_journal())
            self._hnsw = build.graph
            return True

    def _exact(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        if self._matrix is None:
            ords = np.array(sorted(self.vectors), dtype=np.intp)
            if len(ords):
                mat = np.stack([self.vectors[int(o)] for o in ords]).astype(_EXACT)
            else:
                mat = np.zeros((0, self.dim), dtype=_EXACT)
            self._matrix = (ords, mat)
        return self._matrix

    def hnsw_bytes(self) -> bytes | None:
        """The graph serialised for a snapshot, when one is installed."""
        with self._lock:
            if self._hnsw is None:
                return None
            try:
                return bytes(self._hnsw.save())
            except Exception as exc:
                raise _failed("save") from exc

    def load_hnsw(self, data: bytes | memoryview) -> None:
        """Adopt a saved graph (from either backend); it must cover exactly these vectors."""
        from usearch.compiled import MetricKind, ScalarKind
        from usearch.index import Index

        # Checked in this order by both kernels: the header, what it says, the body, its keys.
        try:
            meta = Index.metadata(data)
        except Exception:
            meta = None
        if not meta:
            raise SnapshotError("corrupt snapshot: hnsw: header")
        keys = np.array(sorted(self.vectors), dtype=np.uint64)
        mismatch = SnapshotError("corrupt snapshot: hnsw: does not match the vectors")
        if (
            meta["dimensions"] != self.dim
            or meta["count_present"] != len(keys)
            or meta["kind_metric"] != MetricKind.IP
            or meta["kind_scalar"] != getattr(ScalarKind, HNSW_SCALAR.upper())
        ):
            raise mismatch
        graph: Index = _new_graph(self.dim)
        try:
            graph.load(data)
        except Exception:
            raise SnapshotError("corrupt snapshot: hnsw: body") from None
        if graph.multi or len(graph) != len(keys) or not np.all(graph.contains(keys)):
            raise mismatch
        graph.expansion_search = HNSW_EXPANSION_SEARCH  # type: ignore[misc]
        with self._lock:
            self._hnsw = graph

    def search(
        self, query: npt.NDArray[np.int16], k: int, allow: AllowSet | None
    ) -> list[tuple[int, float]]:
        with self._lock:
            return self._search(query, k, allow)

    def _search(
        self, query: npt.NDArray[np.int16], k: int, allow: AllowSet | None
    ) -> list[tuple[int, float]]:
        q = query.astype(_EXACT)
        graph = self._hnsw if len(self.vectors) > self.exact_max else None
        if graph is None:
            # Exact up to the threshold, and above it until a graph is installed.
            ords, mat = self._exact()
            if allow is not None:
                keep = allow.keep(ords)
                ords, mat = ords[keep], mat[keep]
        elif allow is not None and allow.bitmap.intersection_cardinality(self.members) <= (
            self.exact_max
        ):
            # A filter that leaves at most `exact_max` vectors is searched exactly.
            ords = np.asarray((allow.bitmap & self.members).to_array(), dtype=np.intp)
            if len(ords) == 0:
                return []
            mat = np.stack([self.vectors[int(o)] for o in ords]).astype(_EXACT)
        else:
            ords = self._proposals(graph, query, k, allow)
            if len(ords) == 0:
                return []
            mat = np.stack([self.vectors[int(o)] for o in ords]).astype(_EXACT)
        dots = mat @ q
        return top_k(ords, dots / _DIVISOR, k)

    def _proposals(
        self, graph: Any, query: npt.NDArray[np.int16], k: int, allow: AllowSet | None
    ) -> npt.NDArray[np.intp]:
        """The graph's distinct proposals that ``allow`` admits, ascending: ``k *
        HNSW_OVERSAMPLE`` asked for, twice as many while fewer than ``k`` pass, until the graph
        has proposed every vector."""
        size = len(self.vectors)
        wanted = min(size, k * HNSW_OVERSAMPLE)
        vector = _as_f32(query)
        while True:
            try:
                found = graph.search(vector, wanted, threads=1)
            except Exception as exc:
                raise _failed("search") from exc
            keys = np.unique(np.asarray(found.keys, dtype=np.int64))
            kept = keys[[int(o) in self.vectors for o in keys]] if len(keys) else keys
            if allow is not None:
                kept = kept[allow.keep(kept.astype(np.intp))]
            if allow is None or len(kept) >= k or wanted >= size:
                return kept.astype(np.intp)
            wanted = min(size, wanted * 2)
