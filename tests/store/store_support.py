"""Helpers of the store conformance suite: memories to write, and a whole store as plain data."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwire.store import NewMemory, Space, Store

DATE = "2024-05-01T09:30:00.000000Z"
SPACE = Space("tiny", 4)
OTHER_SPACE = Space("other", 4)
_ids = itertools.count(1)


@dataclass(frozen=True)
class StoreFactory:
    """One kind of store under test (tests/store/conftest.py lists them)."""

    name: str
    make: Callable[[Path], Store]  # a new, empty store keeping its files (if any) in the dir
    reopen: Callable[[Path], Store] | None  # the same store again after close(), if durable
    set_last_seq: Callable[[Store, str, int], None]  # test hook: move an existing bank's seq


def new_id() -> str:
    return f"mem_{next(_ids):032x}"


def vec(*values: int) -> bytes:
    """An int16 little-endian vector (``SPACE`` has dimension 4)."""
    return b"".join(v.to_bytes(2, "little", signed=True) for v in values)


def item(
    content: str,
    *,
    id: str | None = None,
    tags: Sequence[str] = (),
    context: str | None = None,
    created_at: str = DATE,
    document_id: str | None = None,
    update_mode: str = "replace",
    vector: bytes | None = None,
) -> NewMemory:
    """A memory as the Memory layer hands it to a store (content already normalised)."""
    return NewMemory(
        id=id or new_id(),
        content=content,
        context=context,
        tags=tuple(tags),
        created_at=created_at,
        retained_at=DATE,
        document_id=document_id,
        update_mode=update_mode,
        content_hash=hashlib.sha256(content.encode("utf-8")).digest(),
        vector=vector,
    )


def day(n: int) -> str:
    """The created_at of day ``n`` of May 2024."""
    return f"2024-05-{n:02d}T00:00:00.000000Z"


def dump(store: Store) -> dict[str, Any]:
    """Everything a store answers about its banks, as plain data to compare."""
    out: dict[str, Any] = {}
    for name in store.bank_names():
        head = store.head(name)
        assert head is not None
        changes = store.changes_since(head.bank_id, 0)
        assert changes is not None
        out[name] = {
            "head": head,
            "rows": list(store.iter_rows(name)),
            "listed": store.list_rows(name, 1000, 0),
            "stats": store.stats(name),
            "config": store.get_config(name),
            "additions": list(changes.added),
            "reembed": store.reembed_state(name),
            "count": store.count_rows(head.bank_id),
        }
    return out
