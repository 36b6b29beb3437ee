"""A bulk retain (``retain_many``: one embed call, one quantisation and ``executemany`` per
batch) stores exactly what retaining the same items one by one stores: the same rows, vectors,
duplicates and recall rankings."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from memwire.memory import Memory
from memwire.memory import api as memory_api

WORDS = [
    "deploy",
    "cache",
    "invoice",
    "river",
    "lantern",
    "meeting",
    "budget",
    "garden",
    "server",
    "rocket",
]


def _items() -> list[Any]:
    items: list[Any] = []
    for i in range(45):
        text = f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} note {i}"
        if i % 9 == 4:
            items.append({"content": text, "tags": ["Work", f"t{i % 3}"], "context": "ctx " + text})
        elif i % 11 == 5:
            items.append(f"my password is hunter{i}x2 for the {WORDS[i % 10]}")  # redacted
        elif i == 20:
            items.append("\u2603\u2603")  # no token the static table knows: no vector
        elif i % 8 == 7:
            items.append(items[i - 6])  # a duplicate inside the batch (maybe a chunk back)
        else:
            items.append(text)
    return items


def _rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT ordinal, content, context, tags, content_hash, vector FROM memories "
            "ORDER BY ordinal"
        ).fetchall()


def _shape(ids: list[str]) -> list[int]:
    """Which earlier position each id repeats (its own when new): the duplicates' pattern."""
    return [ids.index(i) for i in ids]


def test_bulk_retain_equals_one_by_one(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small batches, so duplicates cross batch boundaries and each batch is its own write.
    monkeypatch.setattr(memory_api, "BATCH_SIZE", 10)
    items = _items()
    with Memory(tmp_path / "bulk.db", backend=backend) as bulk:
        bulk_ids = bulk.retain_many(items, bank="b")
        bulk_hits = {w: bulk.recall(w, bank="b", limit=10) for w in [*WORDS, "password"]}
    with Memory(tmp_path / "single.db", backend=backend) as single:
        single_ids = []
        for item in items:
            fields = item if isinstance(item, dict) else {"content": item}
            single_ids.append(single.retain(bank="b", **fields))
        single_hits = {w: single.recall(w, bank="b", limit=10) for w in bulk_hits}
    rows = _rows(tmp_path / "bulk.db")
    assert rows == _rows(tmp_path / "single.db")
    assert any(r[5] is None for r in rows) and sum(r[5] is not None for r in rows) > 20
    assert any("[REDACTED:" in r[1] for r in rows)
    assert _shape(bulk_ids) == _shape(single_ids) and len(set(bulk_ids)) < len(bulk_ids)
    for word, hits in bulk_hits.items():
        expected = [(h.content, h.score) for h in single_hits[word]]
        assert [(h.content, h.score) for h in hits] == expected, word
        assert hits, word


def test_an_invalid_item_in_a_later_batch_writes_nothing(
    mem: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memory_api, "BATCH_SIZE", 5)
    items: list[object] = [f"{WORDS[i % 10]} item {i}" for i in range(20)]
    items[17] = ""
    with pytest.raises(memory_api.InvalidInputError, match=r"items\[17\]"):
        mem.retain_many(items, bank="b")
    assert mem.banks() == []
    assert len(mem.retain_many(items[:17], bank="b")) == 17
