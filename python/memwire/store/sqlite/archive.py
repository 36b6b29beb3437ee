"""History and trash in the SQLite store (the protocol's "History"): the ``archive`` table's
reads and the changes that take memories out of it (restore, empty_trash, purge), and
:meth:`ArchiveTables.vacuum`. Archiving itself happens in the writes that supersede or trash
(:mod:`memwire.store.sqlite.store`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from memwire.errors import ConflictError, NotFoundError, StorageError
from memwire.store import archive_sql
from memwire.store.history import restore_conflict
from memwire.store.protocol import (
    EXHAUSTED,
    LIVE,
    MAX_ORDINAL,
    TRASHED,
    Additions,
    Row,
    Space,
    Version,
    WriteResult,
)
from memwire.store.sqlite.base import SQLiteBase, log
from memwire.store.sqlite.snapshots import drop_snapshot

__all__ = ["ROW_COLUMNS", "ArchiveTables", "delete_row", "to_row"]

ROW_COLUMNS = (
    "m.id, b.name, m.ordinal, m.content, m.context, m.tags, m.created_at, m.retained_at, "
    "m.document_id"
)


def to_row(values: Sequence[Any]) -> Row:
    """A row of :data:`ROW_COLUMNS`, optionally followed by status, superseded_by and
    archived_at."""
    return Row(
        id=values[0],
        bank=values[1],
        ordinal=values[2],
        content=values[3],
        context=values[4],
        tags=() if values[5] == "[]" else tuple(json.loads(values[5])),  # most have none
        created_at=values[6],
        retained_at=values[7],
        document_id=values[8],
        status=values[9] if len(values) > 9 else LIVE,
        superseded_by=values[10] if len(values) > 10 else None,
        archived_at=values[11] if len(values) > 11 else None,
    )


def delete_row(
    conn: sqlite3.Connection,
    bank_id: int,
    ordinal: int,
    tags_json: str,
    seq: int,
    archive: tuple[str, str | None, str] | None = None,
) -> None:
    """Remove the live memory at ``ordinal`` as change ``seq`` (a logged removal); with
    ``archive`` = ``(status, superseded_by, archived_at)``, into the archive."""
    if archive is not None:
        archive_sql.archive_live(conn, "?", bank_id, ordinal, *archive)
    conn.execute("DELETE FROM memories WHERE bank_id = ? AND ordinal = ?", (bank_id, ordinal))
    conn.executemany(
        "DELETE FROM memory_tags WHERE bank_id = ? AND tag = ? AND ordinal = ?",
        [(bank_id, tag, ordinal) for tag in json.loads(tags_json)],
    )
    conn.execute(
        "INSERT INTO removals (bank_id, seq, ordinal) VALUES (?, ?, ?)", (bank_id, seq, ordinal)
    )


class ArchiveTables(SQLiteBase):
    """The ``archive`` table: superseded and trashed memories."""

    def restore(
        self,
        memory_id: str,
        bank: str | None,
        *,
        vector: bytes | None = None,
        space: Space | None = None,
    ) -> WriteResult:
        def tx(conn: sqlite3.Connection) -> WriteResult:
            found = conn.execute(
                "SELECT a.bank_id, b.name, b.last_seq FROM archive a JOIN banks b "
                "ON b.id = a.bank_id WHERE a.id = ? AND a.status = ?",
                (memory_id, TRASHED),
            ).fetchone()
            if found is None or (bank is not None and found[1] != bank):
                raise NotFoundError(f"no memory {memory_id!r} in the trash")
            bank_id, name, first_seq = found
            clash = archive_sql.restore_clash(conn, "?", memory_id)
            if clash is not None:
                raise ConflictError(restore_conflict(memory_id, clash))
            seq = first_seq + 1
            if seq > MAX_ORDINAL:
                raise StorageError(EXHAUSTED)
            content, context, kept, tags = archive_sql.restore_row(
                conn, "?", memory_id, bank_id, seq
            )
            if kept is None:
                kept = archive_sql.fill_vector(conn, "?", memory_id, bank_id, vector, space)
            conn.executemany(
                "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)",
                [(bank_id, tag, seq) for tag in json.loads(tags)],
            )
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
            added = Additions.from_rows([(seq, content, context, kept)])
            return WriteResult(name, bank_id, [memory_id], added, [], first_seq, seq)

        return self._write(tx, "restore")

    def empty_trash(self, bank: str, before: str | None) -> list[str]:
        def tx(conn: sqlite3.Connection) -> list[str]:
            found = self._bank_row(conn, bank)
            if found is None:
                return []
            gone = archive_sql.expired_trash(conn, "?", found[0], before)
            for memory_id, successor in gone:
                archive_sql.unlink(conn, "?", memory_id, successor)
            return [g[0] for g in gone]

        return self._write(tx, "empty trash")

    def purge(self, memory_id: str, bank: str | None) -> WriteResult | None:
        def tx(conn: sqlite3.Connection) -> WriteResult | None:
            row = archive_sql.any_row(conn, "?", memory_id, to_row)
            if row is None or (bank is not None and row.bank != bank):
                return None
            bank_id, seq, _ = self._bank_row(conn, row.bank) or (0, 0, "")
            first_seq, removed = seq, []
            if row.status == LIVE:
                seq += 1
                delete_row(conn, bank_id, row.ordinal, json.dumps(row.tags), seq)
                removed.append(row.ordinal)
            archive_sql.unlink(conn, "?", memory_id, row.superseded_by)
            # A gap every index must pass: they rebuild from the rows, so the purged text's
            # terms leave their vocabularies (and the snapshot holding them goes now).
            seq += 1
            conn.execute(
                "UPDATE banks SET last_seq = ?, pruned_seq = ? WHERE id = ?", (seq, seq, bank_id)
            )
            conn.execute("DELETE FROM removals WHERE bank_id = ?", (bank_id,))
            drop_snapshot(conn, bank_id)
            return WriteResult(
                row.bank, bank_id, [memory_id], Additions.from_rows([]), removed, first_seq, seq
            )

        return self._write(tx, "purge")

    def history(self, memory_id: str) -> list[Row]:
        return self._read(lambda conn: archive_sql.history(conn, "?", memory_id, to_row), "read")

    def trash_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        return self._read(
            lambda conn: archive_sql.trash_page(conn, "?", bank, limit, offset, to_row), "read"
        )

    def versions_at(self, bank_id: int, at: str) -> list[Version]:
        found = self._read(
            lambda conn: archive_sql.versions_at(conn, "?", bank_id, at, to_row), "recall"
        )
        return [Version(row, vector) for row, vector in found]

    def vacuum(self) -> None:
        """Checkpoint, VACUUM (a copy of the live pages: deleted rows' bytes stay behind),
        then truncate the WAL, which holds the old pages until then. Idle readers are closed
        first: a reader holding the WAL would keep the truncate from finishing."""
        with self._pool_lock:
            idle, self._idle = self._idle, []
        for reader in idle:
            try:
                reader.close()
            except sqlite3.Error as exc:
                log.debug("close failed: %s", exc)

        def run(conn: sqlite3.Connection) -> None:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            conn.execute("VACUUM")
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            if busy is not None and busy[0]:
                raise sqlite3.OperationalError("database is locked")  # retried

        self._retry(run, "vacuum")
