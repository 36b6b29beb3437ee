"""Dense vectors of one index: exact integer scoring of every vector up to a size threshold, of
the candidates a sign-bit scan proposes above it, of HNSW proposals in the largest banks."""

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
    DENSE_GRAPH_MIN,
    DENSE_SCALE,
    DENSE_SIGN_CANDIDATES,
    DENSE_SIGN_RESCORED,
    HNSW_CONNECTIVITY,
    HNSW_EXPANSION_ADD,
    HNSW_EXPANSION_SEARCH,
    HNSW_OVERSAMPLE,
    HNSW_SCALAR,
    MAX_ORDINAL,
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


def _signs(vectors: npt.NDArray[np.int16], words: int) -> npt.NDArray[np.uint64]:
    """Each row's sign bits (set where a component is > 0), ``words`` u64s a row. The bit layout
    is the twin's own: only Hamming distances, which do not depend on it, are compared."""
    bits = np.packbits(vectors > 0, axis=-1, bitorder="little")
    padded = np.zeros((*bits.shape[:-1], words * 8), dtype=np.uint8)
    padded[..., : bits.shape[-1]] = bits
    return padded.view(np.uint64)


# Bits set in each byte value, for numpy releases without `bitwise_count` (before 2.0).
_POP8 = np.array([bin(b).count("1") for b in range(256)], dtype=np.int64)


def _hamming(
    columns: npt.NDArray[np.uint64], query: npt.NDArray[np.uint64]
) -> npt.NDArray[np.int64]:
    """The Hamming distance of each row to ``query``, the rows' bits held a word per row of
    ``columns`` (words x rows): each pass is then one contiguous array and a scalar, which
    numpy runs several times faster than a short row broadcast against every row."""
    count = getattr(np, "bitwise_count", None)
    dist = np.zeros(columns.shape[1], dtype=np.int64)
    for word, bits in zip(columns, query, strict=True):
        diff = word ^ bits
        if count is not None:
            dist += count(diff)
        else:
            dist += _POP8[diff.view(np.uint8)].reshape(-1, 8).sum(axis=1)
    return dist


# Bit k of each byte value 0..255, as a (256, 8) matrix.
_BYTE_BITS = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)


def _asym(query: npt.NDArray[np.int16], signs: npt.NDArray[np.uint64]) -> npt.NDArray[np.int64]:
    """For each row of sign bits, the sum of the query's components at its set bits (exact
    int64), read from a table of the 256 partial sums of each byte's 8 components."""
    nbytes = signs.shape[1] * 8
    padded = np.zeros(nbytes * 8, dtype=np.int64)
    padded[: len(query)] = query
    table = padded.reshape(nbytes, 8) @ _BYTE_BITS.T  # (bytes, 256)
    codes = np.ascontiguousarray(signs).view(np.uint8)  # the packed bytes: byte j, bits 8j..8j+7
    return table.ravel()[codes + 256 * np.arange(nbytes)].sum(axis=1)  # type: ignore[no-any-return]


class _Rows:
    """The vectors and their sign bits row by row, in no particular order (a removed row is
    filled by the last), grown geometrically: the sign scan reads them without a rebuild. The
    bits are held word-major (``signs[w, r]`` is word ``w`` of row ``r``), for ``_hamming``.
    The only copy of the vectors: ``row_of`` finds an ordinal's row."""

    def __init__(self, dim: int) -> None:
        self.words = -(-dim // 64)
        self.n = 0
        self.ords = np.zeros(0, dtype=np.intp)
        self.mat = np.zeros((0, dim), dtype=np.int16)
        self.signs = np.zeros((self.words, 0), dtype=np.uint64)
        self.row_of: dict[int, int] = {}

    def fill(self, ordinals: BitMap, mat: npt.NDArray[np.int16]) -> None:
        """Every row at once, in ascending ordinal order (a snapshot's vectors)."""
        self.n = len(mat)
        self.ords = np.asarray(ordinals.to_array(), dtype=np.intp)
        self.mat = mat.copy()  # rows are moved in place on removal: never a snapshot's buffer
        self.signs = np.ascontiguousarray(_signs(mat, self.words).T)
        self.row_of = {int(o): r for r, o in enumerate(self.ords)}

    def add(self, ordinal: int, vector: npt.NDArray[np.int16]) -> None:
        if self.n == len(self.ords):
            cap = max(64, 2 * self.n)
            self.ords = np.resize(self.ords, cap)
            self.mat = np.resize(self.mat, (cap, self.mat.shape[1]))
            signs = np.zeros((self.words, cap), dtype=np.uint64)
            signs[:, : self.n] = self.signs[:, : self.n]
            self.signs = signs
        r = self.n
        self.ords[r] = ordinal
        self.mat[r] = vector
        self.signs[:, r] = _signs(vector, self.words)
        self.row_of[ordinal] = r
        self.n += 1

    def rows_of(self, ordinals: npt.NDArray[np.intp]) -> npt.NDArray[np.int16]:
        """The vectors of ``ordinals`` (all present), a copy in their order."""
        row_of = self.row_of
        return self.mat[np.fromiter((row_of[int(o)] for o in ordinals), np.intp, len(ordinals))]

    def in_order(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int16]]:
        """The ordinals ascending and their vectors (copies)."""
        order = np.argsort(self.ords[: self.n], kind="stable")
        return self.ords[order], self.mat[order]

    def remove(self, ordinal: int) -> None:
        r = self.row_of.pop(ordinal)
        last = self.n - 1
        if r != last:
            moved = int(self.ords[last])
            self.ords[r] = moved
            self.mat[r] = self.mat[last]
            self.signs[:, r] = self.signs[:, last]
            self.row_of[moved] = r
        self.n = last


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
    """Vectors by ordinal (in a row table); the float matrix of the exact tier is rebuilt
    lazily after changes.

    Guarded by its own lock, so that a graph can be planned and installed from another thread
    than the one writing and searching."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.members = BitMap()  # the ordinals with a vector, for filtered searches
        self._rows = _Rows(dim)
        self.exact_max = DENSE_EXACT_MAX
        self.graph_min = DENSE_GRAPH_MIN
        self.sign_candidates = DENSE_SIGN_CANDIDATES
        self.sign_rescored = DENSE_SIGN_RESCORED
        self._matrix: tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]] | None = None
        self._hnsw: Any = None  # usearch.index.Index, installed by install_graph or a snapshot
        # The newest GraphBuild while it is alive: changes are recorded in its journal.
        self._journal: weakref.ref[GraphBuild] | None = None
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._rows.n

    def some_of(self, ordinals: list[int]) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int16]]:
        """Which of ``ordinals`` have a vector, and those vectors in order (one copy)."""
        row_of = self._rows.row_of
        rows = [row_of.get(o, -1) for o in ordinals]
        has = np.fromiter((r >= 0 for r in rows), dtype=bool, count=len(rows))
        return has, self._rows.mat[[r for r in rows if r >= 0]]

    def in_order(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.int16]]:
        """The ordinals with a vector, ascending, and their vectors (a snapshot's order)."""
        with self._lock:
            return self._rows.in_order()

    def _record(self, change: _Change) -> None:
        build = self._journal() if self._journal is not None else None
        if build is not None:
            with build.journal_lock:
                build.journal.append(change)

    def load_rows(self, ordinals: BitMap, mat: npt.NDArray[np.int16]) -> None:
        """Adopt a snapshot's vectors, one row of ``mat`` per ordinal in ascending order."""
        with self._lock:
            self.members = BitMap(ordinals)
            self._rows.fill(ordinals, mat)
            self._matrix = None

    def set_tiers(
        self, exact_max: int, graph_min: int, sign_candidates: int, sign_rescored: int
    ) -> None:
        """The search tiers' bounds (tests exercise the sign scan on small data)."""
        self.exact_max = exact_max
        self.graph_min = max(graph_min, exact_max)
        self.sign_candidates = max(sign_candidates, 1)
        self.sign_rescored = max(sign_rescored, 1)

    def _shed_graph(self) -> None:
        # A bank that shrank to half the graph's threshold drops its graph, which the scan
        # replaces (half: a bank hovering at the threshold does not rebuild it again and again),
        # as the Rust kernel does.
        if self._hnsw is not None and len(self) <= self.graph_min // 2:
            self._hnsw = None

    def add(self, ordinal: int, vector: npt.NDArray[np.int16]) -> None:
        with self._lock:
            self.members.add(ordinal)
            self._rows.add(ordinal, vector)
            self._matrix = None
            self._shed_graph()
            if self._hnsw is not None:
                _graph_add(self._hnsw, ordinal, vector)
            self._record((ordinal, vector))

    def remove(self, ordinal: int) -> None:
        with self._lock:
            if ordinal in self._rows.row_of:
                self.members.discard(ordinal)
                self._rows.remove(ordinal)
                self._matrix = None
                if self._hnsw is not None:
                    self._hnsw.remove(ordinal)
                self._shed_graph()
                self._record((ordinal, None))

    def needs_graph(self) -> bool:
        """More than ``graph_min`` vectors and no graph installed (searches scan sign bits)."""
        return self._hnsw is None and len(self) > self.graph_min

    def plan_graph(self) -> GraphBuild | None:
        """Phase 1: copy the vectors in ascending ordinal order and start recording changes
        (a newer plan supersedes an older one). None when no graph is needed."""
        with self._lock:
            if not self.needs_graph():
                return None
            ords, mat = self._rows.in_order()
            build = GraphBuild(self.dim, ords.astype(np.uint64), mat)
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
        # From the row table, in its order: `top_k` orders ties by ordinal whatever the input's.
        if self._matrix is None:
            rows = self._rows
            self._matrix = (rows.ords[: rows.n].copy(), rows.mat[: rows.n].astype(_EXACT))
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
        keys = np.asarray(self.members.to_array(), dtype=np.uint64)
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
        size = len(self)
        if size <= self.exact_max:
            # Exact up to the threshold.
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
            mat = self._rows.rows_of(ords).astype(_EXACT)
        elif self._hnsw is not None and size > self.graph_min:
            ords = self._proposals(self._hnsw, query, k, allow)
            if len(ords) == 0:
                return []
            mat = self._rows.rows_of(ords).astype(_EXACT)
        else:
            rows = self._sign_candidates(query, k, allow)
            ords, mat = self._rows.ords[rows], self._rows.mat[rows].astype(_EXACT)
        dots = mat @ q
        return top_k(ords, dots / _DIVISOR, k)

    def _sign_candidates(
        self, query: npt.NDArray[np.int16], k: int, allow: AllowSet | None
    ) -> npt.NDArray[np.intp]:
        """The rows the sign scan proposes for exact scoring (docs/parity.md, "Dense stream"),
        in no particular order: of the vectors ``allow`` admits, the ``c1 =
        max(sign_candidates, c2)`` nearest to ``query`` by the Hamming distance of their sign
        bits (ties by ascending ordinal), then of those the ``c2 = max(sign_rescored, k)``
        whose positive components hold the largest sum of the query's components (ties by
        ascending ordinal)."""
        table = self._rows
        c2 = max(self.sign_rescored, k)
        c1 = max(self.sign_candidates, c2)
        ords = table.ords[: table.n]
        dist = _hamming(table.signs[:, : table.n], _signs(query, table.words))
        rows = np.arange(table.n, dtype=np.intp)
        if allow is not None:
            keep = allow.keep(ords)
            rows, dist = rows[keep], dist[keep]
        if len(rows) > c1:
            # The smallest distance with at least `c1` rows at or below it.
            cut = int(np.searchsorted(np.cumsum(np.bincount(dist)), c1))
            below = rows[dist < cut]
            ties = rows[dist == cut]
            need = c1 - len(below)
            if need < len(ties):
                ties = ties[np.argpartition(ords[ties], need - 1)[:need]]
            rows = np.concatenate([below, ties])
        if len(rows) <= c2:
            return rows
        asym = _asym(query, table.signs[:, rows].T)
        # One distinct int64 key a row, highest sum first, then lowest ordinal: |asym| is below
        # MAX_DIM * 2**15 = 2**27 and ordinals at most MAX_ORDINAL < 2**32, so the key stays
        # within 2**60.
        key = -asym * (MAX_ORDINAL + 1) + ords[rows]
        return rows[np.argpartition(key, c2 - 1)[:c2]]

    def _proposals(
        self, graph: Any, query: npt.NDArray[np.int16], k: int, allow: AllowSet | None
    ) -> npt.NDArray[np.intp]:
        """The graph's distinct proposals that ``allow`` admits, ascending: ``k *
        HNSW_OVERSAMPLE`` asked for, twice as many while fewer than ``k`` pass, until the graph
        has proposed every vector."""
        size = len(self)
        wanted = min(size, k * HNSW_OVERSAMPLE)
        vector = _as_f32(query)
        while True:
            try:
                found = graph.search(vector, wanted, threads=1)
            except Exception as exc:
                raise _failed("search") from exc
            keys = np.unique(np.asarray(found.keys, dtype=np.int64))
            row_of = self._rows.row_of
            kept = keys[[int(o) in row_of for o in keys]] if len(keys) else keys
            if allow is not None:
                kept = kept[allow.keep(kept.astype(np.intp))]
            if allow is None or len(kept) >= k or wanted >= size:
                return kept.astype(np.intp)
            wanted = min(size, wanted * 2)
