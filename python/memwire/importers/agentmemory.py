"""agentmemory exports: ``agentmemory export``'s JSON document (``memories``,
``observations`` by session, ``summaries``) or JSONL with one such record per line.

- A memory (``content``, ``title``, ``type``, ``concepts``, ``files``, ``createdAt``,
  ``isLatest``): content, with its title and files as context, tags ``memory``, its type and
  concepts. A version that is not the latest (``isLatest: false``) is skipped: a later one
  replaced it.
- An observation (``narrative``, ``facts``, ``title``, ``subtitle``, ``type``, ``concepts``,
  ``files``, ``timestamp``): the narrative (else the facts), tags ``observation``, type,
  concepts.
- A session summary (``narrative``, ``title``, ``concepts``, ``createdAt``, ``sessionId``):
  tags ``summary`` and its concepts.

Each gets the document id ``agentmemory:<kind>:<id>``, so a second import of a later export
replaces rather than duplicates.
"""

from __future__ import annotations

import os
from typing import Any

from memwire._text import MAX_TAG_CHARS, MAX_TAGS
from memwire.importers.base import Candidate, Read, Skip, json_records, text_list, trim_tags

__all__ = ["read"]


def _text(record: dict[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) and value.strip() else None


def _kind(record: dict[str, Any]) -> str | None:
    if _text(record, "content") and "createdAt" in record:
        return "memory"
    if "narrative" in record and "timestamp" in record:
        return "observation"
    if "narrative" in record and "sessionId" in record:
        return "summary"
    return None


def _context(record: dict[str, Any]) -> str | None:
    head = " - ".join(t for t in (_text(record, "title"), _text(record, "subtitle")) if t)
    files = text_list(record.get("files"))
    parts = [head] if head else []
    if files:
        parts.append("files: " + ", ".join(files))
    return "\n".join(parts) or None


def _candidate(where: str, record: dict[str, Any], kind: str) -> Candidate | Skip:
    if kind == "memory":
        if record.get("isLatest") is False:
            return Skip(where, "superseded by a later version (isLatest is false)")
        content = _text(record, "content")
        when, key = record.get("createdAt"), record.get("id")
    elif kind == "observation":
        content = _text(record, "narrative") or "\n".join(text_list(record.get("facts")))
        when, key = record.get("timestamp"), record.get("id")
    else:
        content = _text(record, "narrative")
        when, key = record.get("createdAt"), record.get("sessionId")
    if not content or not content.strip():
        return Skip(where, f"a {kind} with no text")
    kind_tag = [record["type"]] if isinstance(record.get("type"), str) else []
    tags = [kind, *kind_tag, *text_list(record.get("concepts"))]
    item: dict[str, Any] = {"content": content, "tags": tags, "context": _context(record)}
    if isinstance(when, str):
        item["created_at"] = when
    if isinstance(key, str) and key:
        item["document_id"] = f"agentmemory:{kind}:{key}"
        where = f"{where} ({kind} {key})"
    return Candidate(item, where)


def read(path: str | os.PathLike[str]) -> Read:
    found = Read()
    for where, record in json_records(path, found, ("memories", "observations", "summaries")):
        kind = _kind(record) if isinstance(record, dict) else None
        if kind is None:
            found.skipped.append(Skip(where, "not an agentmemory memory, observation or summary"))
            continue
        made = _candidate(where, record, kind)
        if isinstance(made, Skip):
            found.skipped.append(made)
            continue
        kept, trimmed = trim_tags(made.item["tags"], MAX_TAGS, MAX_TAG_CHARS)
        found.tags_trimmed += trimmed
        made.item["tags"] = kept
        found.candidates.append(made)
    return found
