"""Export and import: versioned JSONL that round-trips a store exactly.

The first line is a header, then per bank one ``bank`` line (its config) followed by its
``memory`` lines in retain order::

    {"format": "memwire.export", "version": 1, "exported_at": "2024-05-01T09:30:00.000000Z"}
    {"type": "bank", "bank": "default", "config": {"ttl_days": 30}}
    {"type": "memory", "bank": "default", "id": "mem_...", "content": "...", "context": null,
     "tags": ["x"], "created_at": "...Z", "retained_at": "...Z", "document_id": null}

Ids, dates (UTC, microseconds), tags, context and document ids survive the round trip, and so
does the recall order (memories are re-retained in their original order). Imported text goes
through the same validation and redaction as any retain.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

from memwire import _dates
from memwire.errors import InvalidInputError, MemwireError
from memwire.store import NewMemory, Store

__all__ = ["FORMAT", "VERSION", "dump", "load"]

FORMAT = "memwire.export"
VERSION = 1
MEMORY_KEYS = frozenset(
    ("type", "bank", "id", "content", "context", "tags", "created_at", "retained_at", "document_id")
)


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


def dump(store: Store, banks: Sequence[str], target: str | os.PathLike[str] | IO[str]) -> int:
    """Write ``banks`` of ``store`` to ``target``; returns the number of memories written."""
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
            for row in store.iter_rows(bank):
                out.write(
                    _line(
                        {
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
                    )
                )
                count += 1
    return count


def load(
    source: str | os.PathLike[str] | IO[str], target: str | None
) -> tuple[dict[str, dict[str, Any]], dict[str, list[NewMemory]]]:
    """Parse and validate a whole export: (config per bank, memories per bank in order).

    With ``target``, every bank's memories and config go to that bank instead.
    """
    from memwire._text import clean_bank
    from memwire.memory.items import check_id, prepare

    configs: dict[str, dict[str, Any]] = {}
    batches: dict[str, list[NewMemory]] = {}
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
                    if value.get("version") != VERSION:
                        raise InvalidInputError(
                            f"unsupported export version {value.get('version')!r}"
                        )
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
                    unknown = set(value) - MEMORY_KEYS
                    if unknown:
                        raise InvalidInputError(f"unknown keys: {', '.join(sorted(unknown))}")
                    retained = value.get("retained_at")
                    batches.setdefault(bank, []).append(
                        prepare(
                            value.get("content"),
                            tags=value.get("tags") or (),
                            context=value.get("context"),
                            created_at=value.get("created_at"),
                            document_id=value.get("document_id"),
                            memory_id=check_id(value.get("id")),
                            retained_at=(
                                None
                                if retained is None
                                else _dates.format_utc(_dates.parse_created_at(retained))
                            ),
                        )
                    )
                else:
                    raise InvalidInputError(f"unknown line type {kind!r}")
            except MemwireError as exc:
                raise InvalidInputError(f"line {number}: {exc}") from None
        if number == 0:
            raise InvalidInputError("the file is empty (no memwire export header)")
    return configs, batches
