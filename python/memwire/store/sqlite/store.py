"""The embedded store: one SQLite file (WAL) holding every bank. See docs/storage.md.

Concurrency: one connection per :class:`SQLiteStore`, guarded by a lock (thread-safe); across
processes, WAL lets readers run beside one writer, every write is a ``BEGIN IMMEDIATE``
transaction, the busy timeout absorbs ordinary contention and a bounded retry with jittered
backoff absorbs the rest, so ``database is locked`` never reaches a caller under normal load.

Errors: every :class:`sqlite3.Error` becomes an opaque :class:`~memwire.errors.StorageError`;
the detail (which may contain SQL or paths) goes to the ``memwire.store`` logger at debug level.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from memwire._dates import format_utc, now_utc
from memwire.errors import ConflictError, InvalidInputError, StorageError
from memwire.store import archive_sql
from memwire.store.history import check_supersedes, state_of
from memwire.store.protocol import (
    EXHAUSTED,
    MAX_ORDINAL,
    NO_SPACE,
    SUPERSEDED,
    TRASHED,
    Additions,
    Allowed,
    ArchivedMemory,
    BankHead,
    BankStats,
    Changes,
    Expired,
    Expiring,
    NewMemory,
    Row,
    Space,
    Version,
    WriteResult,
    document_conflict,
    space_mismatch,
)
from memwire.store.sqlite.archive import ROW_COLUMNS as _ROW_COLUMNS
from memwire.store.sqlite.archive import ArchiveTables, delete_row, to_row
from memwire.store.sqlite.base import SCHEMA_VERSION
from memwire.store.sqlite.group import GroupCommit
from memwire.store.sqlite.reembed import ReembedTables
from memwire.store.sqlite.snapshots import SnapshotTables, drop_snapshot

__all__ = ["SCHEMA_VERSION", "SQLiteStore"]

log = logging.getLogger("memwire.store")

_CHUNK = 500  # bound parameters per IN (...) query
_PLAIN_COLUMNS = (
    "id, bank_id, ordinal, content, context, tags, created_at, retained_at, content_hash, vector"
)

_row = to_row


class SQLiteStore(SnapshotTables, ReembedTables, ArchiveTables):
    """The SQLite implementation of :class:`memwire.store.Store`: banks, memories and the change
    log here; the connection in :class:`~memwire.store.sqlite.base.SQLiteBase`, snapshots and
    re-encoding in their own modules. Writes from many threads share transactions
    (:class:`~memwire.store.sqlite.group.GroupCommit`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)
        self._group = GroupCommit(self._write)

    # -- banks -------------------------------------------------------------------------------

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
        found = self._query(
            lambda conn: conn.execute(
                "SELECT id, last_seq, config, embedder, dim FROM banks WHERE name = ?", (bank,)
            ).fetchone(),
            "read",
        )
        if found is None:
            return None
        return BankHead(found[0], found[1], json.loads(found[2]), found[3], found[4])

    def bank_names(self) -> list[str]:
        rows = self._query(
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
                "archive",
                "memory_tags",
                "removals",
                "reembeds",
                "staged_vectors",
            ):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = ?", (bank_id,))
            drop_snapshot(conn, bank_id)
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

    _delete_row = staticmethod(delete_row)

    def write(
        self,
        bank: str,
        items: Sequence[NewMemory],
        config_tags: Callable[[Mapping[str, Any]], list[str]] | None = None,
        imported: bool = False,
        space: Space | None = None,
    ) -> WriteResult:
        """Insert ``items`` in one transaction (:meth:`memwire.store.Store.write`)."""
        if space is None and any(item.vector is not None for item in items):
            raise InvalidInputError(NO_SPACE)

        def tx(conn: sqlite3.Connection) -> WriteResult:
            bank_id, first_seq, raw_config = self._ensure_bank(conn, bank)
            dim = self._check_space(conn, bank, bank_id, space, items)
            extra = config_tags(json.loads(raw_config)) if config_tags is not None else []
            if not imported and all(
                item.document_id is None and not item.supersedes for item in items
            ):
                return self._write_plain(conn, bank, bank_id, first_seq, dim, items, extra)
            seq = first_seq
            ids: list[str] = []
            added: list[tuple[int, str, str | None, bytes | None]] = []
            removed: list[int] = []
            dropped: set[int] = set()  # ordinals this write added, then replaced
            execute = conn.execute
            for item in items:
                if imported and archive_sql.any_row(conn, "?", item.id, to_row) is not None:
                    ids.append(item.id)  # an import of a memory already here
                    continue
                check_supersedes(
                    bank,
                    item.supersedes,
                    lambda i: state_of(archive_sql.any_row(conn, "?", i, to_row)),
                )
                resolved: str | None = None  # the live memory the item is a duplicate of
                victims: list[tuple[int, str]] = []  # (ordinal, tags) of memories it supersedes
                if item.document_id is not None:
                    prev = execute(
                        "SELECT id, ordinal, content_hash, tags FROM memories "
                        "WHERE bank_id = ? AND document_id = ?",
                        (bank_id, item.document_id),
                    ).fetchone()
                    if prev is not None:
                        if prev[2] == item.content_hash and prev[0] not in item.supersedes:
                            resolved = prev[0]
                        elif item.update_mode == "append":
                            raise ConflictError(document_conflict(bank, item.document_id))
                        else:
                            victims.append((prev[1], prev[3]))
                elif item.supersedes:
                    same = execute(
                        "SELECT id FROM memories WHERE bank_id = ? AND document_id IS NULL "
                        "AND content_hash = ?",
                        (bank_id, item.content_hash),
                    ).fetchone()
                    if same is not None and same[0] not in item.supersedes:
                        resolved = same[0]
                target = resolved or item.id
                for memory_id in item.supersedes:
                    if memory_id != target:
                        found = execute(
                            "SELECT ordinal, tags FROM memories WHERE id = ?", (memory_id,)
                        ).fetchone()
                        if found is not None and found[0] not in (v[0] for v in victims):
                            victims.append((found[0], found[1]))
                for ordinal, tags_json in victims:
                    seq += 1
                    archived = (SUPERSEDED, target, item.retained_at)
                    self._delete_row(conn, bank_id, ordinal, tags_json, seq, archived)
                    if ordinal > first_seq:
                        dropped.add(ordinal)
                    else:
                        removed.append(ordinal)
                if resolved is not None:
                    ids.append(resolved)
                    continue
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
                    same = (
                        execute(
                            "SELECT id FROM memories WHERE bank_id = ? AND document_id IS NULL "
                            "AND content_hash = ?",
                            (bank_id, item.content_hash),
                        ).fetchone()
                        if item.document_id is None
                        else None
                    )
                    if same is None:  # the id is taken
                        raise StorageError("a memory could not be stored")
                    ids.append(same[0])
                    continue
                seq += 1
                if seq > MAX_ORDINAL:  # raising rolls the insert back with the rest
                    raise StorageError(EXHAUSTED)
                if tags:
                    conn.executemany(
                        "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)",
                        [(bank_id, tag, seq) for tag in tags],
                    )
                added.append((seq, item.content, item.context, item.vector))
                ids.append(item.id)
            if dropped:
                added = [a for a in added if a[0] not in dropped]
            if seq != first_seq:
                execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
            return WriteResult(
                bank, bank_id, ids, Additions.from_rows(added), removed, first_seq, seq, dim
            )

        return self._group.run(tx, "retain")

    @staticmethod
    def _write_plain(
        conn: sqlite3.Connection,
        bank: str,
        bank_id: int,
        first_seq: int,
        dim: int,
        items: Sequence[NewMemory],
        extra: Sequence[str],
    ) -> WriteResult:
        """The bulk form of :meth:`write` for a batch with no document id and no import (every
        retain_many of plain memories): the same outcome in a few statements. Duplicates
        (stored already, or earlier in the batch) are found first, so every row left is
        inserted, with ``executemany``."""
        known: dict[bytes, str] = {}
        hashes = list({item.content_hash for item in items})
        for start in range(0, len(hashes), _CHUNK):
            chunk = hashes[start : start + _CHUNK]
            known.update(
                (h, memory_id)
                for h, memory_id in conn.execute(
                    "SELECT content_hash, id FROM memories WHERE bank_id = ? AND "
                    f"document_id IS NULL AND content_hash IN ({','.join('?' * len(chunk))})",
                    (bank_id, *map(bytearray, chunk)),
                )
            )
        tag_forms: dict[tuple[str, ...], tuple[list[str], str]] = {}
        rows: list[tuple[Any, ...]] = []
        tag_rows: list[tuple[int, str, int]] = []
        # The index's columns, built here rather than from row tuples (Additions.from_rows).
        ordinals: list[int] = []
        contents: list[str] = []
        contexts: list[str | None] = []
        vectors: list[bytes | None] = []
        ids: list[str] = []
        seq = first_seq
        # sqlite3 binds an exact int, float, str or bytearray as it is but passes any other
        # parameter (bytes, None) through its adaptation protocol, ~1 µs each: blobs go in as
        # bytearrays (the same BLOB), and a batch without contexts leaves that column out.
        with_context = any(item.context is not None for item in items)
        for item in items:
            content_hash = item.content_hash
            same = known.get(content_hash)
            if same is not None:
                ids.append(same)
                continue
            form = tag_forms.get(item.tags)
            if form is None:
                tags = list(item.tags)
                tags.extend(t for t in dict.fromkeys(extra) if t not in item.tags)
                form = tag_forms[item.tags] = (tags, json.dumps(tags, ensure_ascii=False))
            seq += 1
            known[content_hash] = memory_id = item.id
            content, context, vector = item.content, item.context, item.vector
            row = (
                memory_id,
                bank_id,
                seq,
                content,
                form[1],
                item.created_at,
                item.retained_at,
                bytearray(content_hash),
                None if vector is None else bytearray(vector),
            )
            rows.append((*row[:4], context, *row[4:]) if with_context else row)
            if form[0]:
                tag_rows.extend((bank_id, tag, seq) for tag in form[0])
            ordinals.append(seq)
            contents.append(content)
            contexts.append(context)
            vectors.append(vector)
            ids.append(memory_id)
        if seq > MAX_ORDINAL:  # nothing is written yet: the transaction rolls back
            raise StorageError(EXHAUSTED)
        added = Additions(ordinals, contents, contexts, vectors)
        if rows:
            columns = _PLAIN_COLUMNS if with_context else _PLAIN_COLUMNS.replace("context, ", "")
            inserted = conn.executemany(
                f"INSERT OR IGNORE INTO memories ({columns}) "
                f"VALUES ({', '.join('?' * len(rows[0]))})",
                rows,
            ).rowcount
            if inserted != len(rows):  # an id is taken: the transaction rolls back
                raise StorageError("a memory could not be stored")
            if tag_rows:
                conn.executemany(
                    "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)", tag_rows
                )
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
        return WriteResult(bank, bank_id, ids, added, [], first_seq, seq, dim)

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
        archived: tuple[str, str | None, str] | None = None,
    ) -> WriteResult:
        seq = first_seq
        removed: list[int] = []
        for _id, ordinal, tags_json in victims:
            seq += 1
            self._delete_row(conn, bank_id, ordinal, tags_json, seq, archived)
            removed.append(ordinal)
        if seq != first_seq:
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
        return WriteResult(
            bank, bank_id, [v[0] for v in victims], Additions.from_rows([]), removed, first_seq, seq
        )

    def forget(
        self, memory_id: str, bank: str | None, *, trash: bool = False
    ) -> WriteResult | None:
        def tx(conn: sqlite3.Connection) -> WriteResult | None:
            found = conn.execute(
                "SELECT m.ordinal, m.tags, b.id, b.name, b.last_seq FROM memories m "
                "JOIN banks b ON b.id = m.bank_id WHERE m.id = ?",
                (memory_id,),
            ).fetchone()
            if found is None or (bank is not None and found[3] != bank):
                return None
            ordinal, tags_json, bank_id, name, last_seq = found
            archived = (TRASHED, None, format_utc(now_utc())) if trash else None
            return self._remove_where(
                conn, name, bank_id, last_seq, [(memory_id, ordinal, tags_json)], archived
            )

        return self._write(tx, "forget")

    def retag(self, memory_id: str, bank: str, tags: Sequence[str]) -> WriteResult | None:
        def tx(conn: sqlite3.Connection) -> WriteResult | None:
            found = conn.execute(
                "SELECT m.ordinal, m.tags, b.id, b.last_seq FROM memories m "
                "JOIN banks b ON b.id = m.bank_id WHERE m.id = ? AND b.name = ?",
                (memory_id, bank),
            ).fetchone()
            if found is None:
                return None
            ordinal, old, bank_id, first_seq = found
            conn.executemany(
                "DELETE FROM memory_tags WHERE bank_id = ? AND tag = ? AND ordinal = ?",
                [(bank_id, tag, ordinal) for tag in json.loads(old)],
            )
            conn.executemany(
                "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (?, ?, ?)",
                [(bank_id, tag, ordinal) for tag in tags],
            )
            conn.execute(
                "UPDATE memories SET tags = ? WHERE id = ?",
                (json.dumps(list(tags), ensure_ascii=False), memory_id),
            )
            seq = first_seq + 1
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
            return WriteResult(
                bank, bank_id, [memory_id], Additions.from_rows([]), [], first_seq, seq
            )

        return self._write(tx, "update")

    def expire(self, bank: str, cutoff: str, dry_run: bool) -> Expired:
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
            return Expired([v[0] for v in found[2]] if found else [], None)

        def tx(conn: sqlite3.Connection) -> Expired:
            found = victims(conn)
            if found is None or not found[2]:
                return Expired([], None)
            result = self._remove_where(conn, bank, found[0], found[1], found[2])
            return Expired(result.ids, result)

        return self._write(tx, "sweep")

    def archive_page(self, bank_id: int, after: int, limit: int) -> list[Version]:
        found = self._read(
            lambda conn: archive_sql.archive_page(conn, "?", bank_id, after, limit, to_row),
            "read",
        )
        return [Version(row, vector) for row, vector in found]

    def import_archived(
        self, bank: str, items: Sequence[ArchivedMemory], space: Space | None = None
    ) -> list[str]:
        if space is None and any(item.memory.vector is not None for item in items):
            raise InvalidInputError(NO_SPACE)

        def tx(conn: sqlite3.Connection) -> list[str]:
            bank_id, seq, _ = self._ensure_bank(conn, bank)
            self._check_space(conn, bank, bank_id, space, [item.memory for item in items])
            added, seq = archive_sql.insert_archived(
                conn, "?", bank_id, seq, [(i, i.memory.content, i.memory.context) for i in items]
            )
            conn.execute("UPDATE banks SET last_seq = ? WHERE id = ?", (seq, bank_id))
            return added

        return self._write(tx, "import")

    # -- reads -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Row | None:
        return self._read(lambda conn: archive_sql.any_row(conn, "?", memory_id, to_row), "read")

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

        # One statement is a consistent view of its own: a recall's read-back (one chunk) skips
        # BEGIN and COMMIT, two statements whose GIL hand-offs cost most under concurrency.
        if len(ordinals) <= _CHUNK:
            return self._query(read, "read")
        return self._read(read, "read")

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        rows = self._query(
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
            page = self._query(
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

    def stats(self, bank: str) -> BankStats | None:
        def read(conn: sqlite3.Connection) -> BankStats | None:
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
            return BankStats(count, tags, oldest, newest)

        return self._read(read, "stats")

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
    ) -> Allowed:
        """Ordinals passing the filters, or ``Allowed(None)`` when nothing is filtered out."""

        def read(conn: sqlite3.Connection) -> Allowed:
            if not tags and not exclude_tags:
                return Allowed(None)
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
            rows = conn.execute(
                f"SELECT m.ordinal FROM memories m WHERE {' AND '.join(where)} ORDER BY m.ordinal",
                params,
            ).fetchall()
            return Allowed([r[0] for r in rows])

        return self._read(read, "recall")

    def expiring(self, bank_id: int, cutoff: str) -> Expiring:
        def read(conn: sqlite3.Connection) -> Expiring:
            rows = conn.execute(
                "SELECT ordinal FROM memories WHERE bank_id = ? AND created_at < ? "
                "ORDER BY ordinal",
                (bank_id, cutoff),
            ).fetchall()
            found = conn.execute(
                "SELECT MIN(created_at) FROM memories WHERE bank_id = ? AND created_at >= ?",
                (bank_id, cutoff),
            ).fetchone()
            return Expiring([r[0] for r in rows], None if found is None else found[0])

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
                return Changes(last_seq, Additions.from_rows([]), [], gap=True)
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
            # sqlite3 reads a BLOB as bytes: the rows go into columns as they are.
            added = Additions.from_rows(
                conn.execute(
                    "SELECT ordinal, content, context, vector FROM memories "
                    "WHERE bank_id = ? AND ordinal > ? ORDER BY ordinal",
                    (bank_id, since),
                )
            )
            return Changes(last_seq, added, removed, gap=False)

        return self._read(read, "replay")
