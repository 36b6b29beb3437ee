"""The SQLite plumbing every part of the store shares: the schema, the connection, and the
transaction helpers that turn busy databases into bounded retries and every
:class:`sqlite3.Error` into an opaque :class:`~memwire.errors.StorageError` (the detail, which
may contain SQL or paths, goes to the ``memwire.store`` logger at debug level). See
docs/storage.md; :mod:`memwire.store.sqlite` assembles the store from this base and its parts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from memwire.errors import MemwireError, StorageError, StorageFullError
from memwire.private_files import private_dir, private_file
from memwire.store.archive_sql import ARCHIVE_TABLE
from memwire.store.loss import StoreLoss
from memwire.store.protocol import CLOSED, MAX_ORDINAL
from memwire.store.sqlite import ledger
from memwire.store.sqlite.checkpoint import WRITER_CHECKPOINT_PAGES, Checkpointer
from memwire.store.tag_case import fold_stored_tags

__all__ = [
    "BUSY_TIMEOUT_S",
    "MAX_ORDINAL",
    "RETRY_DEADLINE_S",
    "SCHEMA_VERSION",
    "SQLiteBase",
    "write_blob",
]

log = logging.getLogger("memwire.store")

SCHEMA_VERSION = 5
BUSY_TIMEOUT_S = 10.0
RETRY_DEADLINE_S = 120.0
# Read connections kept open between reads: as many as a server's concurrent recalls use (8
# clients opened and closed one each per read with 4, every new one with a cold page cache);
# each holds at most SQLite's default 2 MiB page cache, allocated as it is used.
MAX_IDLE_READERS = 16
# The writer connection's page cache, KiB (SQLite's default is 2 MiB; pages are allocated as
# used, so a small store never holds more than its size).
WRITER_CACHE_KIB = 32 * 1024

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

# Version 4: superseded and trashed memories (issue 17; memwire.store.archive_sql).
_SCHEMA_4 = ARCHIVE_TABLE.format(text="TEXT", int="INTEGER", content="TEXT", blob="BLOB")

# Version 5: the parts of a snapshot past its first (memwire.store.sqlite.snapshots): SQLite
# holds at most ~1 GB in one value, less than a 1M-memory bank's snapshot with its vectors.
_SCHEMA_5 = """
CREATE TABLE IF NOT EXISTS snapshot_parts (
    bank_id INTEGER NOT NULL,
    part    INTEGER NOT NULL,
    data    BLOB NOT NULL,
    UNIQUE (bank_id, part)
);
"""

BLOB_CHUNK = 4 << 20


def write_blob(
    conn: sqlite3.Connection,
    sql: str,
    params: tuple[object, ...],
    data: bytes | memoryview,
    where: tuple[str, str, int | None],
) -> None:
    """Run ``sql`` (whose ``{}`` stands for the blob) with ``data`` as its blob. Binding a big
    blob makes SQLite copy it twice (the bound value, then the record); writing a zeroblob
    and then the data in chunks through incremental I/O (Python 3.11+) copies it never.
    ``where``: the blob's table, column and rowid (None: the row ``sql`` inserts)."""
    if not hasattr(conn, "blobopen"):
        conn.execute(sql.format("?"), (*params, data))
        return
    cursor = conn.execute(sql.format("zeroblob(?)"), (*params, len(data)))
    table, column, rowid = where
    if rowid is None:
        rowid = cursor.lastrowid
        assert rowid is not None  # an INSERT's
    view = memoryview(data)
    with conn.blobopen(table, column, rowid) as blob:
        for start in range(0, len(view), BLOB_CHUNK):
            blob.write(view[start : start + BLOB_CHUNK])


_FULL = (
    "the disk holding the store is full; free space and retry (nothing of this request was written)"
)
_IOERR = (
    "the disk holding the store failed to read or write (an I/O error); check it and retry "
    "(nothing of this request was written)"
)


def disk_failure(exc: sqlite3.Error) -> str | None:
    """The message of a full or failing disk (SQLITE_FULL, SQLITE_IOERR and its extended
    codes), else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    text = str(exc).lower()
    if primary == 13 or "disk is full" in text:  # SQLITE_FULL
        return _FULL
    if primary == 10 or "disk i/o error" in text:  # SQLITE_IOERR
        return _IOERR
    return None


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (5, 6):  # SQLITE_BUSY, SQLITE_LOCKED
        return True
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class _Busy(Exception):
    """Internal: the database stayed busy past one attempt."""


def _connect(target: str, uri: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread
    (each is used by one thread at a time: the writer under its lock, readers from the pool)."""
    try:
        return sqlite3.connect(
            target, uri=uri, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except sqlite3.Error as exc:
        log.debug("sqlite connect failed: %s", exc)
        raise StorageError("the store could not be opened") from None


def _close_quietly(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except sqlite3.Error as exc:
        log.debug("close failed: %s", exc)


class SQLiteBase:
    """The store file with the schema in place: one writer connection, guarded by a lock, and
    a pool of read-only connections (WAL: readers never wait for the writer nor each other)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._lock = threading.RLock()  # the writer connection
        self._pool_lock = threading.Lock()
        self._idle: list[sqlite3.Connection] = []
        self.ephemeral = str(path) == ":memory:"
        self._conn: sqlite3.Connection | None = None
        self._path = str(path)
        self._uri = ""
        self._ledger: ledger.Ledger | None = None
        self._loss: StoreLoss | None = None  # what loss() answers
        self._unsaved_loss: StoreLoss | None = None  # found at open, saved by the next commit
        # WAL checkpoints off the commits (store/sqlite/checkpoint.py); none for :memory:.
        self._checkpointer: Checkpointer | None = None
        if not self.ephemeral:
            where = self._path  # not self: the thread must not keep an unclosed store alive
            self._checkpointer = Checkpointer(lambda: _connect(where, uri=False))
            weakref.finalize(self, self._checkpointer.close, False)
            target = Path(path)
            self._uri = target.absolute().as_uri() + "?mode=ro"
            self._prepare_file(target)
        self._conn = _connect(str(path), uri=False)
        try:
            self._retry(self._open, "open")
            if not self.ephemeral:
                self._check_loss()
        except BaseException:
            self._conn.close()
            self._conn = None
            raise

    @property
    def durable(self) -> bool:
        """False for ``:memory:`` databases."""
        return not self.ephemeral

    # -- plumbing ----------------------------------------------------------------------------

    def _prepare_file(self, target: Path) -> None:
        """The store file ready for SQLite: created whole if missing, refused if it exists but
        is not a database (store/sqlite/ledger.py), and 0600 either way (SQLite gives the WAL
        and SHM files the mode of the database file, so all three stay private)."""
        try:
            private_dir(target.parent, own=False)
        except OSError as exc:
            log.debug("cannot create the store directory: %s", exc)
            raise StorageError("the store could not be opened") from None
        if not target.exists():
            ledger.create_store_file(target, self._open)
        ledger.check_store_file(target)
        try:
            private_file(target)
        except OSError as exc:
            log.debug("cannot make the store file private: %s", exc)
            raise StorageError("the store could not be opened") from None

    def _open(self, conn: sqlite3.Connection) -> None:
        """A connection ready for use: the schema migrated, the commit and memory counters in
        place, and triggers able to see a REPLACE's deletions (the counters need them)."""
        self._setup(conn)
        conn.execute("PRAGMA recursive_triggers=ON")
        # A bulk write touches the id and content-hash indexes at random places: with SQLite's
        # default 2 MiB cache, a 10,000-row batch into a 100k bank re-reads evicted pages.
        conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
        if not self.ephemeral:
            # Checkpoints are the checkpointer's; the writer's own only bound the log.
            conn.execute(f"PRAGMA wal_autocheckpoint={WRITER_CHECKPOINT_PAGES}")
        ledger.ensure_counters(conn)

    def _check_loss(self) -> None:
        """Compare the database's counters with the ledger's (read first: it only ever lags
        the database); a shortfall is logged and kept (docs/storage.md, "Loss at open")."""
        self._ledger = ledger.Ledger(Path(self._path))
        recorded = self._ledger.read()

        def read(conn: sqlite3.Connection) -> tuple[tuple[int, int], StoreLoss | None]:
            return ledger.read_counters(conn), ledger.read_loss(conn)

        found, kept = self._retry(read, "open")
        loss = ledger.find_loss(recorded, found)
        if loss is not None:
            log.error("%s", loss.describe())
            self._unsaved_loss = loss
        self._loss = loss or kept

    def loss(self) -> StoreLoss | None:
        """Committed writes found missing at open (by this open or an earlier one, until
        cleared); see :mod:`memwire.store.loss`."""
        return self._loss

    def clear_loss(self) -> bool:
        """Forget the recorded loss; True if there was one."""

        def tx(conn: sqlite3.Connection) -> bool:
            had = self._unsaved_loss is not None
            self._unsaved_loss = None
            return ledger.clear_loss(conn) or had

        cleared = self._write(tx, "clear loss")
        self._loss = None
        return cleared

    def _before_commit(self, conn: sqlite3.Connection) -> tuple[int, int]:
        """Count the write transaction about to commit (and save a loss found at open)."""
        if self._unsaved_loss is not None:
            ledger.write_loss(conn, self._unsaved_loss)
        return ledger.bump_commits(conn)

    def checkpoints_held(self) -> contextlib.AbstractContextManager[None]:
        """A section in which no WAL checkpoint starts (for up to a second once one is due):
        around a commit and the caller's work right after it (:mod:`memwire.store.checkpoints`)."""
        if self._checkpointer is None:
            return contextlib.nullcontext()
        return self._checkpointer.held()

    def _after_commit(self, counters: tuple[int, int], changed: int) -> None:
        """Record the commit just made (``changed``: the rows it changed) and have its log
        pages checkpointed in time."""
        self._unsaved_loss = None
        if self._ledger is not None:
            self._ledger.record(*counters)
        if self._checkpointer is not None:
            self._checkpointer.committed(changed)

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
                # 0: a new file; 1: add the reembed tables (nothing else changed); 1-2:
                # casefold the stored tags (version 3: tags are case-insensitive); 1-3: add
                # the archive (version 4: history and trash); 1-4: add snapshot_parts
                # (version 5: snapshots past SQLite's value size). Every table is IF NOT EXISTS.
                script = (_SCHEMA if version == 0 else "") + ";".join(
                    (_SCHEMA_2, _SCHEMA_4, _SCHEMA_5)
                )
                for statement in script.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if 0 < version < 3:
                    fold_stored_tags(conn, "?")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError(CLOSED)
        return self._conn

    @contextlib.contextmanager
    def _writer(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self.conn

    @contextlib.contextmanager
    def _reader(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection of the pool (the writer's for ``:memory:``, which is one
        database per connection), returned to the pool afterwards."""
        if self.ephemeral:
            with self._writer() as conn:
                yield conn
            return
        with self._pool_lock:
            if self._conn is None:
                raise StorageError(CLOSED)
            idle = self._idle.pop() if self._idle else None
        conn = idle if idle is not None else _connect(self._uri, uri=True)
        try:
            yield conn
        finally:
            with self._pool_lock:
                keep = self._conn is not None and len(self._idle) < MAX_IDLE_READERS
                if keep:
                    self._idle.append(conn)
            if not keep:
                _close_quietly(conn)

    def _retry(
        self,
        fn: Callable[[sqlite3.Connection], T],
        what: str,
        connection: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]]
        | None = None,
    ) -> T:
        """Run ``fn`` (a whole transaction or read) on a connection (default: the writer),
        retrying while the database is busy. The sleeps between attempts hold no lock."""
        deadline = time.monotonic() + RETRY_DEADLINE_S
        delay = 0.005
        while True:
            disk: str | None = None
            with (connection or self._writer)() as conn:
                try:
                    return fn(conn)
                except MemwireError:
                    raise
                except sqlite3.Error as exc:
                    if conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            conn.execute("ROLLBACK")
                    disk = disk_failure(exc)
                    if disk is not None:
                        log.debug("disk failure during %s: %r", what, exc)
                    elif not _is_busy(exc) or time.monotonic() >= deadline:
                        log.debug("store failure during %s: %r", what, exc)
                        if _is_busy(exc):
                            raise StorageError("the store stayed busy; try again later") from None
                        raise StorageError(f"the store failed during {what}") from None
                    else:
                        log.debug("store busy during %s, retrying: %s", what, exc)
            if disk is not None:
                self._reset_after_disk_failure()
                raise StorageFullError(disk)
            time.sleep(delay * (0.5 + random.random()))
            delay = min(delay * 2, 0.5)

    def _reset_after_disk_failure(self) -> None:
        """Start afresh after a full or failing disk, so retries succeed once space returns,
        without a restart: a new writer connection (a connection that failed mid-write can keep
        a failed state), the idle readers dropped, and the WAL truncated when no reader holds
        it, giving back what the failed transaction grew it by. Best effort: if the disk still
        refuses, the old connection is kept and the next failure tries again."""
        if self.ephemeral:
            return  # a :memory: database lives in its connection
        with self._lock:
            if self._conn is None:
                return
            try:
                fresh = _connect(self._path, uri=False)
            except StorageError:
                return
            try:
                self._open(fresh)
            except sqlite3.Error as exc:
                log.debug("reconnect after a disk failure failed: %r", exc)
                _close_quietly(fresh)
                return
            old, self._conn = self._conn, fresh
            _close_quietly(old)
            with self._pool_lock:
                idle, self._idle = self._idle, []
            for reader in idle:
                _close_quietly(reader)
            try:
                fresh.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            except sqlite3.Error as exc:
                log.debug("WAL truncate after a disk failure failed: %r", exc)

    def _query(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """Run ``fn`` (reads only, one statement) on a reader connection, with retry."""
        return self._retry(fn, what, self._reader)

    def _write(self, fn: Callable[[sqlite3.Connection], T], what: str) -> T:
        """Run ``fn`` inside ``BEGIN IMMEDIATE`` ... ``COMMIT``, with retry."""

        def tx(conn: sqlite3.Connection) -> T:
            before = conn.total_changes
            conn.execute("BEGIN IMMEDIATE")
            try:
                result = fn(conn)
                counters = self._before_commit(conn)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):  # keep the error that failed it
                        conn.execute("ROLLBACK")
                raise
            self._after_commit(counters, conn.total_changes - before)
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

        return self._retry(tx, what, self._reader)

    def close(self) -> None:
        if self._checkpointer is not None:
            # First: the store's writer, closed last, then checkpoints and removes the log.
            self._checkpointer.close()
        with self._lock:
            if self._ledger is not None:
                self._ledger.close()
            with self._pool_lock:
                idle, self._idle = self._idle, []
            for reader in idle:
                _close_quietly(reader)
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

    @staticmethod
    def _bank_row(conn: sqlite3.Connection, bank: str) -> tuple[int, int, str] | None:
        found = conn.execute(
            "SELECT id, last_seq, config FROM banks WHERE name = ?", (bank,)
        ).fetchone()
        return None if found is None else (found[0], found[1], found[2])
