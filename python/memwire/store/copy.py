"""Copying one store into another (``memwire migrate``): SQLite to PostgreSQL and back.

Only the source of truth is copied: every bank's config and its memories with their ids,
dates, tags, context, document ids and vectors (verbatim: no embedder runs), the live ones and
the archive's (superseded versions with their ``superseded_by`` and ``archived_at``, trashed
ones with when they were trashed), so ``history`` and ``trash`` read the same on the target.
Indexes and snapshots are derived and rebuilt by the target's readers; an unfinished reembed
is not copied (run it again on the target). Memories go in the source's ordinal order, in
batches of one transaction each, as imports: an id already in the target (live or archived) is
skipped, so a copy that stopped (a crash, Ctrl-C, a lost connection) is resumed by running it
again, and running it twice copies nothing twice.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memwire.errors import NotFoundError
from memwire.store.protocol import ArchivedMemory, BankHead, NewMemory, Row, Store, Version

__all__ = ["BATCH", "BankCopy", "copy_store"]

BATCH = 1000


@dataclass
class BankCopy:
    """What the copy of one bank did."""

    bank: str
    total: int  # memories in the source bank: live, superseded and trashed
    archived: int = 0  # of which superseded or trashed
    copied: int = 0  # written into the target
    skipped: int = 0  # already there (a resumed or repeated copy)
    notes: list[str] = field(default_factory=list)


def copy_store(
    source: Store,
    target: Store,
    banks: Sequence[str] | None = None,
    progress: Callable[[BankCopy, int], None] | None = None,
) -> list[BankCopy]:
    """Copy ``banks`` (default: every bank) of ``source`` into ``target``; ``progress(bank,
    done)`` after each batch. A bank named but absent raises NotFoundError before anything is
    written."""
    names = source.bank_names() if banks is None else list(banks)
    present = set(source.bank_names())
    for name in names:
        if name not in present:
            raise NotFoundError(f"no bank {name!r} in the source store")
    return [_copy_bank(source, target, name, progress) for name in names]


def _copy_bank(
    source: Store,
    target: Store,
    bank: str,
    progress: Callable[[BankCopy, int], None] | None,
) -> BankCopy:
    head = source.head(bank)
    if head is None:  # deleted since the listing
        return BankCopy(bank, 0, notes=["deleted in the source during the copy"])
    config = dict(head.config)
    target.update_config(bank, lambda _current: config)
    if source.reembed_state(bank) is not None:
        notes = ["its unfinished reembed was not copied; run it again on the target"]
    else:
        notes = []
    changes = source.changes_since(head.bank_id, 0)  # every live memory, with its vector
    live = (
        []
        if changes is None
        else list(zip(changes.added.ordinals, changes.added.vectors, strict=True))
    )
    archived = _archive(source, head.bank_id)
    report = BankCopy(bank, len(live) + len(archived), archived=len(archived), notes=notes)
    # Live and archived memories go in the source's ordinal order, so the target's ordinals
    # keep their order (what an as-of recall of the copy ties on).
    stream = heapq.merge(
        ((ordinal, vector) for ordinal, vector in live),
        ((v.row.ordinal, v) for v in archived),
        key=lambda pair: pair[0],
    )
    done = 0
    for is_live, run in itertools.groupby(
        stream, key=lambda pair: not isinstance(pair[1], Version)
    ):
        items = list(run)
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            if is_live:
                added, offered = _copy_live(source, target, head, bank, chunk)
            else:
                added, offered = _copy_archived(target, head, bank, chunk)
            report.copied += added
            report.skipped += offered - added
            done += len(chunk)
            if progress is not None:
                progress(report, done)
    return report


def _archive(source: Store, bank_id: int) -> list[Version]:
    """Every archived memory of the bank, by ordinal."""
    found: list[Version] = []
    while page := source.archive_page(bank_id, found[-1].row.ordinal if found else 0, BATCH):
        found.extend(page)
    return found


def _copy_live(
    source: Store, target: Store, head: BankHead, bank: str, chunk: Sequence[tuple[int, Any]]
) -> tuple[int, int]:
    """Write live memories (``(ordinal, vector)``) as an import; (added, offered)."""
    ordinals = [ordinal for ordinal, _ in chunk]
    vectors = dict(chunk)
    rows = source.rows_by_ordinal(head.bank_id, ordinals)
    items = [
        _new(row, vectors[ordinal])
        for ordinal in ordinals
        if (row := rows.get(ordinal)) is not None  # removed since the replay was read
    ]
    space = head.space if any(i.vector is not None for i in items) else None
    result = target.write(bank, items, None, imported=True, space=space)
    return len(result.added), len(items)


def _copy_archived(
    target: Store, head: BankHead, bank: str, chunk: Sequence[tuple[int, Any]]
) -> tuple[int, int]:
    """Write archived memories (``(ordinal, Version)``) as they are; (added, offered)."""
    items = [
        ArchivedMemory(
            _new(v.row, v.vector), v.row.status, v.row.superseded_by, v.row.archived_at or ""
        )
        for _, v in chunk
    ]
    space = head.space if any(i.memory.vector is not None for i in items) else None
    return len(target.import_archived(bank, items, space)), len(items)


def _new(row: Row, vector: bytes | None) -> NewMemory:
    return NewMemory(
        id=row.id,
        content=row.content,
        context=row.context,
        tags=row.tags,
        created_at=row.created_at,
        retained_at=row.retained_at,
        document_id=row.document_id,
        update_mode="replace",
        content_hash=hashlib.sha256(row.content.encode("utf-8")).digest(),
        vector=vector,
    )
