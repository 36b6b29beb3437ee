"""Re-encoding a bank in the store (:meth:`memwire.Memory.reembed`): progress that survives a
crash, vectors staged beside the live ones and swapped in by one transaction (docs/dense.md)."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Sequence

from memwire._dates import format_utc, now_utc
from memwire.errors import ConflictError, NotFoundError, StorageError
from memwire.store.protocol import (
    EXHAUSTED,
    MAX_ORDINAL,
    ReembedItem,
    ReembedState,
    Space,
    StagedVector,
    reembed_gone,
    reembed_moved,
)
from memwire.store.sqlite.base import SQLiteBase
from memwire.store.sqlite.snapshots import drop_snapshot

__all__ = ["ReembedTables"]

log = logging.getLogger("memwire.store")


class ReembedTables(SQLiteBase):
    """The ``reembeds`` and ``staged_vectors`` tables."""

    def reembed_state(self, bank: str) -> ReembedState | None:
        found = self._query(
            lambda conn: conn.execute(
                "SELECT r.bank_id, r.embedder, r.dim, r.done_through FROM reembeds r "
                "JOIN banks b ON b.id = r.bank_id WHERE b.name = ?",
                (bank,),
            ).fetchone(),
            "read",
        )
        if found is None:
            return None
        return ReembedState(found[0], Space(found[1], found[2]), found[3])

    def start_reembed(self, bank: str, space: Space) -> ReembedState:
        """Resume the bank's unfinished reembed into ``space``, or start one (discarding an
        unfinished one into another space)."""

        def tx(conn: sqlite3.Connection) -> ReembedState:
            found = self._bank_row(conn, bank)
            if found is None:
                raise NotFoundError(f"no bank {bank!r}")
            bank_id = found[0]
            current = conn.execute(
                "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = ?", (bank_id,)
            ).fetchone()
            if current is not None and (current[0], current[1]) == tuple(space):
                return ReembedState(bank_id, Space(*space), current[2])
            if current is not None:
                log.info(
                    "bank %r: discarding an unfinished reembed into %r for one into %r",
                    bank,
                    current[0],
                    space[0],
                )
            conn.execute("DELETE FROM staged_vectors WHERE bank_id = ?", (bank_id,))
            conn.execute(
                "INSERT OR REPLACE INTO reembeds (bank_id, embedder, dim, done_through, "
                "started_at) VALUES (?, ?, ?, 0, ?)",
                (bank_id, space[0], space[1], format_utc(now_utc())),
            )
            return ReembedState(bank_id, Space(*space), 0)

        return self._write(tx, "reembed")

    def reembed_page(self, bank_id: int, after: int, limit: int) -> list[ReembedItem]:
        rows = self._query(
            lambda conn: conn.execute(
                "SELECT ordinal, content, context FROM memories WHERE bank_id = ? AND ordinal > ? "
                "ORDER BY ordinal LIMIT ?",
                (bank_id, after, limit),
            ).fetchall(),
            "reembed",
        )
        return [ReembedItem(r[0], r[1], r[2]) for r in rows]

    @staticmethod
    def _check_reembed(conn: sqlite3.Connection, bank_id: int, space: Space) -> int:
        """The reembed's ``done_through``; raises unless it is still the one into ``space``."""
        current = conn.execute(
            "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = ?", (bank_id,)
        ).fetchone()
        if current is None:
            if conn.execute("SELECT 1 FROM banks WHERE id = ?", (bank_id,)).fetchone() is None:
                raise NotFoundError(reembed_gone(bank_exists=False))
            raise ConflictError(reembed_gone(bank_exists=True))
        if (current[0], current[1]) != tuple(space):
            raise ConflictError(reembed_moved(current[0]))
        return int(current[2])

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[StagedVector], through: int
    ) -> None:
        """Stage one batch of re-encoded vectors and advance the reembed's progress to
        ``through``, in one transaction."""

        def tx(conn: sqlite3.Connection) -> None:
            self._check_reembed(conn, bank_id, space)
            conn.executemany(
                "INSERT OR REPLACE INTO staged_vectors (bank_id, ordinal, vector) VALUES (?, ?, ?)",
                [(bank_id, v.ordinal, v.vector) for v in vectors],
            )
            conn.execute(
                "UPDATE reembeds SET done_through = MAX(done_through, ?) WHERE bank_id = ?",
                (through, bank_id),
            )

        self._write(tx, "reembed")

    def finish_reembed(self, bank_id: int, space: Space) -> int | None:
        """Swap the staged vectors in and record ``space`` as the bank's, in one transaction;
        None (nothing changed) when memories were added after the staged ones.

        The swap advances ``last_seq`` by one change that adds nothing and prunes the change
        log up to it (and drops the bank's snapshot), so every index holding old vectors sees a
        gap at its next replay and reloads from the rows."""

        def tx(conn: sqlite3.Connection) -> int | None:
            done_through = self._check_reembed(conn, bank_id, space)
            if conn.execute(
                "SELECT 1 FROM memories WHERE bank_id = ? AND ordinal > ? LIMIT 1",
                (bank_id, done_through),
            ).fetchone():
                return None
            conn.execute(
                "UPDATE memories SET vector = (SELECT s.vector FROM staged_vectors s "
                "WHERE s.bank_id = memories.bank_id AND s.ordinal = memories.ordinal) "
                "WHERE bank_id = ?",
                (bank_id,),
            )
            (last_seq,) = conn.execute(
                "SELECT last_seq FROM banks WHERE id = ?", (bank_id,)
            ).fetchone()
            seq = last_seq + 1
            if seq > MAX_ORDINAL:
                raise StorageError(EXHAUSTED)
            conn.execute(
                "UPDATE banks SET embedder = ?, dim = ?, last_seq = ?, pruned_seq = ? WHERE id = ?",
                (space[0], space[1], seq, seq, bank_id),
            )
            for table in ("staged_vectors", "reembeds", "removals"):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = ?", (bank_id,))
            drop_snapshot(conn, bank_id)
            # The archive's vectors are of the old space: a restore takes one encoded anew.
            conn.execute("UPDATE archive SET vector = NULL WHERE bank_id = ?", (bank_id,))
            return int(seq)

        return self._write(tx, "reembed")

    def count_rows(self, bank_id: int, after: int = 0) -> int:
        found = self._query(
            lambda conn: conn.execute(
                "SELECT COUNT(*) FROM memories WHERE bank_id = ? AND ordinal > ?",
                (bank_id, after),
            ).fetchone(),
            "read",
        )
        return int(found[0])
