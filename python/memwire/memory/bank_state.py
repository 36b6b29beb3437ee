"""A bank's derived index in this process and the background thread that keeps it in shape:
snapshots and the HNSW graph are made off the hot path (docs/storage.md, docs/dense.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwire._kernel.contract import BankIndex, DenseGraphBuild

__all__ = ["BankState", "Snapshotter", "fit_vectors", "is_lookup"]


def is_lookup(index: BankIndex, query: str, allow: Sequence[int] | None, ratio: float) -> bool:
    """Whether BM25's best hit leads the second by ``ratio`` (config ``lookup_ratio``).

    Such a query names something one memory has (an identifier, a rare name); the dense stream
    would only add neighbours that can outrank it, so recall runs it lexically."""
    if ratio <= 0:
        return False
    top = index.search_bm25(query, 2, allow)
    return len(top) == 2 and top[0][1] >= ratio * top[1][1]


def fit_vectors(vectors: Sequence[bytes | None], dim: int) -> list[bytes | None]:
    """The vectors an index of ``dim`` can take (a vector of another size reads as none: the
    index is reloaded once the bank's recorded dimension and the index agree again)."""
    return [v if v is not None and dim and len(v) == 2 * dim else None for v in vectors]


class BankState:
    """One bank's derived index in this process. Guarded by ``lock``."""

    __slots__ = (
        "applied",
        "bank_id",
        "graph_unsaved",
        "index",
        "lock",
        "name",
        "snap_seq",
        "snap_unusable",
    )

    def __init__(self, name: str) -> None:
        self.name = name
        self.lock = threading.Lock()
        self.bank_id = 0
        self.index: BankIndex | None = None
        self.applied = 0  # the bank's change sequence the index reflects
        self.snap_seq = 0  # the newest stored snapshot this process knows of
        self.graph_unsaved = False  # the index has an HNSW graph no stored snapshot has
        # The stored snapshot could not be loaded (another format, contract or tokenizer
        # version, another dim): the next snapshot replaces it, even of the same changes.
        self.snap_unusable = False

    def clear(self) -> None:
        self.index = None
        self.bank_id = 0
        self.applied = 0
        self.snap_seq = 0
        self.graph_unsaved = False
        self.snap_unusable = False


class Snapshotter:
    """A daemon thread that keeps banks' indexes in shape off the hot path: it builds the HNSW
    graph of a bank above the exact dense threshold (docs/dense.md), and writes snapshots of
    banks with many unsnapshotted changes or with a graph no snapshot has yet."""

    def __init__(self, build_graph: Callable[[str], None], snapshot: Callable[[str], None]) -> None:
        self._build_graph = build_graph
        self._snapshot = snapshot
        self._pending: list[str] = []
        self._cv = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        self._build: DenseGraphBuild | None = None  # the graph being built, cancelled by stop()

    def request(self, bank: str) -> None:
        with self._cv:
            if self._stop or bank in self._pending:
                return
            self._pending.append(bank)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="memwire-snapshot", daemon=True
                )
                self._thread.start()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._pending and not self._stop:
                    self._cv.wait()
                if self._stop:
                    return
                bank = self._pending.pop(0)
            self._build_graph(bank)
            self._snapshot(bank)

    def building(self, plan: DenseGraphBuild | None) -> bool:
        """Record the graph being built (None when done); False once stopping."""
        with self._cv:
            if self._stop and plan is not None:
                return False
            self._build = plan
            return True

    def stop(self) -> None:
        """Stop the thread, abandoning a graph build under way (nothing half-built is kept)."""
        with self._cv:
            self._stop = True
            if self._build is not None:
                self._build.cancel()
            self._cv.notify()
            thread = self._thread
        if thread is not None:
            thread.join()
