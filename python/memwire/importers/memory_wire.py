"""memory-wire's SQLite database: every bank's memories, tags, context, times and configs.

The database is opened read-only (it may belong to a running memory-wire). Its schema, as
memory-wire 0.7 creates it: ``banks(id, name, config)``, ``memories(id, bank_id, content,
context, created_at, document_id, ...)`` and ``memory_tags(memory_id, tag)``; the full-text and
vector tables are memory-wire's indexes and are not read (memwire builds its own).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from memwire._text import MAX_TAG_CHARS, MAX_TAGS
from memwire.errors import InvalidInputError
from memwire.importers.base import Candidate, Read, Skip, trim_tags

__all__ = ["read"]

NEEDED = {
    "banks": {"id", "name", "config"},
    "memories": {"id", "bank_id", "content", "context", "created_at", "document_id"},
    "memory_tags": {"memory_id", "tag"},
}


def _open(path: Path) -> sqlite3.Connection:
    if not path.is_file():
        raise InvalidInputError(f"no memory-wire database at {path}")
    uri = f"file:{quote(os.fspath(path.resolve()))}?mode=ro"
    return sqlite3.connect(uri, uri=True)


def _check_schema(db: sqlite3.Connection, path: Path) -> None:
    for table, columns in NEEDED.items():
        have = {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
        missing = sorted(columns - have)
        if missing:
            raise InvalidInputError(
                f"{path} is not a memory-wire database: table {table!r} lacks {', '.join(missing)}"
            )


def _config(raw: object) -> Mapping[str, Any] | None:
    try:
        value = json.loads(raw) if isinstance(raw, str) else None
    except ValueError:
        return None
    return value if isinstance(value, dict) and value else None


def read(path: str | os.PathLike[str]) -> Read:
    """Every memory of the database at ``path``, oldest row first, in its own bank."""
    where = Path(path)
    found = Read()
    try:
        with contextlib.closing(_open(where)) as db:
            _check_schema(db, where)
            names: dict[str, str] = {}
            for bank_id, name, raw in db.execute("SELECT id, name, config FROM banks"):
                names[bank_id] = name or bank_id
                config = _config(raw)
                if config is not None:
                    found.configs[names[bank_id]] = config
            tags: dict[str, list[str]] = {}
            for memory_id, tag in db.execute(
                "SELECT memory_id, tag FROM memory_tags ORDER BY rowid"
            ):
                tags.setdefault(memory_id, []).append(tag)
            rows = db.execute(
                "SELECT id, bank_id, content, context, created_at, document_id "
                "FROM memories ORDER BY rowid"
            )
            for memory_id, bank_id, content, context, created_at, document_id in rows:
                label = f"memory {memory_id} (bank {names.get(bank_id, bank_id)!r})"
                if not isinstance(content, str):
                    found.skipped.append(Skip(label, "content is not text"))
                    continue
                kept, trimmed = trim_tags(tags.get(memory_id, []), MAX_TAGS, MAX_TAG_CHARS)
                found.tags_trimmed += trimmed
                item: dict[str, Any] = {"content": content, "tags": kept, "created_at": created_at}
                if context is not None:
                    item["context"] = context
                if document_id is not None:
                    item["document_id"] = document_id
                found.candidates.append(Candidate(item, label, names.get(bank_id, bank_id)))
    except sqlite3.DatabaseError as exc:
        # sqlite's own words ("file is not a database"), never a query
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InvalidInputError(
            f"cannot read {where} as a memory-wire database: {reason}"
        ) from None
    return found
