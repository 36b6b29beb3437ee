"""What every store shares of history and trash (the protocol's "History"): walking a chain of
versions, and the messages of a supersession or restore that cannot be done."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from memwire.errors import ConflictError, NotFoundError
from memwire.store.protocol import LIVE, Row

__all__ = [
    "State",
    "check_supersedes",
    "history_order",
    "not_live",
    "restore_conflict",
    "state_of",
    "walk_chain",
]


def history_order(rows: Iterable[Row]) -> list[Row]:
    """Oldest ``retained_at`` first, then by id."""
    return sorted(rows, key=lambda r: (r.retained_at, r.id))


def walk_chain(
    start: Row | None,
    get: Callable[[str], Row | None],
    predecessors: Callable[[Sequence[str]], Iterable[Row]],
) -> list[Row]:
    """Every row linked to ``start`` by supersession, both ways: forward through
    ``superseded_by`` (``get``), back through the rows superseded by a version
    (``predecessors``); in :func:`history_order`."""
    if start is None:
        return []
    seen = {start.id: start}
    frontier = [start]
    while frontier:
        found: list[Row] = []
        for row in frontier:
            if row.superseded_by is not None and row.superseded_by not in seen:
                newer = get(row.superseded_by)
                if newer is not None:
                    found.append(newer)
        found.extend(predecessors([r.id for r in frontier]))
        frontier = []
        for row in found:
            if row.id not in seen:
                seen[row.id] = row
                frontier.append(row)
    return history_order(seen.values())


def not_live(row: Row) -> str:
    """Why ``row`` cannot be changed as a live memory."""
    return _not_live(row.id, row.status, row.superseded_by)


def _not_live(memory_id: str, status: str, superseded_by: str | None) -> str:
    by = f" (superseded by {superseded_by!r})" if superseded_by else ""
    return f"memory {memory_id!r} is {status}{by}, not live"


# What check_supersedes needs to know of an id: its bank, status and successor.
State = tuple[str, str, "str | None"]


def state_of(row: Row | None) -> State | None:
    return None if row is None else (row.bank, row.status, row.superseded_by)


def check_supersedes(bank: str, ids: Sequence[str], found: Callable[[str], State | None]) -> None:
    """Refuse a ``supersedes`` list naming anything but live memories of ``bank``
    (``found``: an id's bank, status and successor, live or archived, in any bank)."""
    for memory_id in ids:
        state = found(memory_id)
        if state is None or state[0] != bank:
            raise NotFoundError(f"no memory {memory_id!r} in bank {bank!r} to supersede")
        if state[1] != LIVE:
            raise ConflictError(_not_live(memory_id, state[1], state[2]))


def restore_conflict(memory_id: str, clash: str) -> str:
    """The message of a restore refused because ``clash`` is live in the memory's place."""
    return f"memory {clash!r} is live in its place; forget it first to restore {memory_id!r}"
