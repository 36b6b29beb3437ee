"""What the Memory API returns: :class:`Hit` (a recall result) and :class:`Record` (a memory)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = ["Hit", "Record"]


@dataclass(frozen=True)
class Hit:
    """One memory returned by :meth:`memwire.Memory.recall`, best first.

    ``score`` is the fused score, in [0, 1] and comparable across queries and banks: the
    ``fusion_weights``-weighted mean of the memory's BM25 share of the query's IDF, the share
    of query terms it contains and its cosine (docs/dense.md, "Score fusion"); ``bm25_rank``,
    ``overlap_rank`` and ``dense_rank`` are the 1-based ranks in each stream that produced it
    (0: absent). When the
    token budget is short, the top hit's ``content`` is truncated (it ends with
    ``…[truncated]``), never dropped.
    """

    id: str
    content: str
    score: float
    created_at: datetime
    tags: tuple[str, ...]
    context: str | None
    bm25_rank: int
    overlap_rank: int
    dense_rank: int


@dataclass(frozen=True)
class Record:
    """One stored memory, as :meth:`memwire.Memory.get` and :meth:`~memwire.Memory.memories`
    return it. ``status`` is ``"live"``, ``"superseded"`` (``superseded_by`` names the memory
    that replaced it) or ``"trashed"``; ``archived_at`` is when it stopped being live."""

    id: str
    bank: str
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: datetime
    retained_at: datetime
    document_id: str | None
    status: str = "live"
    superseded_by: str | None = None
    archived_at: datetime | None = None
