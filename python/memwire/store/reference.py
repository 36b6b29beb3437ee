"""An in-memory :class:`~memwire.store.Store` in plain Python: the protocol's semantics
(:mod:`memwire.store.protocol`) written to be read, and a store for tests::

    from memwire import Memory
    from memwire.store import ReferenceStore

    with Memory(store=ReferenceStore()) as memory:
        memory.retain("the staging DB is on port 5433")

Nothing is durable (``durable`` is False, so :class:`memwire.Memory` writes no index
snapshots to it, though the store keeps any it is given). One lock guards everything.
:meth:`ReferenceStore.write`, the one change that can fail part way, works on a copy of its
bank that replaces the bank only when nothing raised (so a write costs time linear in the
bank's size: a reference, not a fast store); every other change checks everything before it
touches anything.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memwire._dates import format_utc, now_utc
from memwire.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from memwire.store.history import check_supersedes, restore_conflict, state_of, walk_chain
from memwire.store.protocol import (
    CLOSED,
    EXHAUSTED,
    LIVE,
    MAX_ORDINAL,
    NO_SPACE,
    SUPERSEDED,
    TRASHED,
    Addition,
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

__all__ = ["ReferenceStore"]


@dataclass(frozen=True, slots=True)
class _Memory:
    row: Row
    content_hash: bytes
    vector: bytes | None


@dataclass(slots=True)
class _Reembed:
    space: Space
    done_through: int = 0
    staged: dict[int, bytes | None] = field(default_factory=dict)


@dataclass(slots=True)
class _Bank:
    id: int
    name: str
    last_seq: int = 0
    pruned_seq: int = 0  # the removal log holds every removal after this seq
    config: str = "{}"  # JSON text, as a store keeps it
    space: Space | None = None
    rows: dict[int, _Memory] = field(default_factory=dict)  # by ordinal: insertion order
    by_id: dict[str, int] = field(default_factory=dict)  # id -> ordinal
    by_hash: dict[bytes, int] = field(default_factory=dict)  # memories without a document id
    by_document: dict[str, int] = field(default_factory=dict)
    removals: list[tuple[int, int]] = field(default_factory=list)  # (seq, ordinal), by seq
    archive: dict[str, _Memory] = field(default_factory=dict)  # superseded and trashed, by id
    snapshot: tuple[int, str, bytes] | None = None  # (seq, shell, data)
    reembed: _Reembed | None = None

    def copy(self) -> _Bank:
        """A copy a write may change (a write never touches the snapshot or the reembed)."""
        return dataclasses.replace(
            self,
            rows=dict(self.rows),
            by_id=dict(self.by_id),
            by_hash=dict(self.by_hash),
            by_document=dict(self.by_document),
            removals=list(self.removals),
            archive=dict(self.archive),
        )

    def since(self, seq: int) -> Additions:
        """The live memories with ordinals above ``seq``."""
        return Additions.of(
            Addition(o, m.row.content, m.row.context, m.vector)
            for o, m in self.rows.items()
            if o > seq
        )

    def remove(
        self, ordinal: int, status: str | None = None, by: str | None = None, at: str = ""
    ) -> None:
        """Remove a live memory as the next change; with ``status``, into the archive."""
        gone = self.rows.pop(ordinal)
        del self.by_id[gone.row.id]
        if gone.row.document_id is None:
            del self.by_hash[gone.content_hash]
        else:
            del self.by_document[gone.row.document_id]
        self.last_seq += 1
        self.removals.append((self.last_seq, ordinal))
        if status is not None:
            row = dataclasses.replace(gone.row, status=status, superseded_by=by, archived_at=at)
            self.archive[row.id] = dataclasses.replace(gone, row=row)

    def record_space(self, space: Space) -> None:
        """Record ``space`` at the bank's first vector; refuse vectors of another."""
        if self.space is None:
            self.space = Space(*space)
        elif self.space != space:
            raise InvalidInputError(space_mismatch(self.name, self.space, space))

    def add(self, item: NewMemory, tags: tuple[str, ...]) -> None:
        """Add a memory as the next change: its seq is its ordinal."""
        row = Row(
            item.id,
            self.name,
            0,
            item.content,
            item.context,
            tags,
            item.created_at,
            item.retained_at,
            item.document_id,
        )
        self.insert(_Memory(row, item.content_hash, item.vector))

    def insert(self, memory: _Memory) -> None:
        """Make ``memory`` live as the next change: its seq is its ordinal."""
        ordinal = self.last_seq + 1
        if ordinal > MAX_ORDINAL:
            raise StorageError(EXHAUSTED)
        row = dataclasses.replace(
            memory.row, ordinal=ordinal, status=LIVE, superseded_by=None, archived_at=None
        )
        self.rows[ordinal] = dataclasses.replace(memory, row=row)
        self.by_id[row.id] = ordinal
        if row.document_id is None:
            self.by_hash[memory.content_hash] = ordinal
        else:
            self.by_document[row.document_id] = ordinal
        self.last_seq = ordinal

    def live_clash(self, memory: _Memory) -> str | None:
        """The id of a live memory that ``memory`` cannot be live beside (its document's, or
        one of the same content among memories without a document id)."""
        if memory.row.document_id is not None:
            found = self.by_document.get(memory.row.document_id)
        else:
            found = self.by_hash.get(memory.content_hash)
        return None if found is None else self.rows[found].row.id

    def unlink(self, memory_id: str, successor: str | None) -> None:
        """Delete ``memory_id`` from the archive and relink what it superseded past it."""
        self.archive.pop(memory_id, None)
        for key, old in list(self.archive.items()):
            if old.row.superseded_by == memory_id:
                row = dataclasses.replace(old.row, superseded_by=successor)
                self.archive[key] = dataclasses.replace(old, row=row)


class ReferenceStore:
    """The whole :class:`~memwire.store.Store` protocol on dicts, thread-safe, not durable."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._banks: dict[str, _Bank] = {}
        self._names: dict[int, str] = {}  # bank id -> name
        self._next_id = 1  # bank ids are never reused
        self._closed = False

    @property
    def durable(self) -> bool:
        return False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._banks.clear()
            self._names.clear()

    # -- plumbing ----------------------------------------------------------------------------

    def _open(self) -> None:
        if self._closed:
            raise StorageError(CLOSED)

    def _named(self, bank: str) -> _Bank | None:
        self._open()
        return self._banks.get(bank)

    def _by_id(self, bank_id: int) -> _Bank | None:
        self._open()
        name = self._names.get(bank_id)
        return None if name is None else self._banks[name]

    def _draft(self, bank: str) -> _Bank:
        """A copy of ``bank`` to change (a new bank if there is none), installed by _commit."""
        found = self._named(bank)
        return found.copy() if found is not None else _Bank(self._next_id, bank)

    def _spaced_draft(
        self, bank: str, space: Space | None, vectors: Sequence[bytes | None]
    ) -> _Bank:
        """:meth:`_draft`, with ``space`` recorded when ``vectors`` has one (refused without
        a space or of another space, before anything changes)."""
        has_vectors = any(v is not None for v in vectors)
        if space is None and has_vectors:
            raise InvalidInputError(NO_SPACE)
        draft = self._draft(bank)
        if space is not None and has_vectors:
            draft.record_space(space)
        return draft

    def _commit(self, draft: _Bank) -> None:
        if draft.name not in self._banks:
            self._next_id += 1
        self._banks[draft.name] = draft
        self._names[draft.id] = draft.name

    def _holds(self, memory_id: str, draft: _Bank) -> bool:
        """Whether the store, with ``draft`` in place of its bank, has a memory ``memory_id``."""
        return self._find(memory_id, draft) is not None

    def _find(self, memory_id: str, draft: _Bank | None = None) -> Row | None:
        """The row of ``memory_id``, live or archived, in any bank (``draft`` in place of its
        bank)."""
        banks = [b for b in self._banks.values() if draft is None or b.name != draft.name]
        for found in banks if draft is None else [draft, *banks]:
            ordinal = found.by_id.get(memory_id)
            if ordinal is not None:
                return found.rows[ordinal].row
            if memory_id in found.archive:
                return found.archive[memory_id].row
        return None

    # -- banks -------------------------------------------------------------------------------

    def head(self, bank: str) -> BankHead | None:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return None
            config = json.loads(found.config)
            if found.space is None:
                return BankHead(found.id, found.last_seq, config)
            return BankHead(found.id, found.last_seq, config, *found.space)

    def bank_names(self) -> list[str]:
        with self._lock:
            self._open()
            return sorted(self._banks)

    def delete_bank(self, bank: str) -> bool:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return False
            del self._banks[bank]
            del self._names[found.id]
            return True

    def get_config(self, bank: str) -> dict[str, Any] | None:
        with self._lock:
            found = self._named(bank)
            return None if found is None else json.loads(found.config)

    def update_config(
        self, bank: str, update: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> dict[str, Any]:
        with self._lock:
            found = self._named(bank)
            config = update(json.loads(found.config if found is not None else "{}"))
            text = json.dumps(config, ensure_ascii=False, sort_keys=True)
            if found is None:
                found = _Bank(self._next_id, bank)
                self._commit(found)
            found.config = text
            return config

    # -- writes ------------------------------------------------------------------------------

    def write(
        self,
        bank: str,
        items: Sequence[NewMemory],
        config_tags: Callable[[Mapping[str, Any]], list[str]] | None = None,
        imported: bool = False,
        space: Space | None = None,
    ) -> WriteResult:
        with self._lock:
            draft = self._spaced_draft(bank, space, [item.vector for item in items])
            extra = config_tags(json.loads(draft.config)) if config_tags is not None else []
            first_seq = draft.last_seq
            ids: list[str] = []
            removed: list[int] = []
            for item in items:
                if imported and self._holds(item.id, draft):
                    ids.append(item.id)
                    continue
                check_supersedes(bank, item.supersedes, lambda i: state_of(self._find(i, draft)))
                resolved: str | None = None  # the live memory the item is a duplicate of
                replaced: int | None = None  # its document's memory, which it replaces
                if item.document_id is None:
                    same = draft.by_hash.get(item.content_hash)
                    if same is not None and draft.rows[same].row.id not in item.supersedes:
                        resolved = draft.rows[same].row.id
                else:
                    prev = draft.by_document.get(item.document_id)
                    if prev is not None:
                        old = draft.rows[prev]
                        if (
                            old.content_hash == item.content_hash
                            and old.row.id not in item.supersedes
                        ):
                            resolved = old.row.id
                        elif item.update_mode == "append":
                            raise ConflictError(document_conflict(bank, item.document_id))
                        else:
                            replaced = prev
                target = resolved or item.id
                victims = [] if replaced is None else [replaced]
                victims.extend(
                    draft.by_id[i] for i in dict.fromkeys(item.supersedes) if i != target
                )
                for ordinal in dict.fromkeys(victims):
                    draft.remove(ordinal, SUPERSEDED, target, item.retained_at)
                    if ordinal <= first_seq:
                        removed.append(ordinal)
                if resolved is not None:
                    ids.append(resolved)
                    continue
                if self._holds(item.id, draft):
                    raise StorageError("a memory could not be stored")
                tags = item.tags + tuple(t for t in extra if t not in item.tags)
                draft.add(item, tags)
                ids.append(item.id)
            added = draft.since(first_seq)
            self._commit(draft)
            dim = draft.space.dim if draft.space is not None else 0
            return WriteResult(bank, draft.id, ids, added, removed, first_seq, draft.last_seq, dim)

    def forget(
        self, memory_id: str, bank: str | None, *, trash: bool = False
    ) -> WriteResult | None:
        with self._lock:
            self._open()
            for found in self._banks.values():
                ordinal = found.by_id.get(memory_id)
                if ordinal is None:
                    continue
                if bank is not None and found.name != bank:
                    return None
                return self._remove(found, [ordinal], TRASHED if trash else None)
            return None

    def retag(self, memory_id: str, bank: str, tags: Sequence[str]) -> WriteResult | None:
        with self._lock:
            found = self._named(bank)
            ordinal = None if found is None else found.by_id.get(memory_id)
            if found is None or ordinal is None:
                return None
            memory = found.rows[ordinal]
            row = dataclasses.replace(memory.row, tags=tuple(tags))
            found.rows[ordinal] = dataclasses.replace(memory, row=row)
            found.last_seq += 1
            return WriteResult(
                bank,
                found.id,
                [memory_id],
                Additions.of(()),
                [],
                found.last_seq - 1,
                found.last_seq,
            )

    def expire(self, bank: str, cutoff: str, dry_run: bool) -> Expired:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return Expired([], None)
            victims = [o for o, m in found.rows.items() if m.row.created_at < cutoff]
            ids = [found.rows[o].row.id for o in victims]
            if dry_run or not victims:
                return Expired(ids, None)
            return Expired(ids, self._remove(found, victims))

    @staticmethod
    def _remove(found: _Bank, ordinals: list[int], status: str | None = None) -> WriteResult:
        first_seq = found.last_seq
        ids = [found.rows[o].row.id for o in ordinals]
        at = format_utc(now_utc())
        for ordinal in ordinals:
            found.remove(ordinal, status, None, at)
        return WriteResult(
            found.name, found.id, ids, Additions.of(()), ordinals, first_seq, found.last_seq
        )

    # -- history and trash -------------------------------------------------------------------

    def _archived(self, memory_id: str, bank: str | None) -> _Bank | None:
        """The bank whose archive holds ``memory_id`` (in ``bank``, when given)."""
        for found in self._banks.values():
            if memory_id in found.archive:
                return found if bank is None or found.name == bank else None
        return None

    def restore(
        self,
        memory_id: str,
        bank: str | None,
        *,
        vector: bytes | None = None,
        space: Space | None = None,
    ) -> WriteResult:
        with self._lock:
            self._open()
            found = self._archived(memory_id, bank)
            memory = None if found is None else found.archive[memory_id]
            if found is None or memory is None or memory.row.status != TRASHED:
                raise NotFoundError(f"no memory {memory_id!r} in the trash")
            clash = found.live_clash(memory)
            if clash is not None:
                raise ConflictError(restore_conflict(memory_id, clash))
            if memory.vector is None and vector is not None and space == found.space:
                memory = dataclasses.replace(memory, vector=vector)
            first_seq = found.last_seq
            found.insert(memory)
            del found.archive[memory_id]
            added = found.since(first_seq)
            return WriteResult(
                found.name, found.id, [memory_id], added, [], first_seq, found.last_seq
            )

    def empty_trash(self, bank: str, before: str | None) -> list[str]:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return []
            gone = [
                m.row.id
                for m in found.archive.values()
                if m.row.status == TRASHED
                and (before is None or (m.row.archived_at or "") < before)
            ]
            for memory_id in gone:
                found.unlink(memory_id, found.archive[memory_id].row.superseded_by)
            return gone

    def purge(self, memory_id: str, bank: str | None) -> WriteResult | None:
        with self._lock:
            row = self._find(memory_id)
            if row is None or (bank is not None and row.bank != bank):
                return None
            found = self._banks[row.bank]
            first_seq = found.last_seq
            removed: list[int] = []
            if row.status == LIVE:
                found.remove(row.ordinal)
                removed.append(row.ordinal)
            found.unlink(memory_id, row.superseded_by)
            # A gap: every index rebuilds from the rows, dropping the purged text's vocabulary.
            found.last_seq = found.pruned_seq = found.last_seq + 1
            found.removals = []
            found.snapshot = None
            return WriteResult(
                found.name,
                found.id,
                [memory_id],
                Additions.of(()),
                removed,
                first_seq,
                found.last_seq,
            )

    def history(self, memory_id: str) -> list[Row]:
        with self._lock:
            self._open()
            start = self._find(memory_id)
            if start is None:
                return []
            archive = [m.row for m in self._banks[start.bank].archive.values()]
            return walk_chain(
                start,
                self._find,
                lambda ids: [r for r in archive if r.superseded_by in ids],
            )

    def trash_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return []
            rows = [m.row for m in found.archive.values() if m.row.status == TRASHED]
        rows.sort(key=lambda r: (r.archived_at or "", r.id), reverse=True)
        return rows[offset : offset + limit]

    def versions_at(self, bank_id: int, at: str) -> list[Version]:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None:
                return []
            live = [m for m in found.rows.values() if m.row.retained_at <= at]
            gone = [
                m
                for m in found.archive.values()
                if m.row.retained_at <= at < (m.row.archived_at or "")
            ]
        return [
            Version(m.row, m.vector) for m in sorted([*live, *gone], key=lambda m: m.row.ordinal)
        ]

    def archive_page(self, bank_id: int, after: int, limit: int) -> list[Version]:
        with self._lock:
            found = self._by_id(bank_id)
            archive = [] if found is None else list(found.archive.values())
        page = sorted((m for m in archive if m.row.ordinal > after), key=lambda m: m.row.ordinal)
        return [Version(m.row, m.vector) for m in page[:limit]]

    def import_archived(
        self, bank: str, items: Sequence[ArchivedMemory], space: Space | None = None
    ) -> list[str]:
        with self._lock:
            draft = self._spaced_draft(bank, space, [item.memory.vector for item in items])
            added: list[str] = []
            for item in items:
                new = item.memory
                if self._holds(new.id, draft):
                    continue
                if draft.last_seq + 1 > MAX_ORDINAL:
                    raise StorageError(EXHAUSTED)
                draft.last_seq += 1
                row = Row(
                    new.id,
                    bank,
                    draft.last_seq,
                    new.content,
                    new.context,
                    new.tags,
                    new.created_at,
                    new.retained_at,
                    new.document_id,
                    item.status,
                    item.superseded_by,
                    item.archived_at,
                )
                draft.archive[new.id] = _Memory(row, new.content_hash, new.vector)
                added.append(new.id)
            self._commit(draft)
            return added

    def vacuum(self) -> None:
        with self._lock:
            self._open()  # nothing is kept after it is deleted

    # -- reads -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Row | None:
        with self._lock:
            self._open()
            return self._find(memory_id)

    def rows_by_ordinal(self, bank_id: int, ordinals: Sequence[int]) -> dict[int, Row]:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None:
                return {}
            return {o: found.rows[o].row for o in ordinals if o in found.rows}

    def list_rows(self, bank: str, limit: int, offset: int) -> list[Row]:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return []
            rows = [m.row for m in found.rows.values()]
        rows.sort(key=lambda r: (r.created_at, r.ordinal), reverse=True)
        return rows[offset : offset + limit]

    def iter_rows(self, bank: str) -> Iterator[Row]:
        with self._lock:
            found = self._named(bank)
            rows = [] if found is None else [m.row for m in found.rows.values()]
        yield from rows

    def stats(self, bank: str) -> BankStats | None:
        with self._lock:
            found = self._named(bank)
            if found is None:
                return None
            rows = [m.row for m in found.rows.values()]
        counts: dict[str, int] = {}
        for row in rows:
            for tag in row.tags:
                counts[tag] = counts.get(tag, 0) + 1
        dates = [r.created_at for r in rows]
        return BankStats(
            len(rows),
            dict(sorted(counts.items())),
            min(dates) if dates else None,
            max(dates) if dates else None,
        )

    def allowed(
        self,
        bank_id: int,
        tags: Sequence[str],
        exclude_tags: Sequence[str],
    ) -> Allowed:
        with self._lock:
            found = self._by_id(bank_id)
            rows = [] if found is None else [m.row for m in found.rows.values()]
        if not tags and not exclude_tags:
            return Allowed(None)
        want, avoid = set(tags), set(exclude_tags)
        return Allowed(
            [
                r.ordinal
                for r in rows
                if (not want or want.intersection(r.tags)) and not avoid.intersection(r.tags)
            ]
        )

    def expiring(self, bank_id: int, cutoff: str) -> Expiring:
        with self._lock:
            found = self._by_id(bank_id)
            rows = [] if found is None else [m.row for m in found.rows.values()]
        return Expiring(
            sorted(r.ordinal for r in rows if r.created_at < cutoff),
            min((r.created_at for r in rows if r.created_at >= cutoff), default=None),
        )

    # -- index support -----------------------------------------------------------------------

    def changes_since(self, bank_id: int, since: int) -> Changes | None:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None:
                return None
            if since > 0 and found.pruned_seq > since:
                return Changes(found.last_seq, Additions.of(()), [], gap=True)
            removed = [o for seq, o in found.removals if seq > since] if since > 0 else []
            return Changes(found.last_seq, found.since(since), removed, gap=False)

    def load_snapshot(self, bank_id: int, shell: str) -> Snapshot | None:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None or found.snapshot is None or found.snapshot[1] != shell:
                return None
            return Snapshot(found.snapshot[0], found.snapshot[2])

    def save_snapshot(
        self, bank_id: int, seq: int, data: bytes, shell: str, *, replace_same: bool = False
    ) -> bool:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None or seq < found.pruned_seq:
                return False
            current = found.snapshot
            if (
                current is not None
                and current[1] == shell
                and (current[0] > seq or (current[0] == seq and not replace_same))
            ):
                return False
            found.snapshot = (seq, shell, bytes(data))
            found.removals = [(s, o) for s, o in found.removals if s > seq]
            found.pruned_seq = max(found.pruned_seq, seq)
            return True

    # -- re-encoding -------------------------------------------------------------------------

    def reembed_state(self, bank: str) -> ReembedState | None:
        with self._lock:
            found = self._named(bank)
            if found is None or found.reembed is None:
                return None
            return ReembedState(found.id, found.reembed.space, found.reembed.done_through)

    def start_reembed(self, bank: str, space: Space) -> ReembedState:
        with self._lock:
            found = self._named(bank)
            if found is None:
                raise NotFoundError(f"no bank {bank!r}")
            current = found.reembed
            if current is None or current.space != space:
                current = found.reembed = _Reembed(Space(*space))
            return ReembedState(found.id, current.space, current.done_through)

    def reembed_page(self, bank_id: int, after: int, limit: int) -> list[ReembedItem]:
        with self._lock:
            found = self._by_id(bank_id)
            if found is None:
                return []
            page = [m.row for o, m in found.rows.items() if o > after][:limit]
        return [ReembedItem(r.ordinal, r.content, r.context) for r in page]

    def _reembed(self, bank_id: int, space: Space) -> tuple[_Bank, _Reembed]:
        found = self._by_id(bank_id)
        if found is None:
            raise NotFoundError(reembed_gone(bank_exists=False))
        if found.reembed is None:
            raise ConflictError(reembed_gone(bank_exists=True))
        if found.reembed.space != space:
            raise ConflictError(reembed_moved(found.reembed.space.embedder))
        return found, found.reembed

    def stage_vectors(
        self, bank_id: int, space: Space, vectors: Sequence[StagedVector], through: int
    ) -> None:
        with self._lock:
            _, reembed = self._reembed(bank_id, space)
            for staged in vectors:
                reembed.staged[staged.ordinal] = staged.vector
            reembed.done_through = max(reembed.done_through, through)

    def finish_reembed(self, bank_id: int, space: Space) -> int | None:
        with self._lock:
            found, reembed = self._reembed(bank_id, space)
            if any(o > reembed.done_through for o in found.rows):
                return None
            seq = found.last_seq + 1
            if seq > MAX_ORDINAL:
                raise StorageError(EXHAUSTED)
            found.rows = {
                o: dataclasses.replace(m, vector=reembed.staged.get(o))
                for o, m in found.rows.items()
            }
            found.archive = {
                k: dataclasses.replace(m, vector=None) for k, m in found.archive.items()
            }
            found.space = reembed.space
            found.last_seq = found.pruned_seq = seq
            found.removals = []
            found.snapshot = None
            found.reembed = None
            return seq

    def count_rows(self, bank_id: int, after: int = 0) -> int:
        with self._lock:
            found = self._by_id(bank_id)
            return 0 if found is None else sum(1 for o in found.rows if o > after)
