"""The SQLite store's checks at open: a store file that is not a database is refused, and
committed writes that vanished before the open are found (docs/storage.md, "Loss at open").

- A new store file is made whole under a temporary name and linked into place, so an existing
  file that is empty (or too short, or not SQLite at all) is never a store being born: opening
  it is refused with a clear error instead of turning it into an empty store.
- Two counters live in the ``meta`` table: ``commits`` (write transactions; each bumps it) and
  ``live_memories`` (kept by triggers on ``memories``, so every write path counts, present and
  future). No schema version change: the triggers are created at open when missing.
- After each commit the pair is written to the *ledger*, a small file beside the database
  (``<store>-ledger``). It must live outside the database: a WAL cut short loses the counters'
  updates along with the rows. At open the ledger is read first, then the counters; a database
  that has committed fewer transactions than the ledger recorded lost some
  (:class:`~memwire.store.loss.StoreLoss`). The ledger is written after the COMMIT (never ahead
  of what is durable) and not fsynced: a stale ledger only lags, which can hide a loss but never
  invent one. The loss found is kept in ``meta`` (written with the next commit) until cleared.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from memwire._dates import format_utc, now_utc
from memwire.errors import StorageError
from memwire.private_files import open_private, private_file
from memwire.store.loss import StoreLoss

__all__ = [
    "LEDGER_SUFFIX",
    "Ledger",
    "bump_commits",
    "check_store_file",
    "clear_loss",
    "create_store_file",
    "ensure_counters",
    "find_loss",
    "read_counters",
    "read_loss",
    "write_loss",
]

log = logging.getLogger("memwire.store")

LEDGER_SUFFIX = "-ledger"
_MAGIC = b"SQLite format 3\x00"
_RECORD = 96  # the ledger's fixed size: rewritten in place with one pwrite
_TAG = "memwire-ledger 1"

_COUNTERS = (
    "INSERT OR IGNORE INTO meta (key, value) VALUES ('commits', '0')",
    "INSERT OR REPLACE INTO meta (key, value) "
    "VALUES ('live_memories', (SELECT count(*) FROM memories))",
    "CREATE TRIGGER IF NOT EXISTS memwire_count_insert AFTER INSERT ON memories BEGIN "
    "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'live_memories'; END",
    # A REPLACE's deletions fire this only with recursive_triggers on (set on every connection).
    "CREATE TRIGGER IF NOT EXISTS memwire_count_delete AFTER DELETE ON memories BEGIN "
    "UPDATE meta SET value = CAST(value AS INTEGER) - 1 WHERE key = 'live_memories'; END",
)
_TRIGGERS = ("memwire_count_insert", "memwire_count_delete")


# -- the file before SQLite opens it -----------------------------------------------------------


def _refuse(what: str) -> StorageError:
    return StorageError(
        f"the store file {what}, so it holds no memwire store; memwire will not open it as an "
        "empty one. If it held memories, restore it from a backup; if not, delete it (and its "
        f"{LEDGER_SUFFIX} file) to start a new store"
    )


def check_store_file(path: Path) -> None:
    """Refuse an existing store file that SQLite would silently treat as a new database (empty)
    or that is not one (another format, or shorter than its own header says, with no WAL whose
    frames could supply the rest)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(100)
            size = os.fstat(handle.fileno()).st_size
    except OSError as exc:
        log.debug("cannot read the store file: %s", exc)
        raise StorageError("the store could not be opened") from None
    if size == 0:
        raise _refuse("is empty (0 bytes)")
    if len(head) < 100 or not head.startswith(_MAGIC):
        raise _refuse("is not an SQLite database")
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    header_valid = pages > 0 and head[24:28] == head[92:96]
    if header_valid and size < page_size * pages and _wal_bytes(path) == 0:
        raise _refuse(f"is truncated ({size:,} of {page_size * pages:,} bytes)")


def _wal_bytes(path: Path) -> int:
    try:
        return os.stat(f"{path}-wal").st_size
    except OSError:
        return 0


def create_store_file(path: Path, setup: Callable[[sqlite3.Connection], None]) -> None:
    """Create the store file at ``path`` whole: ``setup`` runs on a connection to a private
    temporary file beside it, which is then linked into place, so no other process ever sees
    an empty file there. If another process created it meanwhile, theirs is kept."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.new")
    try:
        private_file(temp)
        conn = sqlite3.connect(str(temp), isolation_level=None)
        try:
            setup(conn)
        finally:
            conn.close()  # the last connection: SQLite checkpoints and removes the WAL
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process was first; its store is the store
        except OSError:  # a filesystem without hard links
            if not path.exists():
                os.rename(temp, path)
        _sync_dir(path.parent)
    except (OSError, sqlite3.Error) as exc:
        log.debug("cannot create the store file: %r", exc)
        raise StorageError("the store could not be opened") from None
    finally:
        for leftover in (temp, Path(f"{temp}-wal"), Path(f"{temp}-shm")):
            with contextlib.suppress(OSError):
                leftover.unlink()


def _sync_dir(directory: Path) -> None:
    """Make the new directory entry durable (POSIX; a no-op where directories cannot be
    opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as exc:
        log.debug("directory fsync failed: %s", exc)
    finally:
        os.close(fd)


# -- the counters in the database --------------------------------------------------------------


def ensure_counters(conn: sqlite3.Connection) -> None:
    """Create the counters and their triggers if this database lacks them (a store made before
    them, or a migration that rebuilt ``memories``): the live count starts from the rows."""
    have = {
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'trigger' AND name IN (?, ?)", _TRIGGERS
        )
    }
    if have == set(_TRIGGERS):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _COUNTERS:
            conn.execute(statement)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def read_counters(conn: sqlite3.Connection) -> tuple[int, int]:
    """``(commits, live_memories)`` as the database holds them."""
    found = dict(
        conn.execute("SELECT key, value FROM meta WHERE key IN ('commits', 'live_memories')")
    )
    return int(found.get("commits", 0)), int(found.get("live_memories", 0))


def bump_commits(conn: sqlite3.Connection) -> tuple[int, int]:
    """Inside a write transaction: count it, and return the counters it will commit."""
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'commits'")
    return read_counters(conn)


def read_loss(conn: sqlite3.Connection) -> StoreLoss | None:
    found = conn.execute("SELECT value FROM meta WHERE key = 'loss'").fetchone()
    if found is None:
        return None
    try:
        return StoreLoss(**json.loads(found[0]))
    except (TypeError, ValueError):
        return None


def write_loss(conn: sqlite3.Connection, loss: StoreLoss) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('loss', ?)", (json.dumps(asdict(loss)),)
    )


def clear_loss(conn: sqlite3.Connection) -> bool:
    return conn.execute("DELETE FROM meta WHERE key = 'loss'").rowcount > 0


def find_loss(recorded: tuple[int, int] | None, found: tuple[int, int]) -> StoreLoss | None:
    """A loss when the database committed fewer transactions than the ledger recorded."""
    if recorded is None or recorded[0] <= found[0]:
        return None
    return StoreLoss(recorded[0], found[0], recorded[1], found[1], format_utc(now_utc()))


# -- the ledger file ---------------------------------------------------------------------------


class Ledger:
    """``<store>-ledger``: the counters after the last commit, one fixed-size record rewritten
    in place, with a checksum (a torn or foreign file reads as no record)."""

    def __init__(self, store_path: Path) -> None:
        self.path = Path(f"{store_path}{LEDGER_SUFFIX}")
        self._fd: int | None = None
        self._broken = False

    def read(self) -> tuple[int, int] | None:
        """The recorded ``(commits, live_memories)``, or None (no ledger, or unreadable)."""
        try:
            text = self.path.read_bytes()[:_RECORD].decode("ascii").strip()
        except (OSError, UnicodeDecodeError):
            return None
        body, _, crc = text.rpartition(" ")
        words = body.split(" ")
        if len(words) != 4 or " ".join(words[:2]) != _TAG or crc != _crc(body):
            return None
        try:
            return int(words[2]), int(words[3])
        except ValueError:
            return None

    def record(self, commits: int, live: int) -> None:
        """Write the counters of the commit just made. A failure is logged once and never
        fails the write it follows (the check at open then lags, nothing more)."""
        if self._broken:
            return
        body = f"{_TAG} {commits} {live}"
        line = f"{body} {_crc(body)}".ljust(_RECORD - 1) + "\n"
        try:
            if self._fd is None:
                self._fd = open_private(self.path, os.O_RDWR | os.O_CREAT)
            os.pwrite(self._fd, line.encode("ascii"), 0)
        except OSError as exc:
            self._broken = True
            log.warning(
                "the store's ledger cannot be written (%s); lost commits will not be "
                "detected at the next open",
                type(exc).__name__,
            )

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _crc(body: str) -> str:
    return f"{zlib.crc32(body.encode('ascii')):08x}"
