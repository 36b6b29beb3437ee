"""The archive table (the protocol's "History") as both SQL stores keep it: superseded and
trashed memories, with the columns of ``memories`` (the vector too, so a restore needs no
encoder) plus ``status``, ``superseded_by`` and ``archived_at``. The statements here are the
same in SQLite and PostgreSQL but for the placeholder (``mark``: ``?`` or ``%s``), and run
inside the caller's transaction; rows come back through the store's own ``to_row`` (the two
stores keep text differently)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from memwire.errors import StorageError
from memwire.store.history import walk_chain
from memwire.store.protocol import (
    EXHAUSTED,
    LIVE,
    MAX_ORDINAL,
    TRASHED,
    ArchivedMemory,
    Row,
    Space,
)

__all__ = [
    "ARCHIVE_TABLE",
    "any_row",
    "archive_live",
    "archive_page",
    "expired_trash",
    "history",
    "insert_archived",
    "restore_clash",
    "restore_row",
    "trash_page",
    "unlink",
    "versions_at",
]

# The column types are the store's own: {text} text, {blob} binary, {int} a bank id/ordinal.
ARCHIVE_TABLE = """
CREATE TABLE IF NOT EXISTS archive (
    id            {text} PRIMARY KEY,
    bank_id       {int} NOT NULL,
    ordinal       {int} NOT NULL,
    content       {content} NOT NULL,
    context       {content},
    tags          TEXT NOT NULL DEFAULT '[]',
    created_at    {text} NOT NULL,
    retained_at   {text} NOT NULL,
    document_id   {text},
    content_hash  {blob} NOT NULL,
    vector        {blob},
    status        {text} NOT NULL,
    superseded_by {text},
    archived_at   {text} NOT NULL
);
CREATE INDEX IF NOT EXISTS archive_successor ON archive (superseded_by);
CREATE INDEX IF NOT EXISTS archive_bank ON archive (bank_id, status, archived_at)
"""

_COPIED = (
    "id, bank_id, ordinal, content, context, tags, created_at, retained_at, document_id, "
    "content_hash, vector"
)
_ROW = (
    "m.id, b.name, m.ordinal, m.content, m.context, m.tags, m.created_at, m.retained_at, "
    "m.document_id"
)
_LIVE_ROW = f"{_ROW}, '{LIVE}', NULL, NULL"
_ARCHIVED_ROW = f"{_ROW}, m.status, m.superseded_by, m.archived_at"


class _Connection(Protocol):
    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


ToRow = Callable[[Sequence[Any]], Row]


def archive_live(
    conn: _Connection,
    mark: str,
    bank_id: int,
    ordinal: int,
    status: str,
    superseded_by: str | None,
    at: str,
) -> None:
    """Copy the live memory at ``ordinal`` into the archive (the caller then deletes it)."""
    conn.execute(
        f"INSERT INTO archive ({_COPIED}, status, superseded_by, archived_at) "
        f"SELECT {_COPIED}, {mark}, {mark}, {mark} FROM memories "
        f"WHERE bank_id = {mark} AND ordinal = {mark}",
        (status, superseded_by, at, bank_id, ordinal),
    )


def any_row(conn: _Connection, mark: str, memory_id: str, to_row: ToRow) -> Row | None:
    """The memory ``memory_id``, live or archived."""
    found = conn.execute(
        f"SELECT {_LIVE_ROW} FROM memories m JOIN banks b ON b.id = m.bank_id "
        f"WHERE m.id = {mark} UNION ALL "
        f"SELECT {_ARCHIVED_ROW} FROM archive m JOIN banks b ON b.id = m.bank_id "
        f"WHERE m.id = {mark}",
        (memory_id, memory_id),
    ).fetchone()
    return None if found is None else to_row(found)


def history(conn: _Connection, mark: str, memory_id: str, to_row: ToRow) -> list[Row]:
    """The chain ``memory_id`` belongs to (:func:`memwire.store.history.walk_chain`)."""

    def predecessors(ids: Sequence[str]) -> list[Row]:
        marks = ",".join([mark] * len(ids))
        rows = conn.execute(
            f"SELECT {_ARCHIVED_ROW} FROM archive m JOIN banks b ON b.id = m.bank_id "
            f"WHERE m.superseded_by IN ({marks})",
            tuple(ids),
        ).fetchall()
        return [to_row(r) for r in rows]

    return walk_chain(
        any_row(conn, mark, memory_id, to_row),
        lambda i: any_row(conn, mark, i, to_row),
        predecessors,
    )


def archive_page(
    conn: _Connection, mark: str, bank_id: int, after: int, limit: int, to_row: ToRow
) -> list[tuple[Row, Any]]:
    """The bank's archived rows with ordinals above ``after``, by ordinal, with their vectors
    (as the driver returns them)."""
    rows = conn.execute(
        f"SELECT {_ARCHIVED_ROW}, m.vector FROM archive m JOIN banks b ON b.id = m.bank_id "
        f"WHERE m.bank_id = {mark} AND m.ordinal > {mark} ORDER BY m.ordinal LIMIT {mark}",
        (bank_id, after, limit),
    ).fetchall()
    return [(to_row(r[:12]), r[12]) for r in rows]


def insert_archived(
    conn: _Connection,
    mark: str,
    bank_id: int,
    seq: int,
    items: Sequence[tuple[ArchivedMemory, Any, Any]],
) -> tuple[list[str], int]:
    """Insert ``items`` (each with its content and context as the store keeps text) that are
    in neither table, ordinals from ``seq + 1``; the ids inserted and the last seq taken."""
    added: list[str] = []
    for item, content, context in items:
        memory = item.memory
        taken = conn.execute(
            f"SELECT 1 FROM memories WHERE id = {mark} UNION ALL "
            f"SELECT 1 FROM archive WHERE id = {mark}",
            (memory.id, memory.id),
        ).fetchone()
        if taken is not None:
            continue
        seq += 1
        if seq > MAX_ORDINAL:
            raise StorageError(EXHAUSTED)
        marks = ", ".join([mark] * 14)
        conn.execute(
            f"INSERT INTO archive ({_COPIED}, status, superseded_by, archived_at) VALUES ({marks})",
            (
                memory.id,
                bank_id,
                seq,
                content,
                context,
                json.dumps(list(memory.tags), ensure_ascii=False),
                memory.created_at,
                memory.retained_at,
                memory.document_id,
                memory.content_hash,
                memory.vector,
                item.status,
                item.superseded_by,
                item.archived_at,
            ),
        )
        added.append(memory.id)
    return added, seq


def unlink(conn: _Connection, mark: str, memory_id: str, successor: str | None) -> None:
    """Delete ``memory_id`` from the archive; what it superseded is superseded by
    ``successor`` instead."""
    conn.execute(f"DELETE FROM archive WHERE id = {mark}", (memory_id,))
    conn.execute(
        f"UPDATE archive SET superseded_by = {mark} WHERE superseded_by = {mark}",
        (successor, memory_id),
    )


def expired_trash(
    conn: _Connection, mark: str, bank_id: int, before: str | None
) -> list[tuple[str, str | None]]:
    """``(id, superseded_by)`` of the bank's trashed memories (archived before ``before``)."""
    where = f"bank_id = {mark} AND status = {mark}"
    params: tuple[Any, ...] = (bank_id, TRASHED)
    if before is not None:
        where += f" AND archived_at < {mark}"
        params += (before,)
    rows = conn.execute(
        f"SELECT id, superseded_by FROM archive WHERE {where} ORDER BY archived_at, id", params
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def trash_page(
    conn: _Connection, mark: str, bank: str, limit: int, offset: int, to_row: ToRow
) -> list[Row]:
    rows = conn.execute(
        f"SELECT {_ARCHIVED_ROW} FROM archive m JOIN banks b ON b.id = m.bank_id "
        f"WHERE b.name = {mark} AND m.status = {mark} "
        f"ORDER BY m.archived_at DESC, m.id DESC LIMIT {mark} OFFSET {mark}",
        (bank, TRASHED, limit, offset),
    ).fetchall()
    return [to_row(r) for r in rows]


def versions_at(
    conn: _Connection, mark: str, bank_id: int, at: str, to_row: ToRow
) -> list[tuple[Row, Any]]:
    """The rows live at ``at`` with their vectors (as the driver returns them), by ordinal."""
    rows = conn.execute(
        f"SELECT {_LIVE_ROW}, m.vector FROM memories m JOIN banks b ON b.id = m.bank_id "
        f"WHERE m.bank_id = {mark} AND m.retained_at <= {mark} UNION ALL "
        f"SELECT {_ARCHIVED_ROW}, m.vector FROM archive m JOIN banks b ON b.id = m.bank_id "
        f"WHERE m.bank_id = {mark} AND m.retained_at <= {mark} AND m.archived_at > {mark} "
        "ORDER BY 3",
        (bank_id, at, bank_id, at, at),
    ).fetchall()
    return [(to_row(r[:12]), r[12]) for r in rows]


def restore_row(
    conn: _Connection, mark: str, memory_id: str, bank_id: int, ordinal: int
) -> tuple[Any, Any, Any, str]:
    """Move a trashed memory back into ``memories`` at ``ordinal`` (the caller checked that
    nothing live clashes with it and logs the addition); its ``(content, context, vector,
    tags_json)``."""
    conn.execute(
        f"INSERT INTO memories ({_COPIED}) SELECT id, bank_id, {mark}, content, context, tags, "
        "created_at, retained_at, document_id, content_hash, vector FROM archive "
        f"WHERE id = {mark} AND bank_id = {mark}",
        (ordinal, memory_id, bank_id),
    )
    found = conn.execute(
        f"SELECT content, context, vector, tags FROM memories WHERE id = {mark}", (memory_id,)
    ).fetchone()
    conn.execute(f"DELETE FROM archive WHERE id = {mark}", (memory_id,))
    return found[0], found[1], found[2], found[3]


def fill_vector(
    conn: _Connection,
    mark: str,
    memory_id: str,
    bank_id: int,
    vector: bytes | None,
    space: Space | None,
) -> bytes | None:
    """A restored memory without a vector takes ``vector`` when ``space`` is the bank's
    recorded space (Store.restore); the vector it now has, if any."""
    if vector is None or space is None:
        return None
    recorded = conn.execute(f"SELECT embedder, dim FROM banks WHERE id = {mark}", (bank_id,))
    found = recorded.fetchone()
    if found is None or (found[0], found[1]) != (space.embedder, space.dim):
        return None
    conn.execute(f"UPDATE memories SET vector = {mark} WHERE id = {mark}", (vector, memory_id))
    return vector


def restore_clash(conn: _Connection, mark: str, memory_id: str) -> str | None:
    """The id of the live memory that the archived ``memory_id`` cannot be live beside: its
    document's, or (without a document id) one of the same content."""
    found = conn.execute(
        "SELECT m.id FROM archive a JOIN memories m ON m.bank_id = a.bank_id AND ("
        "(a.document_id IS NOT NULL AND m.document_id = a.document_id) OR "
        "(a.document_id IS NULL AND m.document_id IS NULL AND m.content_hash = a.content_hash)"
        f") WHERE a.id = {mark}",
        (memory_id,),
    ).fetchone()
    return None if found is None else str(found[0])
