"""Copying one store into another (``memwire migrate``): SQLite to PostgreSQL and back.

Only the source of truth is copied: every bank's config and its live memories with their ids,
dates, tags, context, document ids and vectors (verbatim: no embedder runs). Indexes and
snapshots are derived and rebuilt by the target's readers; an unfinished reembed is not copied
(run it again on the target). Memories go in retain order, in batches of one transaction each,
as imports: an id already in the target is skipped, so a copy that stopped (a crash, Ctrl-C, a
lost connection) is resumed by running it again, and running it twice copies nothing twice.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memwire.errors import NotFoundError
from memwire.store.protocol import NewMemory, Store

__all__ = ["BATCH", "BankCopy", "copy_store"]

BATCH = 1000


@dataclass
class BankCopy:
    """What the copy of one bank did."""

    bank: str
    total: int  # live memories in the source bank
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
    report = BankCopy(bank, source.count_rows(head.bank_id))
    if source.reembed_state(bank) is not None:
        report.notes.append("its unfinished reembed was not copied; run it again on the target")
    changes = source.changes_since(head.bank_id, 0)  # every live memory, with its vector
    if changes is None:
        return report
    ordinals = changes.added.ordinals
    vectors = dict(zip(ordinals, changes.added.vectors, strict=True))
    done = 0
    for start in range(0, len(ordinals), BATCH):
        chunk = ordinals[start : start + BATCH]
        rows = source.rows_by_ordinal(head.bank_id, chunk)
        items = [
            NewMemory(
                id=row.id,
                content=row.content,
                context=row.context,
                tags=row.tags,
                created_at=row.created_at,
                retained_at=row.retained_at,
                document_id=row.document_id,
                update_mode="replace",
                content_hash=hashlib.sha256(row.content.encode("utf-8")).digest(),
                vector=vectors[ordinal],
            )
            for ordinal in chunk
            if (row := rows.get(ordinal)) is not None  # removed since the replay was read
        ]
        space = head.space if any(i.vector is not None for i in items) else None
        result = target.write(bank, items, None, imported=True, space=space)
        added = len(result.added)
        report.copied += added
        report.skipped += len(items) - added
        done += len(items)
        if progress is not None:
            progress(report, done)
    return report
