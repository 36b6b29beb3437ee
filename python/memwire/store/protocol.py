"""The source-of-truth protocol: rows in, rows out, and a per-bank change sequence to replay.

Everything above this module (``memwire.memory``) talks to a :class:`Store` and never to SQL.
SQLite (:mod:`memwire.store.sqlite`) is the embedded default; a networked store implements the
same protocol.

The change sequence: each bank has a counter ``last_seq`` that every write advances. A memory's
``ordinal`` (its key in the kernel index) is the sequence number of the change that added it,
so ordinals are monotonic per bank and never reused. Removals (forget, replace, TTL) are logged
with their own sequence numbers. Replaying ``changes_since(seq)`` onto an index that reflects
exactly the changes up to ``seq`` yields an index of the live rows at ``last_seq``: removals can
be applied before additions because an ordinal is never added twice.

Vectors (the dense stream, docs/dense.md): a memory may carry one canonical int16 vector of its
bank's embedder space. A bank records that space (embedder id and dimension) with its first
vector and refuses vectors of any other; :meth:`Store.finish_reembed` is the only way to move a
bank to another space, and it advances the change sequence past a pruned point so that every
index built from the old vectors notices the gap and reloads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Added",
    "BankHead",
    "Changes",
    "NewMemory",
    "ReembedState",
    "Row",
    "Snapshot",
    "Space",
    "Store",
    "WriteResult",
    "space_mismatch",
]

# (ordinal, content, context, vector) of a memory to add to an index; vector: int16 LE or None.
Added = tuple[int, str, "str | None", "bytes | None"]
# An embedder space: (embedder id, dimension).
Space = tuple[str, int]


@dataclass(frozen=True)
class NewMemory:
    """One validated, redacted, normalised memory to write."""

    id: str
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: str
    retained_at: str
    document_id: str | None
    update_mode: str  # "replace" or "append"
    content_hash: bytes
    vector: bytes | None = None  # canonical int16 LE, in the space given to Store.write


@dataclass(frozen=True)
class Row:
    id: str
    bank: str
    ordinal: int
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: str
    retained_at: str
    document_id: str | None


@dataclass(frozen=True)
class WriteResult:
    """What one committed write transaction changed in one bank."""

    bank: str
    bank_id: int
    ids: list[str]
    added: list[Added]
    removed: list[int]
    first_seq: int  # the bank's last_seq before the write
    last_seq: int  # and after it
    dim: int | None = None  # the bank's vector dimension after a retain (None: unchanged)


@dataclass(frozen=True)
class BankHead:
    bank_id: int
    last_seq: int
    config: dict[str, Any]
    embedder: str | None = None  # the recorded embedder space, None until the first vector
    dim: int = 0


@dataclass(frozen=True)
class Changes:
    """What to apply to an index at ``since`` to bring it to ``last_seq``.

    ``gap`` is true when removals older than the request were pruned: the caller must rebuild
    (ask again with ``since=0`` into a fresh index).
    """

    last_seq: int
    added: list[Added]
    removed: list[int]
    gap: bool


@dataclass(frozen=True)
class Snapshot:
    seq: int
    data: bytes


@dataclass(frozen=True)
class ReembedState:
    """An unfinished re-encoding of a bank into ``space``: every live memory with an ordinal
    up to ``done_through`` has a staged vector of that space."""

    space: Space
    done_through: int


@runtime_checkable
class Store(Protocol):
    @property
    def durable(self) -> bool:
        """Whether what is written outlives the process (False for ``:memory:``): index
        snapshots are written only to durable stores."""
        ...

    def close(self) -> None: ...

    # -- banks -------------------------------------------------------------------------------
    def head(self, bank: str) -> BankHead | None: ...

    def bank_names(self) -> list[str]: ...

    def delete_bank(self, bank: str) -> bool: ...

    def get_config(self, bank: str) -> dict[str, Any] | None: ...

    def update_config(
        self, bank: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]: ...

    # -- writes ------------------------------------------------------------------------------
    def write(
        self,
        bank: str,
        items: Sequence[NewMemory],
        config_tags: Callable[[Mapping[str, Any]], list[str]] | None = None,
        imported: bool = False,
        space: Space | None = None,
    ) -> WriteResult: ...

    def forget(self, memory_id: str, bank: str | None) -> WriteResult | None: ...

    def expire(
        self, bank: str, cutoff: str, dry_run: bool
    ) -> tuple[list[str], WriteResult | None]: ...

    # -- reads -------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Row | None: ...

    def rows_by_ordinal(self, bank_id: int, ordinals: Sequence[int]) -> dict[int, Row]: ...

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]: ...

    def iter_rows(self, bank: str) -> Iterator[Row]: ...

    def stats(self, bank: str) -> dict[str, Any] | None: ...

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
        cutoff: str | None,
    ) -> list[int] | None: ...

    # -- index support -----------------------------------------------------------------------
    def changes_since(self, bank_id: int, since: int) -> Changes | None: ...

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None: ...

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool: ...

    # -- re-encoding (Memory.reembed) --------------------------------------------------------
    def reembed_state(self, bank: str) -> ReembedState | None: ...

    def start_reembed(self, bank: str, space: Space) -> tuple[int, ReembedState]: ...

    def reembed_page(
        self, bank_id: int, after: int, limit: int
    ) -> list[tuple[int, str, str | None]]: ...

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[tuple[int, bytes | None]], through: int
    ) -> bool: ...

    def finish_reembed(self, bank_id: int, space: Space) -> int | None: ...

    def count_rows(self, bank_id: int, after: int = 0) -> int: ...


def space_mismatch(bank: str, recorded: Space, offered: Space) -> str:
    """The message of a bank refusing another embedder space."""
    return (
        f"bank {bank!r} holds vectors of embedder {recorded[0]!r} (dim {recorded[1]}), not "
        f"{offered[0]!r} (dim {offered[1]}); open it with that embedder, set its config "
        f"'embedder' to 'none', or re-encode it with Memory.reembed"
    )
