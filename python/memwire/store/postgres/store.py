"""The PostgreSQL store: banks, memories, the change log, snapshots and re-encodings in one
database that any number of memwire processes on any number of hosts share (docs/scaling.md).

The semantics are :mod:`memwire.store.protocol`'s, statement for statement those of
:mod:`memwire.store.sqlite.store`; what differs is concurrency. Every write transaction first
locks its bank's row, so a bank's sequence is allocated by one writer at a time and commits in
order; writes to different banks run in parallel.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from memwire._dates import format_utc, now_utc
from memwire.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from memwire.store import archive_sql
from memwire.store.history import State, check_supersedes, restore_conflict
from memwire.store.postgres.base import NOTIFY, SCHEMA_VERSION, PostgresBase
from memwire.store.protocol import (
    EXHAUSTED,
    LIVE,
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
    ReembedItem,
    ReembedState,
    Row,
    Snapshot,
    Space,
    StagedVector,
    Version,
    WriteResult,
    document_conflict,
    reembed_gone,
    reembed_moved,
    space_mismatch,
)

if TYPE_CHECKING:
    import psycopg

    Conn = psycopg.Connection[Any]

__all__ = ["SCHEMA_VERSION", "PostgresStore"]

log = logging.getLogger("memwire.store")

_ROW_COLUMNS = (
    "m.id, b.name, m.ordinal, m.content, m.context, m.tags, m.created_at, m.retained_at, "
    "m.document_id"
)
_PAGE = 1000
SNAPSHOT_PART = 256 << 20  # bytes per row of snapshot_parts (bytea holds up to 1 GiB)


def _text(value: bytes | None) -> str | None:
    return None if value is None else bytes(value).decode("utf-8")


def _blob(value: str | None) -> bytes | None:
    return None if value is None else value.encode("utf-8")


def _row(values: Sequence[Any]) -> Row:
    return Row(
        id=values[0],
        bank=values[1],
        ordinal=values[2],
        content=bytes(values[3]).decode("utf-8"),
        context=_text(values[4]),
        tags=tuple(json.loads(values[5])),
        created_at=values[6],
        retained_at=values[7],
        document_id=values[8],
        status=values[9] if len(values) > 9 else LIVE,
        superseded_by=values[10] if len(values) > 10 else None,
        archived_at=values[11] if len(values) > 11 else None,
    )


_ARCHIVE_COLUMNS = (
    "id, bank_id, ordinal, content, context, tags, created_at, retained_at, document_id, "
    "content_hash, vector, status, superseded_by, archived_at"
)


def _additions(rows: Iterable[Sequence[Any]]) -> Additions:
    return Additions.from_rows(
        (r[0], bytes(r[1]).decode("utf-8"), _text(r[2]), None if r[3] is None else bytes(r[3]))
        for r in rows
    )


class _Plan:
    """One write's decisions, made in item order against what the bank held at the lock."""

    def __init__(self, bank: str, first_seq: int) -> None:
        self.bank = bank
        self.first_seq = self.seq = first_seq
        self.taken: set[str] = set()  # ids anywhere in the store, and those this write adds
        self.hashes: dict[bytes, str] = {}  # content hash -> id, memories without a document
        self.documents: dict[str, tuple[str, int, bytes]] = {}  # -> (id, ordinal, hash)
        self.ids: list[str] = []
        self.rows: list[tuple[Any, ...]] = []  # memories to insert
        self.tags: list[tuple[int, str]] = []  # (ordinal, tag)
        self.deleted: list[int] = []  # ordinals of stored memories to delete
        self.archived: list[tuple[int, str, str]] = []  # of those: (ordinal, successor, at)
        self.archive_rows: list[tuple[Any, ...]] = []  # added by this write, then superseded
        self.log: list[tuple[int, int]] = []  # (seq, ordinal) removals
        self.added: dict[int, tuple[int, str, str | None, bytes | None]] = {}
        self.removed: list[int] = []
        # What supersedes lists name: (bank, status, successor), and live ones' (ordinal,
        # content hash, document id) in this bank.
        self.states: dict[str, State] = {}
        self.live: dict[str, tuple[int, bytes, str | None]] = {}

    def read(self, conn: Conn, bank_id: int, items: Sequence[NewMemory], imported: bool) -> None:
        ids = [i.id for i in items]
        hashes = [i.content_hash for i in items if i.document_id is None]
        documents = [i.document_id for i in items if i.document_id is not None]
        listed = list({s for i in items for s in i.supersedes})
        for found_id, found_bank, ordinal, content_hash, document_id, name in conn.execute(
            "SELECT m.id, m.bank_id, m.ordinal, m.content_hash, m.document_id, b.name "
            "FROM memories m JOIN banks b ON b.id = m.bank_id "
            "WHERE m.id = ANY(%s) OR m.id = ANY(%s) OR (m.bank_id = %s AND ((m.document_id "
            "IS NULL AND m.content_hash = ANY(%s)) OR m.document_id = ANY(%s)))",
            (ids, listed, bank_id, hashes, documents),
        ).fetchall():
            self.taken.add(found_id)
            self.states[found_id] = (name, LIVE, None)
            if found_bank != bank_id:
                continue
            self.live[found_id] = (ordinal, bytes(content_hash), document_id)
            if document_id is None:
                self.hashes[bytes(content_hash)] = found_id
            else:
                self.documents[document_id] = (found_id, ordinal, bytes(content_hash))
        if listed or imported:  # (generated ids are unique: only an import can meet one)
            for found_id, name, status, successor in conn.execute(
                "SELECT a.id, b.name, a.status, a.superseded_by FROM archive a "
                "JOIN banks b ON b.id = a.bank_id WHERE a.id = ANY(%s) OR a.id = ANY(%s)",
                (ids, listed),
            ).fetchall():
                self.taken.add(found_id)
                self.states[found_id] = (name, status, successor)

    def _supersede(self, memory_id: str, successor: str, at: str) -> None:
        """Archive the live ``memory_id`` as superseded by ``successor`` (the next seq)."""
        ordinal, content_hash, document_id = self.live.pop(memory_id)
        self.states[memory_id] = (self.bank, SUPERSEDED, successor)
        if document_id is None:
            if self.hashes.get(content_hash) == memory_id:
                del self.hashes[content_hash]
        elif self.documents.get(document_id, ("",))[0] == memory_id:
            del self.documents[document_id]
        self.seq += 1
        self.log.append((self.seq, ordinal))
        if ordinal > self.first_seq:  # added earlier in this write: archived straight away
            del self.added[ordinal]
            row = next(r for r in self.rows if r[1] == ordinal)
            self.rows = [r for r in self.rows if r[1] != ordinal]
            self.tags = [t for t in self.tags if t[0] != ordinal]
            self.archive_rows.append((*row, SUPERSEDED, successor, at))
        else:
            self.deleted.append(ordinal)
            self.archived.append((ordinal, successor, at))
            self.removed.append(ordinal)

    def decide(self, item: NewMemory, imported: bool, extra: Sequence[str]) -> None:
        if imported and item.id in self.taken:
            self.ids.append(item.id)  # an import of a memory already here
            return
        check_supersedes(self.bank, item.supersedes, self.states.get)
        resolved: str | None = None  # the live memory the item is a duplicate of
        victims: list[str] = []
        if item.document_id is None:
            same = self.hashes.get(item.content_hash)
            if same is not None and same not in item.supersedes:
                resolved = same  # identical content: its id
        else:
            prev = self.documents.get(item.document_id)
            if prev is not None:
                if prev[2] == item.content_hash and prev[0] not in item.supersedes:
                    resolved = prev[0]
                elif item.update_mode == "append":
                    raise ConflictError(document_conflict(self.bank, item.document_id))
                else:
                    victims.append(prev[0])
        target = resolved or item.id
        victims.extend(i for i in item.supersedes if i != target and i not in victims)
        for victim in victims:
            self._supersede(victim, target, item.retained_at)
        if resolved is not None:
            self.ids.append(resolved)
            return
        if item.id in self.taken:  # ids are generated unique: not an ordinary conflict
            raise StorageError("a memory could not be stored")
        self.seq += 1
        if self.seq > MAX_ORDINAL:
            raise StorageError(EXHAUSTED)
        tags = list(item.tags)
        for tag in extra:
            if tag not in tags:
                tags.append(tag)
        self.rows.append(
            (
                item.id,
                self.seq,
                _blob(item.content),
                _blob(item.context),
                json.dumps(tags, ensure_ascii=False),
                item.created_at,
                item.retained_at,
                item.document_id,
                item.content_hash,
                item.vector,
            )
        )
        self.tags += [(self.seq, tag) for tag in tags]
        self.added[self.seq] = (self.seq, item.content, item.context, item.vector)
        self.taken.add(item.id)
        self.states[item.id] = (self.bank, LIVE, None)
        self.live[item.id] = (self.seq, item.content_hash, item.document_id)
        if item.document_id is None:
            self.hashes[item.content_hash] = item.id
        else:
            self.documents[item.document_id] = (item.id, self.seq, item.content_hash)
        self.ids.append(item.id)

    def apply(self, conn: Conn, bank_id: int, dim: int, channel: str) -> WriteResult:
        """Send the write's statements in one pipeline, its notification on ``channel``
        included (PostgresBase._notify's, without a round trip of its own)."""
        if self.seq != self.first_seq:
            with conn.pipeline(), conn.cursor() as cur:
                for ordinal, successor, at in self.archived:
                    archive_sql.archive_live(cur, "%s", bank_id, ordinal, SUPERSEDED, successor, at)
                if self.archive_rows:
                    cur.executemany(
                        f"INSERT INTO archive ({_ARCHIVE_COLUMNS}) VALUES "
                        "(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        [(r[0], bank_id, *r[1:]) for r in self.archive_rows],
                    )
                if self.deleted:
                    cur.execute(
                        "DELETE FROM memories WHERE bank_id = %s AND ordinal = ANY(%s)",
                        (bank_id, self.deleted),
                    )
                    cur.execute(
                        "DELETE FROM memory_tags WHERE bank_id = %s AND ordinal = ANY(%s)",
                        (bank_id, self.deleted),
                    )
                if self.log:
                    cur.executemany(
                        "INSERT INTO removals (bank_id, seq, ordinal) VALUES (%s, %s, %s)",
                        [(bank_id, seq, ordinal) for seq, ordinal in self.log],
                    )
                if self.rows:
                    cur.executemany(
                        "INSERT INTO memories (id, bank_id, ordinal, content, context, tags, "
                        "created_at, retained_at, document_id, content_hash, vector) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        [(r[0], bank_id, *r[1:]) for r in self.rows],
                    )
                if self.tags:
                    cur.executemany(
                        "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (%s, %s, %s)",
                        [(bank_id, tag, ordinal) for ordinal, tag in self.tags],
                    )
                cur.execute("UPDATE banks SET last_seq = %s WHERE id = %s", (self.seq, bank_id))
                cur.execute(NOTIFY, (channel, f"{bank_id} {self.seq}"))
        return WriteResult(
            self.bank,
            bank_id,
            self.ids,
            Additions.from_rows(self.added.values()),
            self.removed,
            self.first_seq,
            self.seq,
            dim,
        )


class PostgresStore(PostgresBase):
    """The PostgreSQL implementation of :class:`memwire.store.Store` (docs/scaling.md)."""

    # -- banks -------------------------------------------------------------------------------

    @staticmethod
    def _lock_bank(conn: Conn, bank: str) -> tuple[int, int, str, str | None, int] | None:
        """The bank's ``(id, last_seq, config, embedder, dim)``, its row locked until commit."""
        found = conn.execute(
            "SELECT id, last_seq, config, embedder, dim FROM banks WHERE name = %s "
            "FOR NO KEY UPDATE",
            (bank,),
        ).fetchone()
        return None if found is None else (found[0], found[1], found[2], found[3], found[4])

    @staticmethod
    def _lock_bank_id(conn: Conn, bank_id: int) -> tuple[str, int, int] | None:
        """The bank's ``(name, last_seq, pruned_seq)``, its row locked until commit."""
        found = conn.execute(
            "SELECT name, last_seq, pruned_seq FROM banks WHERE id = %s FOR NO KEY UPDATE",
            (bank_id,),
        ).fetchone()
        return None if found is None else (found[0], found[1], found[2])

    @classmethod
    def _ensure_bank(cls, conn: Conn, bank: str) -> tuple[int, int, str, str | None, int]:
        found = cls._lock_bank(conn, bank)
        if found is not None:
            return found
        # Another writer creating the same bank makes this wait, then do nothing.
        conn.execute(
            "INSERT INTO banks (name, created_at) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
            (bank, format_utc(now_utc())),
        )
        found = cls._lock_bank(conn, bank)
        if found is None:  # created and deleted again in between
            raise StorageError("the bank could not be created")
        return found

    def head(self, bank: str) -> BankHead | None:
        found = self._one(
            lambda conn: conn.execute(
                "SELECT id, last_seq, config, embedder, dim FROM banks WHERE name = %s", (bank,)
            ).fetchone(),
            "read",
        )
        if found is None:
            return None
        return BankHead(found[0], found[1], json.loads(found[2]), found[3], found[4])

    def bank_names(self) -> list[str]:
        rows = self._one(
            lambda conn: conn.execute("SELECT name FROM banks ORDER BY name").fetchall(), "read"
        )
        return [r[0] for r in rows]

    def delete_bank(self, bank: str) -> bool:
        def tx(conn: Conn) -> bool:
            found = self._lock_bank(conn, bank)
            if found is None:
                return False
            bank_id = found[0]
            for table in (
                "memories",
                "archive",
                "memory_tags",
                "removals",
                "snapshots",
                "snapshot_parts",
                "reembeds",
                "staged_vectors",
            ):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = %s", (bank_id,))
            conn.execute("DELETE FROM banks WHERE id = %s", (bank_id,))
            self._notify(conn, bank_id, 0)
            return True

        return self._write(tx, "delete_bank")

    def get_config(self, bank: str) -> dict[str, Any] | None:
        head = self.head(bank)
        return None if head is None else head.config

    def update_config(
        self, bank: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        def tx(conn: Conn) -> dict[str, Any]:
            bank_id, _, raw, _, _ = self._ensure_bank(conn, bank)
            config = update(json.loads(raw))
            conn.execute(
                "UPDATE banks SET config = %s WHERE id = %s",
                (json.dumps(config, ensure_ascii=False, sort_keys=True), bank_id),
            )
            return config

        return self._write(tx, "set_config")

    # -- writes ------------------------------------------------------------------------------

    @staticmethod
    def _delete_row(
        conn: Conn,
        bank_id: int,
        ordinal: int,
        seq: int,
        archive: tuple[str, str | None, str] | None = None,
    ) -> None:
        if archive is not None:
            archive_sql.archive_live(conn, "%s", bank_id, ordinal, *archive)
        conn.execute("DELETE FROM memories WHERE bank_id = %s AND ordinal = %s", (bank_id, ordinal))
        conn.execute(
            "DELETE FROM memory_tags WHERE bank_id = %s AND ordinal = %s", (bank_id, ordinal)
        )
        conn.execute(
            "INSERT INTO removals (bank_id, seq, ordinal) VALUES (%s, %s, %s)",
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
        """Insert ``items`` in one transaction (:meth:`memwire.store.Store.write`).

        With the bank's row locked no other writer can change the bank, so one query reads
        everything the batch's decisions depend on (the ids, content hashes and document ids
        it names), the items are decided in order in Python exactly as the protocol says, and
        the changes go out in one pipeline: a round trip per batch, not per memory."""
        if space is None and any(item.vector is not None for item in items):
            raise InvalidInputError(NO_SPACE)

        def tx(conn: Conn) -> WriteResult:
            bank_id, first_seq, raw_config, embedder, dim = self._ensure_bank(conn, bank)
            dim = self._check_space(conn, bank, bank_id, (embedder, dim), space, items)
            extra = config_tags(json.loads(raw_config)) if config_tags is not None else []
            plan = _Plan(bank, first_seq)
            plan.read(conn, bank_id, items, imported)
            for item in items:
                plan.decide(item, imported, extra)
            return plan.apply(conn, bank_id, dim, self._channel)

        return self._write(tx, "retain")

    @staticmethod
    def _check_space(
        conn: Conn,
        bank: str,
        bank_id: int,
        recorded: tuple[str | None, int],
        space: Space | None,
        items: Sequence[NewMemory],
    ) -> int:
        """The bank's dimension after this write; records ``space`` at the first vector."""
        embedder, dim = recorded
        if space is None or not any(item.vector is not None for item in items):
            return int(dim)
        if embedder is None:
            conn.execute(
                "UPDATE banks SET embedder = %s, dim = %s WHERE id = %s",
                (space[0], space[1], bank_id),
            )
            return space[1]
        if (embedder, dim) != tuple(space):
            raise InvalidInputError(space_mismatch(bank, (embedder, dim), space))
        return int(dim)

    def _remove(
        self,
        conn: Conn,
        bank: str,
        bank_id: int,
        first_seq: int,
        victims: Sequence[tuple[str, int]],
        archive: tuple[str, str | None, str] | None = None,
    ) -> WriteResult:
        seq = first_seq
        removed: list[int] = []
        for _id, ordinal in victims:
            seq += 1
            self._delete_row(conn, bank_id, ordinal, seq, archive)
            removed.append(ordinal)
        if seq != first_seq:
            conn.execute("UPDATE banks SET last_seq = %s WHERE id = %s", (seq, bank_id))
            self._notify(conn, bank_id, seq)
        return WriteResult(
            bank, bank_id, [v[0] for v in victims], Additions.from_rows([]), removed, first_seq, seq
        )

    def forget(
        self, memory_id: str, bank: str | None, *, trash: bool = False
    ) -> WriteResult | None:
        archive = (TRASHED, None, format_utc(now_utc())) if trash else None

        def tx(conn: Conn) -> WriteResult | None:
            owner = conn.execute(
                "SELECT bank_id FROM memories WHERE id = %s", (memory_id,)
            ).fetchone()
            if owner is None:
                return None
            locked = self._lock_bank_id(conn, owner[0])
            if locked is None or (bank is not None and locked[0] != bank):
                return None
            # Read again under the lock: another writer may have removed it meanwhile.
            found = conn.execute(
                "SELECT ordinal FROM memories WHERE id = %s AND bank_id = %s",
                (memory_id, owner[0]),
            ).fetchone()
            if found is None:
                return None
            return self._remove(
                conn, locked[0], owner[0], locked[1], [(memory_id, found[0])], archive
            )

        return self._write(tx, "forget")

    def retag(self, memory_id: str, bank: str, tags: Sequence[str]) -> WriteResult | None:
        def tx(conn: Conn) -> WriteResult | None:
            locked = self._lock_bank(conn, bank)
            if locked is None:
                return None
            bank_id, first_seq = locked[0], locked[1]
            found = conn.execute(
                "SELECT ordinal FROM memories WHERE id = %s AND bank_id = %s",
                (memory_id, bank_id),
            ).fetchone()
            if found is None:
                return None
            ordinal, seq = found[0], first_seq + 1
            conn.execute(
                "DELETE FROM memory_tags WHERE bank_id = %s AND ordinal = %s", (bank_id, ordinal)
            )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (%s, %s, %s)",
                    [(bank_id, tag, ordinal) for tag in tags],
                )
            conn.execute(
                "UPDATE memories SET tags = %s WHERE id = %s",
                (json.dumps(list(tags), ensure_ascii=False), memory_id),
            )
            conn.execute("UPDATE banks SET last_seq = %s WHERE id = %s", (seq, bank_id))
            self._notify(conn, bank_id, seq)
            return WriteResult(
                bank, bank_id, [memory_id], Additions.from_rows([]), [], first_seq, seq
            )

        return self._write(tx, "update")

    # -- history and trash -------------------------------------------------------------------

    def _locked_owner(self, conn: Conn, memory_id: str) -> tuple[int, str, int] | None:
        """The ``(bank_id, name, last_seq)`` of the bank holding ``memory_id`` (live or
        archived), its row locked."""
        owner = conn.execute(
            "SELECT bank_id FROM memories WHERE id = %s UNION ALL "
            "SELECT bank_id FROM archive WHERE id = %s",
            (memory_id, memory_id),
        ).fetchone()
        if owner is None:
            return None
        locked = self._lock_bank_id(conn, owner[0])
        return None if locked is None else (owner[0], locked[0], locked[1])

    def restore(
        self,
        memory_id: str,
        bank: str | None,
        *,
        vector: bytes | None = None,
        space: Space | None = None,
    ) -> WriteResult:
        def tx(conn: Conn) -> WriteResult:
            owner = self._locked_owner(conn, memory_id)
            found = (
                None
                if owner is None
                else conn.execute(
                    "SELECT 1 FROM archive WHERE id = %s AND bank_id = %s AND status = %s",
                    (memory_id, owner[0], TRASHED),
                ).fetchone()
            )
            if owner is None or found is None or (bank is not None and owner[1] != bank):
                raise NotFoundError(f"no memory {memory_id!r} in the trash")
            bank_id, name, first_seq = owner
            clash = archive_sql.restore_clash(conn, "%s", memory_id)
            if clash is not None:
                raise ConflictError(restore_conflict(memory_id, clash))
            seq = first_seq + 1
            if seq > MAX_ORDINAL:
                raise StorageError(EXHAUSTED)
            content, context, kept, tags = archive_sql.restore_row(
                conn, "%s", memory_id, bank_id, seq
            )
            if kept is None:
                kept = archive_sql.fill_vector(conn, "%s", memory_id, bank_id, vector, space)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES (%s, %s, %s)",
                    [(bank_id, tag, seq) for tag in json.loads(tags)],
                )
            conn.execute("UPDATE banks SET last_seq = %s WHERE id = %s", (seq, bank_id))
            self._notify(conn, bank_id, seq)
            added = _additions([(seq, content, context, kept)])
            return WriteResult(name, bank_id, [memory_id], added, [], first_seq, seq)

        return self._write(tx, "restore")

    def empty_trash(self, bank: str, before: str | None) -> list[str]:
        def tx(conn: Conn) -> list[str]:
            locked = self._lock_bank(conn, bank)
            if locked is None:
                return []
            gone = archive_sql.expired_trash(conn, "%s", locked[0], before)
            for memory_id, successor in gone:
                archive_sql.unlink(conn, "%s", memory_id, successor)
            return [g[0] for g in gone]

        return self._write(tx, "empty trash")

    def purge(self, memory_id: str, bank: str | None) -> WriteResult | None:
        def tx(conn: Conn) -> WriteResult | None:
            owner = self._locked_owner(conn, memory_id)
            row = None if owner is None else archive_sql.any_row(conn, "%s", memory_id, _row)
            if owner is None or row is None or (bank is not None and row.bank != bank):
                return None
            bank_id, name, first_seq = owner
            seq, removed = first_seq, []
            if row.status == LIVE:
                seq += 1
                self._delete_row(conn, bank_id, row.ordinal, seq)
                removed.append(row.ordinal)
            archive_sql.unlink(conn, "%s", memory_id, row.superseded_by)
            # A gap every index must pass: they rebuild from the rows, so the purged text's
            # terms leave their vocabularies (and the snapshot holding them goes now).
            seq += 1
            conn.execute(
                "UPDATE banks SET last_seq = %s, pruned_seq = %s WHERE id = %s",
                (seq, seq, bank_id),
            )
            for table in ("removals", "snapshots", "snapshot_parts"):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = %s", (bank_id,))
            self._notify(conn, bank_id, seq)
            return WriteResult(
                name, bank_id, [memory_id], Additions.from_rows([]), removed, first_seq, seq
            )

        return self._write(tx, "purge")

    def history(self, memory_id: str) -> list[Row]:
        return self._read(lambda conn: archive_sql.history(conn, "%s", memory_id, _row), "read")

    def trash_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        return self._one(
            lambda conn: archive_sql.trash_page(conn, "%s", bank, limit, offset, _row), "read"
        )

    def versions_at(self, bank_id: int, at: str) -> list[Version]:
        found = self._read(
            lambda conn: archive_sql.versions_at(conn, "%s", bank_id, at, _row), "recall"
        )
        return [Version(row, None if v is None else bytes(v)) for row, v in found]

    def vacuum(self) -> None:
        """VACUUM FULL of memwire's tables (each rewritten without its dead rows, so deleted
        text leaves the table files; each is locked while it is rewritten). Runs outside a
        transaction, as VACUUM must."""
        tables = (
            "memories, archive, memory_tags, removals, snapshots, snapshot_parts, "
            "staged_vectors, reembeds, banks"
        )
        self._one(lambda conn: conn.execute(f"VACUUM (FULL) {tables}"), "vacuum")

    def expire(self, bank: str, cutoff: str, dry_run: bool) -> Expired:
        def victims(conn: Conn, lock: bool) -> tuple[int, int, list[tuple[str, int]]] | None:
            if lock:
                locked = self._lock_bank(conn, bank)
                found = None if locked is None else (locked[0], locked[1])
            else:
                row = conn.execute(
                    "SELECT id, last_seq FROM banks WHERE name = %s", (bank,)
                ).fetchone()
                found = None if row is None else (row[0], row[1])
            if found is None:
                return None
            rows = conn.execute(
                "SELECT id, ordinal FROM memories WHERE bank_id = %s AND created_at < %s "
                "ORDER BY ordinal",
                (found[0], cutoff),
            ).fetchall()
            return found[0], found[1], [(r[0], r[1]) for r in rows]

        if dry_run:
            found = self._read(lambda conn: victims(conn, False), "sweep")
            return Expired([v[0] for v in found[2]] if found else [], None)

        def tx(conn: Conn) -> Expired:
            found = victims(conn, True)
            if found is None or not found[2]:
                return Expired([], None)
            result = self._remove(conn, bank, found[0], found[1], found[2])
            return Expired(result.ids, result)

        return self._write(tx, "sweep")

    # -- reads -------------------------------------------------------------------------------

    def archive_page(self, bank_id: int, after: int, limit: int) -> list[Version]:
        found = self._read(
            lambda conn: archive_sql.archive_page(conn, "%s", bank_id, after, limit, _row),
            "read",
        )
        return [Version(row, None if v is None else bytes(v)) for row, v in found]

    def import_archived(
        self, bank: str, items: Sequence[ArchivedMemory], space: Space | None = None
    ) -> list[str]:
        if space is None and any(item.memory.vector is not None for item in items):
            raise InvalidInputError(NO_SPACE)

        def tx(conn: Conn) -> list[str]:
            bank_id, seq, _, embedder, dim = self._ensure_bank(conn, bank)
            memories = [item.memory for item in items]
            self._check_space(conn, bank, bank_id, (embedder, dim), space, memories)
            added, seq = archive_sql.insert_archived(
                conn,
                "%s",
                bank_id,
                seq,
                [(i, _blob(i.memory.content), _blob(i.memory.context)) for i in items],
            )
            conn.execute("UPDATE banks SET last_seq = %s WHERE id = %s", (seq, bank_id))
            return added

        return self._write(tx, "import")

    def get(self, memory_id: str) -> Row | None:
        return self._one(lambda conn: archive_sql.any_row(conn, "%s", memory_id, _row), "read")

    def rows_by_ordinal(self, bank_id: int, ordinals: Sequence[int]) -> dict[int, Row]:
        if not ordinals:
            return {}
        rows = self._one(
            lambda conn: conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                "WHERE m.bank_id = %s AND m.ordinal = ANY(%s)",
                (bank_id, list(ordinals)),
            ).fetchall(),
            "read",
        )
        out: dict[int, Row] = {}
        for values in rows:
            row = _row(values)
            out[row.ordinal] = row
        return out

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        rows = self._one(
            lambda conn: conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                "WHERE b.name = %s ORDER BY m.created_at DESC, m.ordinal DESC "
                "LIMIT %s OFFSET %s",
                (bank, limit, offset),
            ).fetchall(),
            "read",
        )
        return [_row(r) for r in rows]

    def iter_rows(self, bank: str) -> Iterator[Row]:
        """Every memory of ``bank`` in ordinal (retain) order, read in pages."""
        after = -1
        while True:
            page = self._one(
                lambda conn, after=after: conn.execute(  # type: ignore[misc]
                    f"SELECT {_ROW_COLUMNS} FROM memories m JOIN banks b ON b.id = m.bank_id "
                    "WHERE b.name = %s AND m.ordinal > %s ORDER BY m.ordinal LIMIT %s",
                    (bank, after, _PAGE),
                ).fetchall(),
                "read",
            )
            if not page:
                return
            for values in page:
                yield _row(values)
            after = page[-1][2]

    def stats(self, bank: str) -> BankStats | None:
        def read(conn: Conn) -> BankStats | None:
            found = conn.execute("SELECT id FROM banks WHERE name = %s", (bank,)).fetchone()
            if found is None:
                return None
            totals = conn.execute(
                "SELECT COUNT(*), MIN(created_at), MAX(created_at) FROM memories "
                "WHERE bank_id = %s",
                (found[0],),
            ).fetchone()
            assert totals is not None
            tags = {
                r[0]: int(r[1])
                for r in conn.execute(
                    "SELECT tag, COUNT(*) FROM memory_tags WHERE bank_id = %s GROUP BY tag "
                    "ORDER BY tag",
                    (found[0],),
                ).fetchall()
            }
            return BankStats(int(totals[0]), tags, totals[1], totals[2])

        return self._read(read, "stats")

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
    ) -> Allowed:
        """Ordinals passing the filters, or ``Allowed(None)`` when nothing is filtered out."""

        def read(conn: Conn) -> Allowed:
            if not tags and not exclude_tags:
                return Allowed(None)
            where = ["m.bank_id = %s"]
            params: list[Any] = [bank_id]
            if tags:
                where.append(
                    "EXISTS (SELECT 1 FROM memory_tags t WHERE t.bank_id = m.bank_id "
                    "AND t.ordinal = m.ordinal AND t.tag = ANY(%s))"
                )
                params.append(list(tags))
            if exclude_tags:
                where.append(
                    "NOT EXISTS (SELECT 1 FROM memory_tags t WHERE t.bank_id = m.bank_id "
                    "AND t.ordinal = m.ordinal AND t.tag = ANY(%s))"
                )
                params.append(list(exclude_tags))
            rows = conn.execute(
                f"SELECT m.ordinal FROM memories m WHERE {' AND '.join(where)} ORDER BY m.ordinal",
                params,
            ).fetchall()
            return Allowed([r[0] for r in rows])

        return self._read(read, "recall")

    def expiring(self, bank_id: int, cutoff: str) -> Expiring:
        def read(conn: Conn) -> Expiring:
            rows = conn.execute(
                "SELECT ordinal FROM memories WHERE bank_id = %s AND created_at < %s "
                "ORDER BY ordinal",
                (bank_id, cutoff),
            ).fetchall()
            found = conn.execute(
                "SELECT MIN(created_at) FROM memories WHERE bank_id = %s AND created_at >= %s",
                (bank_id, cutoff),
            ).fetchone()
            return Expiring([r[0] for r in rows], None if found is None else found[0])

        return self._read(read, "recall")

    # -- index support -----------------------------------------------------------------------

    def changes_since(self, bank_id: int, since: int) -> Changes | None:
        def read(conn: Conn) -> Changes | None:
            found = conn.execute(
                "SELECT last_seq, pruned_seq FROM banks WHERE id = %s", (bank_id,)
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
                        "SELECT ordinal FROM removals WHERE bank_id = %s AND seq > %s ORDER BY seq",
                        (bank_id, since),
                    ).fetchall()
                ]
                if since > 0
                else []
            )
            with conn.cursor(binary=True) as cur:
                cur.execute(
                    "SELECT ordinal, content, context, vector FROM memories "
                    "WHERE bank_id = %s AND ordinal > %s ORDER BY ordinal",
                    (bank_id, since),
                )
                added = _additions(cur)
            return Changes(last_seq, added, removed, gap=False)

        return self._read(read, "replay")

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None:
        def read(conn: Conn) -> Snapshot | None:
            found = conn.execute(
                "SELECT seq, blob_id FROM snapshots WHERE bank_id = %s AND shell = %s",
                (bank_id, shell),
            ).fetchone()
            if found is None:
                return None
            with conn.cursor(binary=True) as cur:
                parts = [
                    r[0]
                    for r in cur.execute(
                        "SELECT data FROM snapshot_parts WHERE blob_id = %s ORDER BY part",
                        (found[1],),
                    ).fetchall()
                ]
            # One part (below SNAPSHOT_PART) is returned as read: never a second copy.
            data = bytes(parts[0]) if len(parts) == 1 else b"".join(parts)
            return Snapshot(found[0], data)

        return self._read(read, "load snapshot", bulk=True)

    @staticmethod
    def _snapshot_refused(
        current: Sequence[Any] | None, pruned_seq: int, seq: int, shell: str, replace_same: bool
    ) -> bool:
        """The protocol's "Snapshots" rules: whether a snapshot at ``seq`` must not be stored
        over ``current`` (``(seq, shell)`` or None)."""
        if seq < pruned_seq:
            return True  # older than a point every index must pass (e.g. a reembed)
        return (
            current is not None
            and current[1] == shell
            and (current[0] > seq or (current[0] == seq and not replace_same))
        )

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool:
        """Store a snapshot covering changes up to ``seq`` unless refused (the protocol's
        "Snapshots" rules), then prune the removal log up to it.

        Three steps, so that the bank's writers never wait for an upload (a snapshot of 100k
        memories is over 100 MiB): a read that refuses early what would be refused anyway;
        the upload of the bytes, with no lock on the bank; then a short transaction that locks
        the bank's row as every write does, checks the rules again (another replica may have
        stored a newer snapshot, or a reembed switched meanwhile), points the bank at the
        upload and drops the one it replaces. An upload left behind by a process that died
        in between is removed by a later save of the same bank."""

        def precheck(conn: Conn) -> bool:
            bank_row = conn.execute(
                "SELECT pruned_seq FROM banks WHERE id = %s", (bank_id,)
            ).fetchone()
            if bank_row is None:
                return True  # the bank was deleted meanwhile
            current = conn.execute(
                "SELECT seq, shell FROM snapshots WHERE bank_id = %s", (bank_id,)
            ).fetchone()
            return self._snapshot_refused(current, bank_row[0], seq, shell, replace_same)

        if self._read(precheck, "save snapshot"):
            return False
        created = format_utc(now_utc())

        def upload(conn: Conn) -> int:
            found = conn.execute("SELECT nextval('snapshot_blob_ids')").fetchone()
            assert found is not None
            view = memoryview(data)
            with conn.cursor() as cur:
                for part, start in enumerate(range(0, max(len(view), 1), SNAPSHOT_PART)):
                    cur.execute(
                        "INSERT INTO snapshot_parts (blob_id, part, bank_id, created_at, data) "
                        "VALUES (%s, %s, %s, %s, %b)",
                        (found[0], part, bank_id, created, view[start : start + SNAPSHOT_PART]),
                    )
            return int(found[0])

        blob_id = self._write(upload, "save snapshot", bulk=True)

        def swap(conn: Conn) -> bool:
            locked = self._lock_bank_id(conn, bank_id)
            current = conn.execute(
                "SELECT seq, shell, blob_id FROM snapshots WHERE bank_id = %s", (bank_id,)
            ).fetchone()
            if locked is None or self._snapshot_refused(
                current, locked[2], seq, shell, replace_same
            ):
                conn.execute("DELETE FROM snapshot_parts WHERE blob_id = %s", (blob_id,))
                return False
            conn.execute(
                "INSERT INTO snapshots (bank_id, seq, shell, created_at, blob_id) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (bank_id) DO UPDATE SET "
                "seq = excluded.seq, shell = excluded.shell, created_at = excluded.created_at, "
                "blob_id = excluded.blob_id",
                (bank_id, seq, shell, created, blob_id),
            )
            # The replaced upload, and any left by a process that died before its swap (an
            # hour old: an upload of a live process is swapped within seconds).
            conn.execute(
                "DELETE FROM snapshot_parts WHERE bank_id = %s AND blob_id <> %s "
                "AND (blob_id = %s OR created_at < %s)",
                (
                    bank_id,
                    blob_id,
                    -1 if current is None else current[2],
                    format_utc(now_utc() - timedelta(hours=1)),
                ),
            )
            conn.execute("DELETE FROM removals WHERE bank_id = %s AND seq <= %s", (bank_id, seq))
            conn.execute(
                "UPDATE banks SET pruned_seq = GREATEST(pruned_seq, %s) WHERE id = %s",
                (seq, bank_id),
            )
            return True

        try:
            return self._write(swap, "save snapshot")
        except BaseException:
            with contextlib.suppress(Exception):
                self._write(
                    lambda conn: conn.execute(
                        "DELETE FROM snapshot_parts WHERE blob_id = %s", (blob_id,)
                    ),
                    "save snapshot",
                    bulk=True,
                )
            raise

    # -- re-encoding (Memory.reembed) --------------------------------------------------------

    def reembed_state(self, bank: str) -> ReembedState | None:
        found = self._one(
            lambda conn: conn.execute(
                "SELECT r.bank_id, r.embedder, r.dim, r.done_through FROM reembeds r "
                "JOIN banks b ON b.id = r.bank_id WHERE b.name = %s",
                (bank,),
            ).fetchone(),
            "read",
        )
        if found is None:
            return None
        return ReembedState(found[0], Space(found[1], found[2]), found[3])

    def start_reembed(self, bank: str, space: Space) -> ReembedState:
        def tx(conn: Conn) -> ReembedState:
            found = self._lock_bank(conn, bank)
            if found is None:
                raise NotFoundError(f"no bank {bank!r}")
            bank_id = found[0]
            current = conn.execute(
                "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = %s", (bank_id,)
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
            conn.execute("DELETE FROM staged_vectors WHERE bank_id = %s", (bank_id,))
            conn.execute("DELETE FROM reembeds WHERE bank_id = %s", (bank_id,))
            conn.execute(
                "INSERT INTO reembeds (bank_id, embedder, dim, done_through, started_at) "
                "VALUES (%s, %s, %s, 0, %s)",
                (bank_id, space[0], space[1], format_utc(now_utc())),
            )
            return ReembedState(bank_id, Space(*space), 0)

        return self._write(tx, "reembed")

    def reembed_page(self, bank_id: int, after: int, limit: int) -> list[ReembedItem]:
        rows = self._one(
            lambda conn: conn.execute(
                "SELECT ordinal, content, context FROM memories "
                "WHERE bank_id = %s AND ordinal > %s ORDER BY ordinal LIMIT %s",
                (bank_id, after, limit),
            ).fetchall(),
            "reembed",
        )
        return [ReembedItem(r[0], bytes(r[1]).decode("utf-8"), _text(r[2])) for r in rows]

    def _check_reembed(self, conn: Conn, bank_id: int, space: Space) -> tuple[int, int]:
        """The bank's ``(last_seq, done_through)``, its row locked; raises unless its reembed
        is still the one into ``space``."""
        locked = self._lock_bank_id(conn, bank_id)
        if locked is None:
            raise NotFoundError(reembed_gone(bank_exists=False))
        current = conn.execute(
            "SELECT embedder, dim, done_through FROM reembeds WHERE bank_id = %s", (bank_id,)
        ).fetchone()
        if current is None:
            raise ConflictError(reembed_gone(bank_exists=True))
        if (current[0], current[1]) != tuple(space):
            raise ConflictError(reembed_moved(current[0]))
        return int(locked[1]), int(current[2])

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[StagedVector], through: int
    ) -> None:
        def tx(conn: Conn) -> None:
            self._check_reembed(conn, bank_id, space)
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO staged_vectors (bank_id, ordinal, vector) VALUES (%s, %s, %s) "
                    "ON CONFLICT (bank_id, ordinal) DO UPDATE SET vector = excluded.vector",
                    [(bank_id, v.ordinal, v.vector) for v in vectors],
                )
            conn.execute(
                "UPDATE reembeds SET done_through = GREATEST(done_through, %s) WHERE bank_id = %s",
                (through, bank_id),
            )

        self._write(tx, "reembed")

    def finish_reembed(self, bank_id: int, space: Space) -> int | None:
        """Swap the staged vectors in and record ``space`` as the bank's; None (nothing
        changed) when memories were added after the staged ones. Takes a seq and prunes the
        log up to it, so every index holding old vectors sees a gap and reloads."""

        def tx(conn: Conn) -> int | None:
            last_seq, done_through = self._check_reembed(conn, bank_id, space)
            if conn.execute(
                "SELECT 1 FROM memories WHERE bank_id = %s AND ordinal > %s LIMIT 1",
                (bank_id, done_through),
            ).fetchone():
                return None
            conn.execute(
                "UPDATE memories m SET vector = (SELECT s.vector FROM staged_vectors s "
                "WHERE s.bank_id = m.bank_id AND s.ordinal = m.ordinal) WHERE m.bank_id = %s",
                (bank_id,),
            )
            seq = last_seq + 1
            if seq > MAX_ORDINAL:
                raise StorageError(EXHAUSTED)
            conn.execute(
                "UPDATE banks SET embedder = %s, dim = %s, last_seq = %s, pruned_seq = %s "
                "WHERE id = %s",
                (space[0], space[1], seq, seq, bank_id),
            )
            for table in ("staged_vectors", "reembeds", "snapshots", "snapshot_parts", "removals"):
                conn.execute(f"DELETE FROM {table} WHERE bank_id = %s", (bank_id,))
            # The archive's vectors are of the old space: a restore takes one encoded anew.
            conn.execute("UPDATE archive SET vector = NULL WHERE bank_id = %s", (bank_id,))
            self._notify(conn, bank_id, seq)
            return seq

        return self._write(tx, "reembed")

    def count_rows(self, bank_id: int, after: int = 0) -> int:
        found = self._one(
            lambda conn: conn.execute(
                "SELECT COUNT(*) FROM memories WHERE bank_id = %s AND ordinal > %s",
                (bank_id, after),
            ).fetchone(),
            "read",
        )
        return 0 if found is None else int(found[0])
