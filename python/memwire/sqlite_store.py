"""The embedded store: one SQLite file (WAL) holding every bank. See docs/storage.md.

Concurrency: one connection per :class:`SQLiteStore`, guarded by a lock (thread-safe); across
processes, WAL lets readers run beside one writer, every write is a ``BEGIN IMMEDIATE``
transaction, the busy timeout absorbs ordinary contention and a bounded retry with jittered
backoff absorbs the rest, so ``database is locked`` never reaches a caller under normal load.

Errors: every :class:`sqlite3.Error` becomes an opaque :class:`~memwire.errors.StorageError`;
the detail (which may contain SQL or paths) goes to the ``memwire.store`` logger at debug level.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from memwire._dates import format_utc, now_utc
from memwire.errors import InvalidInputError, MemwireError, NotFoundError, StorageError
from memwire.store import (
    Added,
    BankHead,
    Changes,
    NewMemory,
    ReembedState,
    Row,
    Snapshot,
    Space,
    WriteResult,
)

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger("memwire.store")

SCHEMA_VERSION = 2
MAX_ORDINAL = 2**32 - 1
BUSY_TIMEOUT_S = 10.0
RETRY_DEADLINE_S = 120.0
_CHUNK = 500  # bound parameters per IN (...) query

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS banks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    pruned_seq INTEGER NOT NULL DEFAULT 0,
    config     TEXT NOT NULL DEFAULT '{}',
    embedder   TEXT,
    dim        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS memories (
    id           TEXT PRIMARY KEY,
    bank_id      INTEGER NOT NULL,
    ordinal      INTEGER NOT NULL,
    content      TEXT NOT NULL,
    context      TEXT,
    tags         TEXT NOT NULL DEFAULT '[]',
    created_at   TEXT NOT NULL,
    retained_at  TEXT NOT NULL,
    document_id  TEXT,
    content_hash BLOB NOT NULL,
    vector       BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_ordinal ON memories (bank_id, ordinal);
CREATE UNIQUE INDEX IF NOT EXISTS memories_dedupe
    ON memories (bank_id, content_hash) WHERE document_id IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS memories_document
    ON memories (bank_id, document_id) WHERE document_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_created ON memories (bank_id, created_at);
CREATE TABLE IF NOT EXISTS memory_tags (
    bank_id INTEGER NOT NULL,
    tag     TEXT NOT NULL,
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (bank_id, tag, ordinal)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS removals (
    bank_id INTEGER NOT NULL,
    seq     INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    PRIMARY KEY (bank_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS snapshots (
    bank_id    INTEGER PRIMARY KEY,
    seq        INTEGER NOT NULL,
    shell      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    data       BLOB NOT NULL
);
"""

# Version 2: an unfinished Memory.reembed per bank and the vectors it has staged so far.
_SCHEMA_2 = """
CREATE TABLE IF NOT EXISTS reembeds (
    bank_id      INTEGER PRIMARY KEY,
    embedder     TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    done_through INTEGER NOT NULL DEFAULT 0,
    started_at   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS staged_vectors (
    bank_id INTEGER NOT NULL,
    ordinal INTEGER NOT NULL,
    vector  BLOB,
    PRIMARY KEY (bank_id, ordinal)
) WITHOUT ROWID;
"""

_ROW_COLUMNS = (
    "m.id, b.name, m.ordinal, m.content, m.context, m.tags, m.created_at, m.retained_at, "
    "m.document_id"
)


def _row(values: Sequence[Any]) -> Row:
    return Row(
        id=values[0],
        bank=values[1],
        ordinal=values[2],
        content=values[3],
        context=values[4],
        tags=tuple(json.loads(values[5])),
        created_at=values[6],
        retained_at=values[7],
        document_id=values[8],
    )


BLOB_CHUNK = 4 << 20


def _write_blob(
    conn: sqlite3.Connection,
    sql: str,
    params: tuple[object, ...],
    data: bytes,
    where: tuple[str, str, int],
) -> None:
    """Run ``sql`` (whose ``{}`` stands for the blob) with ``data`` as its blob. Binding a big
    blob makes SQLite copy it twice (the bound value, then the record); writing a zeroblob
    and then the data in chunks through incremental I/O (Python 3.11+) copies it never."""
    if not hasattr(conn, "blobopen"):
        conn.execute(sql.format("?"), (*params, data))
        return
    conn.execute(sql.format("zeroblob(?)"), (*params, len(data)))
    table, column, rowid = where
    view = memoryview(data)
    with conn.blobopen(table, column, rowid) as blob:
        for start in range(0, len(view), BLOB_CHUNK):
            blob.write(view[start : start + BLOB_CHUNK])


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED
        return True
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Busy(Exception):
    """Internal: the database stayed busy past one attempt."""


class SQLiteStore:
    """The SQLite implementation of :class:`memwire.store.Store`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._lock = threading.RLock()
        self.ephemeral = str(path) == ":memory:"
        self._conn: sqlite3.Connection | None = None
        if not self.ephemeral:
            target = Path(path)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                log.debug("cannot create the store directory: %s", exc)
                raise StorageError("the store could not be opened") from None
        try:
            self._conn = sqlite3.connect(
                str(path),
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error as exc:
            log.debug("sqlite connect failed: %s", exc)
            raise StorageError("the store could not be opened") from None
        try:
            self._retry(self._setup, "open")
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    # -- plumbing ----------------------------------------------------------------------------

    def _setup(self, conn: sqlite3.Connection) -> None:
        if not self.ephemeral:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                log.debug("journal_mode is %s, not wal", mode)
            conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=OFF")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StorageError("the store was written by a newer memwire; upgrade memwire")
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                # 0: a new file; 1: add the reembed tables (nothing else changed).
                script = (_SCHEMA if version == 0 else "") + _SCHEMA_2
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError("the store is closed")
        return self._conn

    def _retry(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """Run ``fn`` (a whole transaction or read) retrying while the database is busy."""
        deadline = time.monotonic() + RETRY_DEADLINE_S
        delay = 0.005
        with self._lock:
            while True:
                conn = self.conn
                try:
                    return fn(conn)
                except MemwireError:
                    raise
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    if _is_busy(exc) and time.monotonic() < deadline:
                        log.debug("store busy during %s, retrying: %s", what, exc)
                        time.sleep(delay * (0.5 + random.random()))
                        delay = min(delay * 2, 0.5)
                        continue
                    log.debug("store failure during %s: %r", what, exc)
                    if _is_busy(exc):
                        raise StorageError("the store stayed busy; try again later") from None
                    raise StorageError(f"the store failed during {what}") from None

    def _write(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """Run ``fn`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``, with retry."""

        def tx(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return result

        return self._retry(tx, what)

    def _read(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """Run ``fn`` in one read transaction (a consistent view under WAL)."""

        def tx(conn: sqlite3.Connection) -> T:
            conn.execute("BEGIN")
            try:
                return fn(conn)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

        return self._retry(tx, what)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                try:
                    if not self.ephemeral:
                        self._conn.execute("PRAGMA optimize")
                except sqlite3.Error as exc:
                    log.debug("optimize at close failed: %s", exc)
                try:
                    self._conn.close()
                except sqlite3.Error as exc:
                    log.debug("close failed: %s", exc)
                self._conn = None

    # -- banks -------------------------------------------------------------------------------

    @staticmethod
    def _bank_row(conn: sqlite3.Connection, bank: str) -> tuple[int, int, str] | None:
        found = conn.execute(
            "SELECT id, last_seq, config FROM banks WHERE name = ?", (bank,)
        ).fetchone()
        return None if found is None else (found[0], found[1], found[2])

    @classmethod
    def _ensure_bank(cls, conn: sqlite3.Connection, bank: str) -> tuple[int, int, str]:
        found = cls._bank_row(conn, bank)
        if found is not None:
            return found
        cur = conn.execute(
            "INSERT INTO banks (name, created_at) VALUES (?, ?)", (bank, format_utc(now_utc()))
        )
        bank_id = cur.lastrowid
        assert bank_id is not None
        return bank_id, 0, "{}"

    def head(self, bank: str) -> BankHead | None:
        found = self._retry(
            lambda conn: conn.execute(
                "SELECT id, last_seq, config, embedder, dim FROM banks WHERE name = ?", (bank,)
            ).fetchone(),
            "read",
        )
        if found is None:
            return None
        return BankHead(found[0], found[1], json.loads(found[2]), found[3], found[4])

    def bank_names(self) -> list[str]:
        rows = self._retry(
            lambda conn: conn.execute("SELECT name FROM banks ORDER BY name").fetchall(), "read"
        )
        return [r[0] for r in rows]

    def delete_bank(self, bank: str) -> bool:
        def tx(conn: sqlite3.Connection) -> bool:
            found = self._bank_row(conn, bank)
            if found is None:
                return False
            bank_id = found[0]
            for table in (
                "memories",
                "memory_tags",
                "removals",
                "snapshots",
                "reembeds",
                "staged_vectors",
            ):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = ?", (bank_id,))
            conn.execute("DELETE FROM banks WHERE id = ?", (bank_id,))
            return True

        return self._write(tx, "delete_bank")

    def get_config(self, bank: str) -> dict[str, Any] | None:
        head = self.head(bank)
        return None if head is None else head.config

    def update_config(
        self, bank: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        def tx(conn: sqlite3.Connection) -> dict[str, Any]:
            bank_id, _, raw = self._ensure_bank(conn, bank)
            config = update(json.loads(raw))
            conn.execute(
                "UPDATE banks SET config = ? WHERE id = ?",
                (json.dumps(config, ensure_ascii=False, sort_keys=True), bank_id),
            )
            return config

        return self._write(tx, "set_config")

    # -- writes ------------------------------------------------------------------------------

    @staticmethod
    def _delete_row(
        conn: sqlite3.Connection, bank_id: int, ordinal: int, tags_json: str, seq: int
    ) -> None:
        conn.execute("DELETE FROM memories WHERE bank_id = ? AND ordinal = ?", (bank_id, ordinal))
        conn.executemany(
            "DELETE FROM memory_tags WHERE bank_id = ? AND tag = ? AND ordinal = ?",
            [(bank_id, tag, ordinal) for tag in json.loads(tags_json)],
        )
        conn.execute(
            "INSERT INTO removals (bank_id, seq, ordinal) VALUES (?, ?, ?)",
            (bank_id, seq, ordinal),
        )

    def write(
        self,
        bank: str,
        items: Sequence[NewMemory],
        config_tags: Callable[[Mapping[str, Any]], list[str]] | None = None,
        imported: bool = False,
        space: Space | None = None,
    ) -> WriteResult:
        """Insert ``items`` (vectors in ``space``, which is recorded as the bank's when it has
        none; a bank of another space refuses them with InvalidInputError)."""
        if space is None and any(item.vector is not None for item in items):
            raise InvalidInputError("vectors need an embedder space")

        def tx(conn: sqlite3.Connection) -> WriteResult:
            bank_id, first_seq, raw_config = self._ensure_bank(conn, bank)
            dim = self._check_space(conn, bank, bank_id, space, items)
            extra = config_tags(json.loads(raw_config)) if config_tags is not None else []
            seq = first_seq
            ids: list[str] = []
            added: list[Added] = []
            removed: list[int] = []
            execute = conn.execute
            for item in items:
                if (
                    imported
                    and execute("SELECT 1 FROM memories WHERE id = ?", (item.id,)).fetchone()
                ):
                    ids.append(item.id)  # an import of a memory already here
                    continue
                if item.document_id is not None:
                    prev = execute(
                        "SELECT id, ordinal, content_hash, tags FROM memories "
                        "WHERE bank_id = ? AND document_id = ?",
                        (bank_id, item.document_id),
                    ).fetchone()
                    if prev is not None:
                        if prev[2] == item.content_hash:
                            ids.append(prev[0])
                            continue
                        if item.update_mode == "append":
                            raise InvalidInputError(
                                f"document {item.document_id!r} already has a memory in bank "
                                f"{bank!r}; use update_mode='replace' to replace it"
                            )
                        seq += 1
                        self._delete_row(conn, bank_id, prev[1], prev[3], seq)
                        removed.append(prev[1])
                if seq + 1 > MAX_ORDINAL:
                    raise StorageError("the bank has exhausted its ordinals")
                tags = list(item.tags)
                for tag in extra:
                    if tag not in tags:
                        tags.append(tag)
                # Without a document id, byte-identical content is deduplicated by the unique
                # index memories_dedupe: the insert is ignored and the existing id returned.
                inserted = execute(
                    "INSERT OR IGNORE INTO memories (id, bank_id, ordinal, content, context, "
                    "tags, created_at, retained_at, document_id, content_hash, vector) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        item.id,
                        bank_id,
                        seq + 1,
                        item.content,
                        item.context,
                        json.dumps(tags, ensure_ascii=False),
                        item.created_at,
                        item.retained_at,
                        item.document_id,
                        item.content_hash,
                        item.vector,
                    ),
                ).rowcount
                if not inserted:
                    same = execute(
                        "SELECT id FROM memories WHERE bank_id = ? AND document_id IS NULL "
                        "AND content_hash = ?",
                        (bank_id, item.content_hash),
                    ).fetchone()
                    if same is None:
                        raise StorageError("a memory could not be stored")
                    ids.append(same[0])
                    continue
                seq += 1
                if tags:
                    conn.executemany(
                        "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)",
                        [(bank_id, tag, seq) for tag in tags],
                    )
                added.append((seq, item.content, item.context, item.vector))
                ids.append(item.id)
            if seq != first_seq:
                execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
            return WriteResult(bank, bank_id, ids, added, removed, first_seq, seq, dim)

        return self._write(tx, "retain")

    @staticmethod
    def _check_space(
        conn: sqlite3.Connection,
        bank: str,
        bank_id: int,
        space: Space | None,
        items: Sequence[NewMemory],
    ) -> int:
        """The bank's dimension after this write; records ``space`` at the first vector."""
        embedder, dim = conn.execute(
            "SELECT embedder, dim FROM banks WHERE id = ?", (bank_id,)
        ).fetchone()
        if space is None or not any(item.vector is not None for item in items):
            return int(dim)
        if embedder is None:
            conn.execute(
                "UPDATE banks SET embedder = ?, dim = ? WHERE id = ?", (space[0], space[1], bank_id)
            )
            return space[1]
        if (embedder, dim) != tuple(space):
            raise InvalidInputError(space_mismatch(bank, (embedder, dim), space))
        return int(dim)

    def _remove_where(
        self,
        conn: sqlite3.Connection,
        bank: str,
        bank_id: int,
        first_seq: int,
        victims: Sequence[tuple[str, int, str]],
    ) -> WriteResult:
        seq = first_seq
        removed: list[int] = []
        for _id, ordinal, tags_json in victims:
            seq += 1
            self._delete_row(conn, bank_id, ordinal, tags_json, seq)
            removed.append(ordinal)
        if seq != first_seq:
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
        return WriteResult(bank, bank_id, [v[0] for v in victims], [], removed, first_seq, seq)

    def forget(self, memory_id: str, bank: str | None) -> WriteResult | None:
        def tx(conn: sqlite3.Connection) -> WriteResult | None:
            found = conn.execute(
                "SELECT m.ordinal, m.tags, b.id, b.name, b.last_seq FROM memories m "
                "JOIN banks b ON b.id = m.bank_id WHERE m.id = ?",
                (memory_id,),
            ).fetchone()
            if found is None or (bank is not None and found[3] != bank):
                return None
            ordinal, tags_json, bank_id, name, last_seq = found
            return self._remove_where(
                conn, name, bank_id, last_seq, [(memory_id, ordinal, tags_json)]
            )

        return self._write(tx, "forget")

    def expire(self, bank: str, cutoff: str, dry_run: bool) -> tuple[list[str], WriteResult | None]:
        def victims(conn: sqlite3.Connection) -> tuple[int, int, list[tuple[str, int, str]]] | None:
            found = self._bank_row(conn, bank)
            if found is None:
                return None
            rows = conn.execute(
                "SELECT id, ordinal, tags FROM memories WHERE bank_id = ? AND created_at < ? "
                "ORDER BY ordinal",
                (found[0], cutoff),
            ).fetchall()
            return found[0], found[1], [(r[0], r[1], r[2]) for r in rows]

        if dry_run:
            found = self._read(victims, "sweep")
            return ([v[0] for v in found[2]] if found else []), None

        def tx(conn: sqlite3.Connection) -> tuple[list[str], WriteResult | None]:
            found = victims(conn)
            if found is None or not found[2]:
                return [], None
            result = self._remove_where(conn, bank, found[0], found[1], found[2])
            return result.ids, result

        return self._write(tx, "sweep")

    # -- reads -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Row | None:
        found = self._retry(
            lambda conn: conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                "WHERE m.id = ?",
                (memory_id,),
            ).fetchone(),
            "read",
        )
        return None if found is None else _row(found)

    def rows_by_ordinal(self, bank_id: int, ordinals: Sequence[int]) -> dict[int, Row]:
        def read(conn: sqlite3.Connection) -> dict[int, Row]:
            out: dict[int, Row] = {}
            for start in range(0, len(ordinals), _CHUNK):
                chunk = list(ordinals[start : start + _CHUNK])
                marks = ",".join("?" * len(chunk))
                for values in conn.execute(
                    f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                    f"WHERE m.bank_id = ? AND m.ordinal IN ({marks})",
                    (bank_id, *chunk),
                ):
                    row = _row(values)
                    out[row.ordinal] = row
            return out

        return self._read(read, "read")

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        rows = self._retry(
            lambda conn: conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                "WHERE b.name = ? ORDER BY m.created_at DESC, m.ordinal DESC LIMIT ? OFFSET ?",
                (bank, limit, offset),
            ).fetchall(),
            "read",
        )
        return [_row(r) for r in rows]

    def iter_rows(self, bank: str) -> Iterator[Row]:
        """Every memory of ``bank`` in ordinal (retain) order, read in pages."""
        after = -1
        while True:
            page = self._retry(
                lambda conn, after=after: conn.execute(  # type: ignore[misc]
                    f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                    "WHERE b.name = ? AND m.ordinal > ? ORDER BY m.ordinal LIMIT 1000",
                    (bank, after),
                ).fetchall(),
                "read",
            )
            if not page:
                return
            for values in page:
                yield _row(values)
            after = page[-1][2]

    def stats(self, bank: str) -> dict[str, Any] | None:
        def read(conn: sqlite3.Connection) -> dict[str, Any] | None:
            found = self._bank_row(conn, bank)
            if found is None:
                return None
            count, oldest, newest = conn.execute(
                "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM memories WHERE bank_id = ?",
                (found[0],),
            ).fetchone()
            tags = dict(
                conn.execute(
                    "SELECT tag, COUNT(*) FROM memory_tags WHERE bank_id = ? GROUP BY tag "
                    "ORDER BY tag",
                    (found[0],),
                ).fetchall()
            )
            return {"count": count, "tags": tags, "oldest": oldest, "newest": newest}

        return self._read(read, "stats")

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
        cutoff: str | None,
    ) -> list[int] | None:
        """Ordinals passing the filters, or ``None`` when nothing is filtered out."""

        def read(conn: sqlite3.Connection) -> list[int] | None:
            live_cutoff = cutoff
            if (
                live_cutoff is not None
                and not conn.execute(
                    "SELECT 1 FROM memories WHERE bank_id = ? AND created_at < ? LIMIT 1",
                    (bank_id, live_cutoff),
                ).fetchone()
            ):
                live_cutoff = None
            if not tags and not exclude_tags and live_cutoff is None:
                return None
            where = ["m.bank_id = ?"]
            params: list[Any] = [bank_id]
            if tags:
                where.append(
                    "EXISTS (SELECT 1 FROM memory_tags t WHERE t.bank_id = m.bank_id "
                    f"AND t.ordinal = m.ordinal AND t.tag IN ({','.join('?' * len(tags))}))"
                )
                params.extend(tags)
            if exclude_tags:
                where.append(
                    "NOT EXISTS (SELECT 1 FROM memory_tags t WHERE t.bank_id = m.bank_id "
                    f"AND t.ordinal = m.ordinal AND t.tag IN ({','.join('?' * len(exclude_tags))}))"
                )
                params.extend(exclude_tags)
            if live_cutoff is not None:
                where.append("m.created_at >= ?")
                params.append(live_cutoff)
            rows = conn.execute(
                f"SELECT m.ordinal FROM memories m WHERE {' AND '.join(where)} ORDER BY m.ordinal",
                params,
            ).fetchall()
            return [r[0] for r in rows]

        return self._read(read, "recall")

    # -- index support -----------------------------------------------------------------------

    def changes_since(self, bank_id: int, since: int) -> Changes | None:
        def read(conn: sqlite3.Connection) -> Changes | None:
            found = conn.execute(
                "SELECT last_seq, pruned_seq FROM banks WHERE id = ?", (bank_id,)
            ).fetchone()
            if found is None:
                return None
            last_seq, pruned_seq = found
            if since > 0 and pruned_seq > since:
                return Changes(last_seq, [], [], gap=True)
            removed = (
                [
                    r[0]
                    for r in conn.execute(
                        "SELECT ordinal FROM removals WHERE bank_id = ? AND seq > ? ORDER BY seq",
                        (bank_id, since),
                    )
                ]
                if since > 0
                else []
            )
            added = [
                (r[0], r[1], r[2], None if r[3] is None else bytes(r[3]))
                for r in conn.execute(
                    "SELECT ordinal, content, context, vector FROM memories "
                    "WHERE bank_id = ? AND ordinal > ? ORDER BY ordinal",
                    (bank_id, since),
                )
            ]
            return Changes(last_seq, added, removed, gap=False)

        return self._read(read, "replay")

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None:
        """The bank's snapshot if its shell format is ``shell``. The blob is read once, straight
        into the returned bytes (a snapshot can be as big as the index it holds)."""

        def read(conn: sqlite3.Connection) -> Snapshot | None:
            if not hasattr(conn, "blobopen"):  # Python 3.10: no incremental blob I/O
                found = conn.execute(
                    "SELECT seq, data FROM snapshots WHERE bank_id = ? AND shell = ?",
                    (bank_id, shell),
                ).fetchone()
                return None if found is None else Snapshot(found[0], found[1])
            found = conn.execute(
                "SELECT seq FROM snapshots WHERE bank_id = ? AND shell = ?", (bank_id, shell)
            ).fetchone()
            if found is None:
                return None
            # bank_id is the rowid. A plain SELECT of the blob would hold it twice at once
            # (SQLite's copy, then Python's).
            with conn.blobopen("snapshots", "data", bank_id, readonly=True) as blob:
                return Snapshot(found[0], blob.read())

        return self._read(read, "load snapshot")

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool:
        """Store a snapshot covering changes up to ``seq`` unless a newer one is stored (or
        one of the same ``seq``, unless ``replace_same``: a snapshot that adds the HNSW graph),
        then prune the removal log it makes unnecessary. Returns whether it was stored."""

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
            _write_blob(
                conn,
                "INSERT OR REPLACE INTO snapshots (bank_id, seq, shell, created_at, data) "
                "VALUES (?, ?, ?, ?, {})",
                (bank_id, seq, shell, format_utc(now_utc())),
                data,
                ("snapshots", "data", bank_id),
            )
            conn.execute("DELETE FROM removals WHERE bank_id = ? AND seq <= ?", (bank_id, seq))
            conn.execute(
                "UPDATE banks SET pruned_seq = MAX(pruned_seq, ?) WHERE id = ?", (seq, bank_id)
            )
            return True

        return self._write(tx, "save snapshot")

    # -- re-encoding -------------------------------------------------------------------------

    def reembed_state(self, bank: str) -> ReembedState | None:
        found = self._retry(
            lambda conn: conn.execute(
                "SELECT r.embedder, r.dim, r.done_through FROM reembeds r "
                "JOIN banks b ON b.id = r.bank_id WHERE b.name = ?",
                (bank,),
            ).fetchone(),
            "read",
        )
        return None if found is None else ReembedState((found[0], found[1]), found[2])

    def start_reembed(self, bank: str, space: Space) -> tuple[int, ReembedState]:
        """Resume the bank's unfinished reembed into ``space``, or start one (discarding an
        unfinished one into another space)."""

        def tx(conn: sqlite3.Connection) -> tuple[int, ReembedState]:
            found = self._bank_row(conn, bank)
            if found is None:
                raise NotFoundError(f"no bank {bank!r}")
            bank_id = found[0]
            current = conn.execute(
                "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = ?", (bank_id,)
            ).fetchone()
            if current is not None and (current[0], current[1]) == tuple(space):
                return bank_id, ReembedState(space, current[2])
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
            return bank_id, ReembedState(space, 0)

        return self._write(tx, "reembed")

    def reembed_page(
        self, bank_id: int, after: int, limit: int
    ) -> list[tuple[int, str, str | None]]:
        rows = self._retry(
            lambda conn: conn.execute(
                "SELECT ordinal, content, context FROM memories WHERE bank_id = ? AND ordinal > ? "
                "ORDER BY ordinal LIMIT ?",
                (bank_id, after, limit),
            ).fetchall(),
            "reembed",
        )
        return [(r[0], r[1], r[2]) for r in rows]

    @staticmethod
    def _check_reembed(conn: sqlite3.Connection, bank_id: int, space: Space) -> int:
        """The reembed's ``done_through``; raises unless it is still the one into ``space``."""
        current = conn.execute(
            "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = ?", (bank_id,)
        ).fetchone()
        if current is None:
            if conn.execute("SELECT 1 FROM banks WHERE id = ?", (bank_id,)).fetchone() is None:
                raise NotFoundError("the bank was deleted during reembed")
            raise InvalidInputError("the reembed was finished or discarded by another process")
        if (current[0], current[1]) != tuple(space):
            raise InvalidInputError(
                f"another process started a reembed into {current[0]!r} meanwhile"
            )
        return int(current[2])

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[tuple[int, bytes | None]], through: int
    ) -> bool:
        """Stage one batch of re-encoded vectors and advance the reembed's progress to
        ``through``, in one transaction."""

        def tx(conn: sqlite3.Connection) -> bool:
            self._check_reembed(conn, bank_id, space)
            conn.executemany(
                "INSERT OR REPLACE INTO staged_vectors (bank_id, ordinal, vector) VALUES (?, ?, ?)",
                [(bank_id, ordinal, vector) for ordinal, vector in vectors],
            )
            conn.execute(
                "UPDATE reembeds SET done_through = MAX(done_through, ?) WHERE bank_id = ?",
                (through, bank_id),
            )
            return True

        return self._write(tx, "reembed")

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
                raise StorageError("the bank has exhausted its ordinals")
            conn.execute(
                "UPDATE banks SET embedder = ?, dim = ?, last_seq = ?, pruned_seq = ? WHERE id = ?",
                (space[0], space[1], seq, seq, bank_id),
            )
            for table in ("staged_vectors", "reembeds", "snapshots", "removals"):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = ?", (bank_id,))
            return int(seq)

        return self._write(tx, "reembed")

    def count_rows(self, bank_id: int, after: int = 0) -> int:
        found = self._retry(
            lambda conn: conn.execute(
                "SELECT COUNT(*) FROM memories WHERE bank_id = ? AND ordinal > ?",
                (bank_id, after),
            ).fetchone(),
            "read",
        )
        return int(found[0])


def space_mismatch(bank: str, recorded: Space, offered: Space) -> str:
    """The message of a bank refusing another embedder space."""
    return (
        f"bank {bank!r} holds vectors of embedder {recorded[0]!r} (dim {recorded[1]}), not "
        f"{offered[0]!r} (dim {offered[1]}); open it with that embedder, set its config "
        f"'embedder' to 'none', or re-encode it with Memory.reembed"
    )
