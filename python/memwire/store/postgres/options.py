"""The PostgreSQL store's tuning options: each a keyword of the store, defaulting to an
environment variable (so ``memwire serve`` and every other door can set it), then a constant."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from memwire.errors import InvalidInputError

__all__ = [
    "DEFAULT_POLL_S",
    "DEFAULT_POOL_SIZE",
    "MAX_POOL_SIZE",
    "POLL_ENV",
    "POOL_ENV",
    "poll_interval_of",
    "pool_size_of",
]

DEFAULT_POOL_SIZE = 4
POOL_ENV = "MEMWIRE_PG_POOL_SIZE"
MAX_POOL_SIZE = 64
DEFAULT_POLL_S = 30.0
POLL_ENV = "MEMWIRE_PG_POLL_SECONDS"

T = TypeVar("T", int, float)


def _option(
    given: object,
    name: str,
    env: str,
    default: T,
    parse: Callable[[str], T],
    ok: Callable[[T], bool],
    rule: str,
) -> T:
    """``given``, else ``$env`` parsed, else ``default``; InvalidInputError (naming where the
    value came from, and ``rule``) unless ``ok``."""
    source, value = name, given
    if given is None:
        raw = os.environ.get(env, "").strip()
        if not raw:
            return default
        source = f"${env}"
        try:
            value = parse(raw)
        except ValueError:
            value = raw
    kind = type(default)
    if isinstance(value, bool) or not isinstance(value, (kind, int)) or not ok(kind(value)):
        raise InvalidInputError(f"{source} must be {rule}")
    return kind(value)


def pool_size_of(given: int | None) -> int:
    """How many connections the store's pool holds at most."""
    return _option(
        given,
        "pool_size",
        POOL_ENV,
        DEFAULT_POOL_SIZE,
        int,
        lambda v: 1 <= v <= MAX_POOL_SIZE,
        f"an integer from 1 to {MAX_POOL_SIZE}",
    )


def poll_interval_of(given: float | None) -> float:
    """Seconds between the checks of every watched bank that back up the notifications."""
    return _option(
        given,
        "poll_interval",
        POLL_ENV,
        DEFAULT_POLL_S,
        float,
        lambda v: 0.05 <= v <= 86_400,
        "a number of seconds from 0.05 to 86400",
    )
