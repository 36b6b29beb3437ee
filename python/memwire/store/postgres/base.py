"""The PostgreSQL plumbing: the schema, a small pool of connections (each reconnected when it
breaks), the change notifications, and the transaction helpers that turn serialization failures
and deadlocks into bounded retries and every :class:`psycopg.Error` into an opaque
:class:`~memwire.errors.StorageError` (the detail, which may contain SQL or the URL, goes to the
``memwire.store`` logger at debug level): a full disk or another exhausted resource on the
server (SQLSTATE class 53) and an I/O error (58030) into
:class:`~memwire.errors.StorageFullError`.

Every write that moves a bank's ``last_seq`` sends ``pg_notify(channel, "<bank id> <seq>")`` in
its transaction (delivered at commit, never for a rolled-back write); the channel is the
store's (its schema's), so stores sharing a database do not hear each other
(:mod:`~memwire.store.postgres.listen` is the other end).

Isolation: writes run in READ COMMITTED and take the bank's row lock (``SELECT ... FOR NO KEY
UPDATE``) before anything else, so the writes of one bank are serialised across every process
and host, commit in sequence order, and each sees the rows of the one before it (dedupe and
document upserts stay exact). Multi-statement reads run in one REPEATABLE READ READ ONLY
transaction: one consistent view, as SQLite's WAL read transaction gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import queue
import random
import re
import threading
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from memwire._dist import install_hint
from memwire.errors import (
    InvalidInputError,
    MemwireError,
    StorageError,
    StorageFullError,
    StoreUnavailableError,
)
from memwire.locations import is_postgres_url
from memwire.store.archive_sql import ARCHIVE_TABLE
from memwire.store.postgres.listen import Listener, OnChange
from memwire.store.postgres.options import poll_interval_of, pool_size_of
from memwire.store.protocol import CLOSED
from memwire.store.tag_case import fold_stored_tags

if TYPE_CHECKING:
    import psycopg

__all__ = [
    "NOTIFY",
    "SCHEMA_VERSION",
    "PostgresBase",
    "load_psycopg",
    "resource_failure",
]

log = logging.getLogger("memwire.store")

SCHEMA_VERSION = 3
RETRY_DEADLINE_S = 120.0
CONNECT_TIMEOUT_S = 10
UNREACHABLE = "the database cannot be reached; try again later"
_NO_PSYCOPG = "the PostgreSQL store needs psycopg 3, which is not installed"
MISSING = f"{_NO_PSYCOPG}: {install_hint('postgres')}"
_CONNECT_DEFAULTS: dict[str, Any] = {
    "connect_timeout": CONNECT_TIMEOUT_S,
    "application_name": "memwire",
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
    "tcp_user_timeout": 60_000,  # ms
}
# A lock id of our own for schema creation (two servers starting at once on one database).
_SCHEMA_LOCK = 0x6D656D77  # "memw"
NOTIFY = "SELECT pg_notify(%s, %s)"
_RETRIED = frozenset({"40001", "40P01"})  # serialization_failure, deadlock_detected
_DISK_FULL = (
    "the database server's disk is full; free space and retry (nothing of this request was written)"
)
_NO_RESOURCES = (
    "the database server ran out of a resource (memory, connections or a configured limit); "
    "retry later (nothing of this request was written)"
)
_IO_ERROR = (
    "the database server failed to read or write its disk (an I/O error); check it and retry "
    "(nothing of this request was written)"
)
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

T = TypeVar("T")

# A snapshot's bytes are uploaded before the bank is locked (writers of the bank never wait for
# an upload), in parts below bytea's 1 GiB limit; ``snapshots`` points at the current upload.
# Content and context are stored as UTF-8 bytea: PostgreSQL text cannot hold U+0000, which a
# memory may contain. Every other text (names, tags, dates, JSON) cannot contain controls.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS memwire_meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS banks (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at TEXT COLLATE "C" NOT NULL,
    last_seq   BIGINT NOT NULL DEFAULT 0,
    pruned_seq BIGINT NOT NULL DEFAULT 0,
    config     TEXT NOT NULL DEFAULT '{}',
    embedder   TEXT,
    dim        INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS memories (
    id           TEXT COLLATE "C" PRIMARY KEY,
    bank_id      BIGINT NOT NULL,
    ordinal      BIGINT NOT NULL,
    content      BYTEA NOT NULL,
    context      BYTEA,
    tags         TEXT NOT NULL DEFAULT '[]',
    created_at   TEXT COLLATE "C" NOT NULL,
    retained_at  TEXT COLLATE "C" NOT NULL,
    document_id  TEXT COLLATE "C",
    content_hash BYTEA NOT NULL,
    vector       BYTEA
);
CREATE UNIQUE INDEX IF NOT EXISTS memories_ordinal ON memories (bank_id, ordinal);
CREATE UNIQUE INDEX IF NOT EXISTS memories_dedupe
    ON memories (bank_id, content_hash) WHERE document_id IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS memories_document
    ON memories (bank_id, document_id) WHERE document_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_created ON memories (bank_id, created_at);
CREATE TABLE IF NOT EXISTS memory_tags (
    bank_id BIGINT NOT NULL,
    tag     TEXT COLLATE "C" NOT NULL,
    ordinal BIGINT NOT NULL,
    PRIMARY KEY (bank_id, tag, ordinal)
);
CREATE INDEX IF NOT EXISTS memory_tags_ordinal ON memory_tags (bank_id, ordinal);
CREATE TABLE IF NOT EXISTS removals (
    bank_id BIGINT NOT NULL,
    seq     BIGINT NOT NULL,
    ordinal BIGINT NOT NULL,
    PRIMARY KEY (bank_id, seq)
);
CREATE TABLE IF NOT EXISTS snapshots (
    bank_id    BIGINT PRIMARY KEY,
    seq        BIGINT NOT NULL,
    shell      TEXT COLLATE "C" NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    blob_id    BIGINT NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS snapshot_blob_ids;
CREATE TABLE IF NOT EXISTS snapshot_parts (
    blob_id    BIGINT NOT NULL,
    part       INTEGER NOT NULL,
    bank_id    BIGINT NOT NULL,
    created_at TEXT COLLATE "C" NOT NULL,
    data       BYTEA NOT NULL,
    PRIMARY KEY (blob_id, part)
);
CREATE INDEX IF NOT EXISTS snapshot_parts_bank ON snapshot_parts (bank_id);
CREATE TABLE IF NOT EXISTS reembeds (
    bank_id      BIGINT PRIMARY KEY,
    embedder     TEXT NOT NULL,
    dim          INTEGER NOT NULL,
    done_through BIGINT NOT NULL DEFAULT 0,
    started_at   TEXT COLLATE "C" NOT NULL
);
CREATE TABLE IF NOT EXISTS staged_vectors (
    bank_id BIGINT NOT NULL,
    ordinal BIGINT NOT NULL,
    vector  BYTEA,
    PRIMARY KEY (bank_id, ordinal)
);
"""


# Version 3: superseded and trashed memories (memwire.store.archive_sql).
_SCHEMA_3 = ARCHIVE_TABLE.format(
    text='TEXT COLLATE "C"', int="BIGINT", content="BYTEA", blob="BYTEA"
)


def load_psycopg() -> ModuleType:
    """psycopg, or a StorageError saying how to install it."""
    try:
        import psycopg
    except ImportError:
        raise StorageError(MISSING) from None
    return psycopg


def resource_failure(sqlstate: str | None) -> str | None:
    """The message of a server out of disk or another resource (SQLSTATE class 53,
    insufficient_resources, 53100 disk_full) or failing its disk (58030 io_error), else None."""
    if sqlstate is None:
        return None
    if sqlstate == "53100":
        return _DISK_FULL
    if sqlstate.startswith("53"):
        return _NO_RESOURCES
    if sqlstate == "58030":
        return _IO_ERROR
    return None


def channel_of(schema: str) -> str:
    """The notification channel of the store in ``schema`` (at most 63 bytes, PostgreSQL's
    identifier limit; a long schema name is hashed)."""
    name = f"memwire:{schema}"
    if len(name.encode("utf-8")) <= 63:
        return name
    return "memwire:" + hashlib.sha256(schema.encode("utf-8")).hexdigest()[:40]


class _Link:
    """A connection (None until opened, or after it broke) and the lock that guards it."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.conn: psycopg.Connection[Any] | None = None
        self.pid: int | None = None  # the server process of ``conn``


class PostgresBase:
    """A pool of connections to the database, with the schema in place.

    ``url``: a libpq connection URL (``postgresql://user:password@host:port/db``); it is never
    logged nor put in an error. ``schema``: the PostgreSQL schema holding memwire's tables
    (created if missing; default: the connection's ``search_path``, normally ``public``).
    ``pool_size``: how many connections this store opens at most for its calls (opened as
    concurrent calls need them; default ``$MEMWIRE_PG_POOL_SIZE``, else 4), so that the
    recalls of a server's threads do not queue on one connection; one more is opened for
    snapshot uploads and loads, and one by a :meth:`watch`. ``poll_interval``: seconds between
    the checks of every watched bank that back up the notifications (default
    ``$MEMWIRE_PG_POLL_SECONDS``, else 30).
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        pool_size: int | None = None,
        poll_interval: float | None = None,
    ) -> None:
        if not is_postgres_url(url):
            raise InvalidInputError("a PostgreSQL store needs a postgresql:// URL")
        if schema is not None and (
            not isinstance(schema, str) or not _SCHEMA_NAME.fullmatch(schema)
        ):
            raise InvalidInputError(
                "schema must be a lower-case SQL identifier (letters, digits, underscores)"
            )
        size = pool_size_of(pool_size)
        self._poll = poll_interval_of(poll_interval)
        self._listener: Listener | None = None
        self._pg = load_psycopg()
        self._url = url.strip()
        self._schema = schema
        self._channel = ""  # set by the first connection's setup
        # The pool: links taken by one call at a time, most recently used first (so a quiet
        # process keeps using one warm connection; the others open only under concurrency).
        # Plus one link opened on first use for snapshot uploads and loads (100+ MiB), so that
        # those never hold up the retains and recalls of the process behind them.
        self._links = [_Link() for _ in range(size)]
        self._idle: queue.LifoQueue[_Link] = queue.LifoQueue()
        for link in reversed(self._links):
            self._idle.put(link)
        self._bulk = _Link()
        self._closed = False
        first = self._links[0]
        with first.lock:
            self._connection(first)

    @property
    def durable(self) -> bool:
        return True

    # -- the connection ----------------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:
        pg = self._pg
        try:
            # Defaults for what the URL leaves out. Keepalives and a TCP user timeout make a
            # database that vanished without a reset (a cut network) an error within about a
            # minute, not a request that hangs forever.
            given = pg.conninfo.conninfo_to_dict(self._url)
            defaults = {k: v for k, v in _CONNECT_DEFAULTS.items() if k not in given}
            conn: psycopg.Connection[Any] = pg.connect(self._url, autocommit=True, **defaults)
        except pg.ProgrammingError as exc:  # a malformed URL (libpq's message may echo it)
            log.debug("postgres URL refused: %s", type(exc).__name__)
            raise InvalidInputError("the PostgreSQL URL is not valid") from None
        except pg.Error as exc:
            log.debug("postgres connect failed: %s", exc)
            raise StoreUnavailableError(UNREACHABLE) from None
        try:
            self._setup(conn)
        except BaseException:
            with contextlib.suppress(Exception):
                conn.close()
            raise
        return conn

    def _setup(self, conn: psycopg.Connection[Any]) -> None:
        sql = self._pg.sql
        if self._schema is not None:
            conn.execute(
                sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self._schema))
            )
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))
        if not self._channel:
            current = conn.execute("SELECT current_schema()").fetchone()
            self._channel = channel_of(str(current[0] if current and current[0] else "public"))
        found = self._version(conn)
        if found == SCHEMA_VERSION:
            return
        if found is not None and found > SCHEMA_VERSION:
            raise StorageError("the store was written by a newer memwire; upgrade memwire")
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            # The catalog may not show a schema that a server starting beside us created
            # meanwhile: every statement tolerates what is already there.
            current = self._version(conn)
            if current is None:
                for statement in (_SCHEMA + ";" + _SCHEMA_3).split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "INSERT INTO memwire_meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO NOTHING",
                    (str(SCHEMA_VERSION),),
                )
            elif current < SCHEMA_VERSION:
                # 1 -> 2: tags are case-insensitive (stored casefolded); 2 -> 3: the archive
                # of superseded and trashed memories (issue 17).
                if current < 2:
                    fold_stored_tags(conn, "%s")
                for statement in _SCHEMA_3.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(
                    "UPDATE memwire_meta SET value = %s WHERE key = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _version(conn: psycopg.Connection[Any]) -> int | None:
        exists = conn.execute("SELECT to_regclass('memwire_meta') IS NOT NULL").fetchone()
        if not exists or not exists[0]:
            return None
        found = conn.execute(
            "SELECT value FROM memwire_meta WHERE key = 'schema_version'"
        ).fetchone()
        return None if found is None else int(found[0])

    def _connection(self, link: _Link) -> psycopg.Connection[Any]:
        """``link``'s open connection, reconnecting if the last one broke (hold its lock)."""
        if self._closed:
            raise StorageError(CLOSED)
        if link.conn is not None and link.conn.closed:
            link.conn = None
        if link.conn is None:
            try:
                link.conn = self._connect()
                link.pid = link.conn.info.backend_pid
            except self._pg.Error as exc:  # the schema setup failed on a live connection
                log.debug("postgres setup failed: %s", exc)
                raise StorageError("the store could not be opened") from None
        return link.conn

    @staticmethod
    def _drop(link: _Link) -> None:
        if link.conn is not None:
            with contextlib.suppress(Exception):
                link.conn.close()
            link.conn = None
        link.pid = None

    # -- transactions ------------------------------------------------------------------------

    def _run(
        self,
        fn: Callable[[psycopg.Connection[Any]], T],
        what: str,
        begin: str | None,
        bulk: bool = False,
    ) -> T:
        """Run ``fn`` inside ``begin`` ... ``COMMIT`` (or alone, in autocommit, when ``begin``
        is None), retrying serialization failures and deadlocks; a connection that broke
        before anything was sent is replaced and the call retried once."""
        pg = self._pg
        deadline = time.monotonic() + RETRY_DEADLINE_S
        delay = 0.005
        fresh_retry = True
        with self._link(bulk) as link, link.lock:
            while True:
                conn = self._connection(link)
                started = False
                try:
                    if begin is not None:
                        conn.execute(begin)
                    started = True
                    result = fn(conn)
                    if begin is not None:
                        conn.execute("COMMIT")
                    return result
                except MemwireError:
                    self._rollback(conn, link)
                    raise
                except pg.Error as exc:
                    state = getattr(exc, "sqlstate", None)
                    # psycopg makes class 53 (a full disk...) an OperationalError, but the
                    # connection is fine and the transaction was rolled back.
                    full = resource_failure(state)
                    broken = conn.closed or (
                        full is None and isinstance(exc, (pg.OperationalError, pg.InterfaceError))
                    )
                    if broken:
                        self._drop(link)
                    else:
                        self._rollback(conn, link)
                    if state in _RETRIED and time.monotonic() < deadline:
                        log.debug("store contention during %s, retrying: %s", what, state)
                        time.sleep(delay * (0.5 + random.random()))
                        delay = min(delay * 2, 0.5)
                        continue
                    if (
                        broken
                        and fresh_retry
                        and (not started or begin is None or begin.endswith("READ ONLY"))
                    ):
                        # Nothing of a write was sent (or it was a read): safe to run again
                        # on a new connection (a database restarted while we were idle).
                        fresh_retry = False
                        log.debug("store connection lost during %s, reconnecting", what)
                        continue
                    log.debug("store failure during %s: %r", what, exc)
                    if broken:
                        raise StoreUnavailableError(UNREACHABLE) from None
                    if full is not None:  # rolled back above: nothing of it was written
                        raise StorageFullError(full) from None
                    raise StorageError(f"the store failed during {what}") from None
                except BaseException:
                    self._rollback(conn, link)
                    raise

    @contextlib.contextmanager
    def _link(self, bulk: bool) -> Iterator[_Link]:
        """A link for one call: the bulk one, or one of the pool's (waiting for a free one
        when every connection is busy)."""
        if bulk:
            yield self._bulk
            return
        if self._closed:
            raise StorageError(CLOSED)
        link = self._idle.get()
        try:
            yield link
        finally:
            self._idle.put(link)

    def _notify(self, conn: psycopg.Connection[Any], bank_id: int, seq: int) -> None:
        """Tell every process watching this store that ``bank_id`` moved to ``seq`` (sent
        at commit; call inside the write's transaction)."""
        conn.execute(NOTIFY, (self._channel, f"{bank_id} {seq}"))

    def _rollback(self, conn: psycopg.Connection[Any], link: _Link) -> None:
        if conn.closed:
            self._drop(link)
            return
        try:
            if conn.info.transaction_status != self._pg.pq.TransactionStatus.IDLE:
                conn.execute("ROLLBACK")
        except self._pg.Error:
            self._drop(link)

    def _write(
        self, fn: Callable[[psycopg.Connection[Any]], T], what: str, bulk: bool = False
    ) -> T:
        """``fn`` in one READ COMMITTED transaction (take the bank's row lock first);
        ``bulk``: on the second connection."""
        return self._run(fn, what, "BEGIN", bulk)

    def _read(self, fn: Callable[[psycopg.Connection[Any]], T], what: str, bulk: bool = False) -> T:
        """``fn`` in one consistent, read-only view."""
        return self._run(fn, what, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", bulk)

    def _one(self, fn: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        """``fn``, one statement, in autocommit (no BEGIN/COMMIT round trips)."""
        return self._run(fn, what, None)

    # -- change notifications ----------------------------------------------------------------

    def watch(self, on_change: OnChange) -> None:
        """Call ``on_change(bank_id, seq)`` from a thread of this store whenever any process
        commits a write that moves a bank to ``seq`` (0: the bank was deleted), and
        ``on_change(None, 0)`` ("check every bank") after each (re)connection of the listening
        connection and every ``poll_interval`` seconds (:mod:`~memwire.store.postgres.listen`).
        Once per store; stopped by :meth:`close`."""
        if self._closed:
            raise StorageError(CLOSED)
        if self._listener is not None:
            raise InvalidInputError("this store is already watched")
        self._listener = Listener(
            self._connect, self._channel, on_change, self._poll, self._sent_here
        )
        self._listener.start()

    def _sent_here(self, pid: int) -> bool:
        """Whether server process ``pid`` is one of this store's connections: the caller of a
        write through this store applies it itself (:meth:`memwire.Memory._apply`)."""
        return any(link.pid == pid for link in self._links)

    def close(self) -> None:
        self._closed = True
        if self._listener is not None:
            self._listener.stop()
        for link in (*self._links, self._bulk):
            with link.lock:
                self._drop(link)
