"""Export and import: versioned JSONL that round-trips a store exactly.

The first line is a header, then per bank one ``bank`` line (its config) followed by its
``memory`` lines in the store's order (the order memories became versions of the bank)::

    {"format": "memwire.export", "version": 2, "exported_at": "2024-05-01T09:30:00.000000Z"}
    {"type": "bank", "bank": "default", "config": {"ttl_days": 30}}
    {"type": "memory", "bank": "default", "id": "mem_...", "content": "...", "context": null,
     "tags": ["x"], "created_at": "...Z", "retained_at": "...Z", "document_id": null}
    {"type": "memory", ..., "status": "superseded", "superseded_by": "mem_...",
     "archived_at": "...Z"}

Version 2 carries the history and trash: a superseded or trashed memory's line adds
``status`` (``"superseded"`` or ``"trashed"``), ``superseded_by`` and ``archived_at`` (when it
stopped being live); a live memory's line has none of them. Version 1 (memwire before the
archive) had live memories only; its files still import. A reader refuses a version it does
not know, so an older memwire refuses a version 2 file before writing anything.

Ids, dates (UTC, microseconds), tags, context, document ids, statuses and supersession links
survive the round trip, and so does the recall order (memories are re-written in their
original order). Imported text goes through the same validation and redaction as any retain.
Import is idempotent: a memory whose id the store holds already (live or archived) is skipped.
"""

from __future__ import annotations

import heapq
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from memwire import _dates
from memwire.errors import InvalidInputError, MemwireError
from memwire.store import SUPERSEDED, TRASHED, ArchivedMemory, NewMemory, Row, Store

__all__ = ["FORMAT", "READABLE", "VERSION", "Item", "dump", "load"]

FORMAT = "memwire.export"
VERSION = 2
READABLE = (1, 2)  # the versions load() reads
MEMORY_KEYS = frozenset(
    ("type", "bank", "id", "content", "context", "tags", "created_at", "retained_at", "document_id")
)
ARCHIVE_KEYS = frozenset(("status", "superseded_by", "archived_at"))  # version 2 on
ARCHIVED = (SUPERSEDED, TRASHED)
PAGE = 1000

# What load() gives per bank, in file order: live memories and archived ones.
Item = NewMemory | ArchivedMemory


@contextmanager
def _opened(target: str | os.PathLike[str] | IO[str], mode: str) -> Iterator[IO[str]]:
    if isinstance(target, (str, os.PathLike)):
        try:
            handle = open(target, mode, encoding="utf-8", newline="\n")  # noqa: SIM115
        except OSError as exc:
            raise InvalidInputError(f"cannot open the file: {exc.strerror}") from None
        with handle:
            yield handle
    elif hasattr(target, "write" if "w" in mode else "read"):
        yield target
    else:
        raise InvalidInputError("expected a path or a text file object")


def _line(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")) + "\n"


def _versions(store: Store, bank: str) -> Iterator[Row]:
    """The bank's live and archived memories, by ordinal."""
    head = store.head(bank)
    archived: Iterator[Row] = iter(())
    if head is not None:
        archived = _archive(store, head.bank_id)
    return heapq.merge(store.iter_rows(bank), archived, key=lambda row: row.ordinal)


def _archive(store: Store, bank_id: int) -> Iterator[Row]:
    after = 0
    while page := store.archive_page(bank_id, after, PAGE):
        yield from (version.row for version in page)
        after = page[-1].row.ordinal


def _memory_line(row: Row) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": "memory",
        "bank": row.bank,
        "id": row.id,
        "content": row.content,
        "context": row.context,
        "tags": list(row.tags),
        "created_at": row.created_at,
        "retained_at": row.retained_at,
        "document_id": row.document_id,
    }
    if row.status in ARCHIVED:
        line.update(status=row.status, superseded_by=row.superseded_by, archived_at=row.archived_at)
    return line


def dump(store: Store, banks: Sequence[str], target: str | os.PathLike[str] | IO[str]) -> int:
    """Write ``banks`` of ``store`` to ``target``, live and archived memories; returns the
    number of memories written."""
    count = 0
    with _opened(target, "w") as out:
        header = {
            "format": FORMAT,
            "version": VERSION,
            "exported_at": _dates.format_utc(_dates.now_utc()),
        }
        out.write(_line(header))
        for bank in banks:
            out.write(_line({"type": "bank", "bank": bank, "config": store.get_config(bank) or {}}))
            for row in _versions(store, bank):
                out.write(_line(_memory_line(row)))
                count += 1
    return count


def load(
    source: str | os.PathLike[str] | IO[str], target: str | None
) -> tuple[dict[str, dict[str, Any]], dict[str, list[Item]]]:
    """Parse and validate a whole export (version 1 or 2): (config per bank, memories per bank
    in order, archived ones as :class:`ArchivedMemory`).

    With ``target``, every bank's memories and config go to that bank instead.
    """
    from memwire._text import clean_bank

    configs: dict[str, dict[str, Any]] = {}
    batches: dict[str, list[Item]] = {}
    keys = MEMORY_KEYS
    with _opened(source, "r") as handle:
        number = 0
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except ValueError:
                raise InvalidInputError(f"line {number}: not valid JSON") from None
            if not isinstance(value, dict):
                raise InvalidInputError(f"line {number}: expected a JSON object")
            try:
                if number == 1:
                    if value.get("format") != FORMAT:
                        raise InvalidInputError("not a memwire export (bad header)")
                    version = value.get("version")
                    if isinstance(version, bool) or version not in READABLE:
                        raise InvalidInputError(_unreadable(version))
                    keys = MEMORY_KEYS if version == 1 else MEMORY_KEYS | ARCHIVE_KEYS
                    continue
                kind = value.get("type")
                bank = target or clean_bank(value.get("bank"))
                if kind == "bank":
                    conf = value.get("config", {})
                    if not isinstance(conf, dict):
                        raise InvalidInputError("config must be an object")
                    configs.setdefault(bank, {}).update(conf)
                    batches.setdefault(bank, [])
                elif kind == "memory":
                    unknown = set(value) - keys
                    if unknown:
                        raise InvalidInputError(f"unknown keys: {', '.join(sorted(unknown))}")
                    batches.setdefault(bank, []).append(_item(value))
                else:
                    raise InvalidInputError(f"unknown line type {kind!r}")
            except MemwireError as exc:
                raise InvalidInputError(f"line {number}: {exc}") from None
        if number == 0:
            raise InvalidInputError("the file is empty (no memwire export header)")
    return configs, batches


def _unreadable(version: object) -> str:
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        return (
            f"this export is of version {version}, written by a newer memwire; this one reads "
            f"versions {READABLE[0]} to {READABLE[-1]} (upgrade memwire to import it)"
        )
    return f"unsupported export version {version!r}"


def _item(value: dict[str, Any]) -> Item:
    """A memory line, validated: live, or archived with its status, link and date."""
    from memwire.memory.items import check_id, prepare

    retained = value.get("retained_at")
    memory = prepare(
        value.get("content"),
        tags=value.get("tags") or (),
        context=value.get("context"),
        created_at=value.get("created_at"),
        document_id=value.get("document_id"),
        memory_id=check_id(value.get("id")),
        retained_at=(
            None if retained is None else _dates.format_utc(_dates.parse_created_at(retained))
        ),
    )
    status = value.get("status", "live")
    if status == "live":
        if value.get("superseded_by") is not None or value.get("archived_at") is not None:
            raise InvalidInputError("a live memory has no superseded_by or archived_at")
        return memory
    if status not in ARCHIVED:
        raise InvalidInputError(f"status must be 'live', 'superseded' or 'trashed', got {status!r}")
    by = value.get("superseded_by")
    archived_at = value.get("archived_at")
    if archived_at is None:
        raise InvalidInputError(f"a {status} memory needs archived_at")
    return ArchivedMemory(
        memory,
        status,
        None if by is None else check_id(by),
        _dates.format_utc(_dates.parse_created_at(archived_at)),
    )
