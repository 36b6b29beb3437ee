"""mem0 exports: the memory records ``get_all`` returns, as JSONL (one per line), a JSON array,
or the ``{"results": [...]}`` document itself.

A record (mem0's ``MemoryItem``): ``memory`` (the text, required), ``id``, ``created_at``,
``categories``, ``user_id`` / ``agent_id`` / ``run_id``, ``metadata``, ``hash``,
``updated_at``. The text becomes the content, ``created_at`` the time, the categories tags,
and the user, agent and run ids tags ``user:ID``, ``agent:ID``, ``run:ID`` (recall can filter
by them); ``mem0:<id>`` is the document id, so importing a later export again replaces each
memory with its newer text instead of adding a second one.
"""

from __future__ import annotations

import os
from typing import Any

from memwire._text import MAX_TAG_CHARS, MAX_TAGS
from memwire.importers.base import Candidate, Read, Skip, json_records, text_list, trim_tags

__all__ = ["read"]

OWNERS = (("user_id", "user"), ("agent_id", "agent"), ("run_id", "run"))


def read(path: str | os.PathLike[str]) -> Read:
    found = Read()
    for where, record in json_records(path, found, ("results", "memories")):
        if not isinstance(record, dict):
            found.skipped.append(Skip(where, "not a JSON object"))
            continue
        text = record.get("memory")
        if not isinstance(text, str):
            found.skipped.append(Skip(where, "no 'memory' text"))
            continue
        tags = text_list(record.get("categories"))
        tags += [
            f"{name}:{record[key]}" for key, name in OWNERS if isinstance(record.get(key), str)
        ]
        kept, trimmed = trim_tags(tags, MAX_TAGS, MAX_TAG_CHARS)
        found.tags_trimmed += trimmed
        item: dict[str, Any] = {"content": text, "tags": kept}
        if isinstance(record.get("created_at"), str):
            item["created_at"] = record["created_at"]
        if isinstance(record.get("id"), str) and record["id"]:
            item["document_id"] = f"mem0:{record['id']}"
            where = f"{where} (mem0 id {record['id']})"
        found.candidates.append(Candidate(item, where))
    return found
