"""memory-wire databases for tests, built in Python with the schema the real binary creates
(fixtures/memory_wire_0.7.0_schema.sql, recorded by record_peer.py)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import sqlite3
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

SCHEMA = Path(__file__).resolve().parent / "fixtures" / "memory_wire_0.7.0_schema.sql"
WORDS = [
    "river",
    "deploy",
    "cache",
    "rotate",
    "key",
    "monday",
    "alpha",
    "budget",
    "café",
    "naïve",
    "über",
    "schema",
    "index",
    "vector",
    "token",
    "sprint",
    "review",
    "merge",
    "branch",
    "release",
    "incident",
    "pager",
    "ramen",
    "東京",
    "データ",
]
TAGS = ("ops", "decision", "bug", "infra", "people", "meeting", "todo", "release")
BANKS = ("work", "home", "acme/web")


@dataclass(frozen=True)
class Row:
    bank: str
    content: str
    context: str | None
    tags: tuple[str, ...]
    created_at: str
    document_id: str | None
    id: str = field(default_factory=lambda: str(uuid.uuid4()))


def stamp(moment: datetime) -> str:
    """memory-wire's timestamp form: UTC, milliseconds, Z."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def generate(count: int, seed: int = 13) -> list[Row]:
    """``count`` distinct memories over three banks: text in several scripts, newlines, some
    context, 0-3 tags, one in ten with a document id, times spread over years."""
    rng = random.Random(seed)
    start = datetime(2019, 3, 1, tzinfo=timezone.utc)
    rows = []
    for n in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 30)))
        content = f"memory {n}: {words}" + ("\nsecond line" if n % 7 == 0 else "")
        context = None if n % 3 == 0 else f"session {n // 50}, turn {n % 50}: {rng.choice(WORDS)}"
        tags = tuple(rng.sample(TAGS, rng.randint(0, 3)))
        moment = start + timedelta(seconds=n * 7919, milliseconds=rng.randint(0, 999))
        rows.append(
            Row(
                bank=BANKS[n % len(BANKS)],
                content=content,
                context=context,
                tags=tags,
                created_at=stamp(moment),
                document_id=f"doc-{n}" if n % 10 == 0 else None,
            )
        )
    return rows


def build(path: Path, rows: Sequence[Row], configs: Mapping[str, object] = {}) -> None:
    """A memory-wire database at ``path`` holding ``rows``, as the binary lays it out."""
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executescript(SCHEMA.read_text(encoding="utf-8"))
        for bank in dict.fromkeys(r.bank for r in rows):
            config = json.dumps(configs.get(bank, {}))
            db.execute("INSERT INTO banks(id, name, config) VALUES (?, ?, ?)", (bank, bank, config))
        db.executemany(
            "INSERT INTO memories(id, bank_id, content, context, created_at, document_id, "
            "content_hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    r.id,
                    r.bank,
                    r.content,
                    r.context,
                    r.created_at,
                    r.document_id,
                    hashlib.sha256(r.content.encode()).digest(),
                )
                for r in rows
            ],
        )
        db.executemany(
            "INSERT INTO memory_tags(memory_id, tag) VALUES (?, ?)",
            [(r.id, tag) for r in rows for tag in r.tags],
        )
