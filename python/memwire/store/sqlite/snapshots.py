"""Index snapshots in the store: read and written through incremental blob I/O, so a snapshot
as big as the index is never held twice while one part holds it (docs/storage.md,
"Snapshots").

SQLite holds at most ~1 GB (``SQLITE_MAX_LENGTH``) in one value, and a 1M-memory bank's
snapshot with its vectors and graph is more: its first :data:`SNAPSHOT_PART` bytes go in
``snapshots.data`` and the rest in ``snapshot_parts`` rows, ``part`` 1, 2, ... in order."""

from __future__ import annotations

import os
import shutil
import sqlite3

from memwire._dates import format_utc, now_utc
from memwire.errors import StorageFullError
from memwire.store.protocol import Snapshot
from memwire.store.sqlite.base import SQLiteBase, write_blob

# Free space a snapshot leaves on the disk beyond its own two copies (see _check_room).
SNAPSHOT_HEADROOM = 4 * 1024 * 1024
# Bytes per stored value of a snapshot: well under SQLite's 1,000,000,000-byte default limit.
SNAPSHOT_PART = 256 << 20

__all__ = ["SNAPSHOT_PART", "SnapshotTables", "drop_snapshot"]


def drop_snapshot(conn: sqlite3.Connection, bank_id: int) -> None:
    """Delete bank ``bank_id``'s snapshot with all its parts (inside the caller's transaction)."""
    conn.execute("DELETE FROM snapshots WHERE bank_id = ?", (bank_id,))
    conn.execute("DELETE FROM snapshot_parts WHERE bank_id = ?", (bank_id,))


class SnapshotTables(SQLiteBase):
    """The ``snapshots`` table, and the pruning of the removal log a snapshot allows."""

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None:
        """The bank's snapshot if its shell format is ``shell``, read once: straight into the
        returned bytes when it is one part (it can be as big as the index it holds), else into
        one bytearray of the whole, a chunk at a time (joining the parts held it twice and
        cost a second of copying at 1 GB)."""

        def read(conn: sqlite3.Connection) -> Snapshot | None:
            found = conn.execute(
                "SELECT seq FROM snapshots WHERE bank_id = ? AND shell = ?", (bank_id, shell)
            ).fetchone()
            if found is None:
                return None
            parts = conn.execute(
                "SELECT rowid, length(data) FROM snapshot_parts WHERE bank_id = ? ORDER BY part",
                (bank_id,),
            ).fetchall()
            # bank_id is the snapshots row's rowid.
            if not parts:
                return Snapshot(found[0], _read_value(conn, "snapshots", bank_id))
            (head,) = conn.execute(
                "SELECT length(data) FROM snapshots WHERE rowid = ?", (bank_id,)
            ).fetchone()
            whole = bytearray(head + sum(size for _, size in parts))
            at = _read_into(conn, "snapshots", bank_id, whole, 0)
            for rowid, _size in parts:
                at = _read_into(conn, "snapshot_parts", rowid, whole, at)
            if at != len(whole):
                raise sqlite3.DatabaseError("snapshot parts changed while read")
            return Snapshot(found[0], whole)

        return self._read(read, "load snapshot")

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool:
        """Store a snapshot covering changes up to ``seq`` unless a newer one is stored (or
        one of the same ``seq``, unless ``replace_same``: a snapshot that adds the HNSW graph),
        then prune the removal log it makes unnecessary. Returns whether it was stored."""

        self._check_room(len(data))

        def tx(conn: sqlite3.Connection) -> bool:
            current = conn.execute(
                "SELECT seq, shell FROM snapshots WHERE bank_id = ?", (bank_id,)
            ).fetchone()
            if (
                current is not None
                and current[1] == shell
                and (current[0] > seq or (current[0] == seq and not replace_same))
            ):
                return False
            bank_row = conn.execute(
                "SELECT pruned_seq FROM banks WHERE id = ?", (bank_id,)
            ).fetchone()
            if bank_row is None:
                return False  # the bank was deleted meanwhile
            if seq < bank_row[0]:
                return False  # older than a point every index must pass (e.g. a reembed)
            view = memoryview(data)
            write_blob(
                conn,
                "INSERT OR REPLACE INTO snapshots (bank_id, seq, shell, created_at, data) "
                "VALUES (?, ?, ?, ?, {})",
                (bank_id, seq, shell, format_utc(now_utc())),
                view[:SNAPSHOT_PART],
                ("snapshots", "data", bank_id),
            )
            conn.execute("DELETE FROM snapshot_parts WHERE bank_id = ?", (bank_id,))
            for part, start in enumerate(range(SNAPSHOT_PART, len(view), SNAPSHOT_PART), 1):
                write_blob(
                    conn,
                    "INSERT INTO snapshot_parts (bank_id, part, data) VALUES (?, ?, {})",
                    (bank_id, part),
                    view[start : start + SNAPSHOT_PART],
                    ("snapshot_parts", "data", None),
                )
            conn.execute("DELETE FROM removals WHERE bank_id = ? AND seq <= ?", (bank_id, seq))
            conn.execute(
                "UPDATE banks SET pruned_seq = MAX(pruned_seq, ?) WHERE id = ?", (seq, bank_id)
            )
            return True

        return self._write(tx, "save snapshot")

    def _check_room(self, size: int) -> None:
        """Refuse a snapshot the disk has no room for before writing any of it: it lands in the
        WAL first and in the database at the checkpoint (two copies), and a write that fails
        midway grows a WAL nothing can shrink while the disk is full, so memories could no
        longer be retained. A snapshot is derived data: skipping it loses nothing."""
        if self.ephemeral:
            return
        try:
            free = shutil.disk_usage(os.path.dirname(os.path.abspath(self._path))).free
        except OSError:
            return  # cannot tell: let SQLite try
        if free < 2 * size + SNAPSHOT_HEADROOM:
            raise StorageFullError(
                "the disk holding the store has no room for an index snapshot "
                f"({size / 2**20:.1f} MiB, twice over); memories are still stored"
            )


#: Bytes per read of a snapshot part into the whole (the read's own copy stays in cache).
READ_CHUNK = 16 << 20


def _read_into(conn: sqlite3.Connection, table: str, rowid: int, whole: bytearray, at: int) -> int:
    """Copy ``table``'s ``data`` of row ``rowid`` into ``whole`` from offset ``at``; the offset
    after it."""
    view = memoryview(whole)
    with conn.blobopen(table, "data", rowid, readonly=True) as blob:
        while chunk := blob.read(READ_CHUNK):
            if at + len(chunk) > len(whole):
                raise sqlite3.DatabaseError("snapshot parts changed while read")
            view[at : at + len(chunk)] = chunk
            at += len(chunk)
    return at


def _read_value(conn: sqlite3.Connection, table: str, rowid: int) -> bytes:
    """The ``data`` of ``table``'s row ``rowid``, read once straight into the returned bytes
    (a plain SELECT would hold it twice at once: SQLite's copy, then Python's)."""
    with conn.blobopen(table, "data", rowid, readonly=True) as blob:
        return blob.read()
