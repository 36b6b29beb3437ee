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

from memwire.errors import ConflictError, InvalidInputError, NotFoundError, StorageError
from memwire.store.protocol import (
    CLOSED,
    EXHAUSTED,
    MAX_ORDINAL,
    NO_SPACE,
    Addition,
    Additions,
    Allowed,
    BankHead,
    BankStats,
    Changes,
    Expired,
    NewMemory,
    ReembedItem,
    ReembedState,
    Row,
    Snapshot,
    Space,
    StagedVector,
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
        )

    def since(self, seq: int) -> Additions:
        """The live memories with ordinals above ``seq``."""
        return Additions.of(
            Addition(o, m.row.content, m.row.context, m.vector)
            for o, m in self.rows.items()
            if o > seq
        )

    def remove(self, ordinal: int) -> None:
        """Remove a live memory as the next change."""
        gone = self.rows.pop(ordinal)
        del self.by_id[gone.row.id]
        if gone.row.document_id is None:
            del self.by_hash[gone.content_hash]
        else:
            del self.by_document[gone.row.document_id]
        self.last_seq += 1
        self.removals.append((self.last_seq, ordinal))

    def add(self, item: NewMemory, tags: tuple[str, ...]) -> None:
        """Add a memory as the next change: its seq is its ordinal."""
        ordinal = self.last_seq + 1
        if ordinal > MAX_ORDINAL:
            raise StorageError(EXHAUSTED)
        row = Row(
            item.id,
            self.name,
            ordinal,
            item.content,
            item.context,
            tags,
            item.created_at,
            item.retained_at,
            item.document_id,
        )
        self.rows[ordinal] = _Memory(row, item.content_hash, item.vector)
        self.by_id[item.id] = ordinal
        if item.document_id is None:
            self.by_hash[item.content_hash] = ordinal
        else:
            self.by_document[item.document_id] = ordinal
        self.last_seq = ordinal


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

    def _commit(self, draft: _Bank) -> None:
        if draft.name not in self._banks:
            self._next_id += 1
        self._banks[draft.name] = draft
        self._names[draft.id] = draft.name

    def _holds(self, memory_id: str, draft: _Bank) -> bool:
        """Whether the store, with ``draft`` in place of its bank, has a memory ``memory_id``."""
        return memory_id in draft.by_id or any(
            memory_id in b.by_id for name, b in self._banks.items() if name != draft.name
        )

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
        has_vectors = any(item.vector is not None for item in items)
        if space is None and has_vectors:
            raise InvalidInputError(NO_SPACE)
        with self._lock:
            draft = self._draft(bank)
            if space is not None and has_vectors:
                if draft.space is None:
                    draft.space = Space(*space)
                elif draft.space != space:
                    raise InvalidInputError(space_mismatch(bank, draft.space, space))
            extra = config_tags(json.loads(draft.config)) if config_tags is not None else []
            first_seq = draft.last_seq
            ids: list[str] = []
            removed: list[int] = []
            for item in items:
                if imported and self._holds(item.id, draft):
                    ids.append(item.id)
                    continue
                if item.document_id is None:
                    same = draft.by_hash.get(item.content_hash)
                    if same is not None:
                        ids.append(draft.rows[same].row.id)
                        continue
                else:
                    prev = draft.by_document.get(item.document_id)
                    if prev is not None:
                        old = draft.rows[prev]
                        if old.content_hash == item.content_hash:
                            ids.append(old.row.id)
                            continue
                        if item.update_mode == "append":
                            raise ConflictError(document_conflict(bank, item.document_id))
                        draft.remove(prev)
                        if prev <= first_seq:
                            removed.append(prev)
                if self._holds(item.id, draft):
                    raise StorageError("a memory could not be stored")
                tags = item.tags + tuple(t for t in extra if t not in item.tags)
                draft.add(item, tags)
                ids.append(item.id)
            added = draft.since(first_seq)
            self._commit(draft)
            dim = draft.space.dim if draft.space is not None else 0
            return WriteResult(bank, draft.id, ids, added, removed, first_seq, draft.last_seq, dim)

    def forget(self, memory_id: str, bank: str | None) -> WriteResult | None:
        with self._lock:
            self._open()
            for found in self._banks.values():
                ordinal = found.by_id.get(memory_id)
                if ordinal is None:
                    continue
                if bank is not None and found.name != bank:
                    return None
                return self._remove(found, [ordinal])
            return None

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
    def _remove(found: _Bank, ordinals: list[int]) -> WriteResult:
        first_seq = found.last_seq
        ids = [found.rows[o].row.id for o in ordinals]
        for ordinal in ordinals:
            found.remove(ordinal)
        return WriteResult(
            found.name, found.id, ids, Additions.of(()), ordinals, first_seq, found.last_seq
        )

    # -- reads -------------------------------------------------------------------------------

    def get(self, memory_id: str) -> Row | None:
        with self._lock:
            self._open()
            for found in self._banks.values():
                ordinal = found.by_id.get(memory_id)
                if ordinal is not None:
                    return found.rows[ordinal].row
            return None

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
        cutoff: str | None,
    ) -> Allowed:
        with self._lock:
            found = self._by_id(bank_id)
            rows = [] if found is None else [m.row for m in found.rows.values()]
        if cutoff is not None and not any(r.created_at < cutoff for r in rows):
            cutoff = None  # nothing is older: no filter
        if not tags and not exclude_tags and cutoff is None:
            return Allowed(None)
        want, avoid = set(tags), set(exclude_tags)
        return Allowed(
            [
                r.ordinal
                for r in rows
                if (not want or want.intersection(r.tags))
                and not avoid.intersection(r.tags)
                and (cutoff is None or r.created_at >= cutoff)
            ]
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
