"""A bank's derived index in this process (docs/storage.md); the background thread that keeps
it in shape is in :mod:`memwire.memory.background`."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwire._kernel.contract import BankIndex

__all__ = ["BankState", "fit_vectors", "is_lookup"]


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
