"""The migration that casefolds the tags stored before tags were case-insensitive.

Tags are stored casefolded (:func:`memwire._text.fold_tag`); rows written by an older memwire
may hold capitals. Each SQL store calls :func:`fold_stored_tags` once, in the transaction that
moves its schema to the version that folds tags: it rewrites every row whose tags change, its
JSON tag list and its ``memory_tags`` rows (both stores share those tables' shape).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol, TypeVar

from memwire._text import fold_tags

__all__ = ["fold_stored_tags", "refolded"]

K = TypeVar("K")


def refolded(rows: Iterable[tuple[K, str]]) -> list[tuple[K, str, list[str], list[str]]]:
    """For each ``(key, tags_json)`` whose tags change when folded: ``(key, new_json,
    old_tags, new_tags)`` (duplicates that folding makes are dropped, first kept)."""
    out: list[tuple[K, str, list[str], list[str]]] = []
    for key, raw in rows:
        tags = json.loads(raw)
        folded = fold_tags(tags)
        if folded != tags:
            out.append((key, json.dumps(folded, ensure_ascii=False), tags, folded))
    return out


class _Connection(Protocol):
    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


def fold_stored_tags(conn: _Connection, mark: str) -> None:
    """Casefold the stored tags of every memory (``mark``: the driver's placeholder, ``?`` or
    ``%s``)."""
    rows = conn.execute("SELECT id, bank_id, ordinal, tags FROM memories WHERE tags <> '[]'")
    for (memory_id, bank_id, ordinal), raw, old, tags in refolded(
        ((r[0], r[1], r[2]), r[3]) for r in rows.fetchall()
    ):
        conn.execute(f"UPDATE memories SET tags = {mark} WHERE id = {mark}", (raw, memory_id))
        for tag in old:  # by the primary key (bank_id, tag, ordinal): no scan
            conn.execute(
                f"DELETE FROM memory_tags WHERE bank_id = {mark} AND tag = {mark} "
                f"AND ordinal = {mark}",
                (bank_id, tag, ordinal),
            )
        for tag in tags:
            conn.execute(
                f"INSERT INTO memory_tags (bank_id, tag, ordinal) VALUES ({mark}, {mark}, {mark})",
                (bank_id, tag, ordinal),
            )
