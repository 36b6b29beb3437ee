"""Argument checks shared by the pure kernel; messages are the ones docs/parity.md fixes."""

from __future__ import annotations

import math
from collections.abc import Sequence

from memwire._kernel.pure._generated import MAX_DIM, MAX_ORDINAL
from memwire.errors import InvalidInputError


def ordinal(value: int) -> int:
    if not 0 <= value <= MAX_ORDINAL:
        raise InvalidInputError(f"ordinal must be between 0 and {MAX_ORDINAL}, got {value}")
    return value


def at_least_one(name: str, value: int) -> int:
    if value < 1:
        raise InvalidInputError(f"{name} must be at least 1, got {value}")
    return value


def weights(values: Sequence[float], expected: int) -> list[float]:
    out = [float(w) for w in values]
    if len(out) != expected:
        raise InvalidInputError(f"expected {expected} weights, got {len(out)}")
    if any(not math.isfinite(w) or w < 0.0 for w in out):
        raise InvalidInputError("weights must be finite and non-negative")
    return out


def lookup_ratio(value: float) -> float:
    out = float(value)
    if not math.isfinite(out) or out < 0.0:
        raise InvalidInputError("lookup_ratio must be finite and non-negative")
    return out


def dim(value: int) -> int:
    if not 0 <= value <= MAX_DIM:
        raise InvalidInputError(f"dim must be between 0 and {MAX_DIM}, got {value}")
    return value
