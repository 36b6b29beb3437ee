"""Dates: parse what callers give as ``created_at`` and store it as fixed-width UTC text."""

from __future__ import annotations

import math
from datetime import date, datetime, time, timedelta, timezone

from memwire.errors import InvalidInputError

__all__ = ["cutoff", "format_utc", "now_utc", "parse_created_at", "parse_stored"]


def now_utc() -> datetime:
    return datetime.now(timezone.utc)


def format_utc(moment: datetime) -> str:
    """Fixed-width ISO 8601 in UTC (``2024-05-01T09:30:00.000000Z``): sorts as text."""
    m = moment.astimezone(timezone.utc)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T"
        f"{m.hour:02d}:{m.minute:02d}:{m.second:02d}.{m.microsecond:06d}Z"
    )


def parse_stored(text: str) -> datetime:
    """Inverse of :func:`format_utc`."""
    return datetime.fromisoformat(text[:-1]).replace(tzinfo=timezone.utc)


def parse_created_at(value: object, what: str = "created_at") -> datetime:
    """``None`` (now), a ``datetime`` (naive means UTC), a ``date`` (midnight UTC), or an ISO
    8601 date or date-time string (``Z`` or an offset allowed; none means UTC)."""
    if value is None:
        return now_utc()
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time(0, 0))
    elif isinstance(value, str):
        text = value.strip()
        if not text:
            raise InvalidInputError(f"{what} must not be blank")
        if text[-1:] in ("Z", "z"):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise InvalidInputError(
                f"{what} {value!r} is not an ISO 8601 date or date-time "
                "(for example 2024-05-01 or 2024-05-01T09:30:00Z)"
            ) from None
    else:
        raise InvalidInputError(
            f"{what} must be a datetime, a date or an ISO 8601 string, got {type(value).__name__}"
        )
    if moment.tzinfo is None or moment.utcoffset() is None:
        moment = moment.replace(tzinfo=timezone.utc)
    try:
        return moment.astimezone(timezone.utc)
    except (OverflowError, ValueError):
        raise InvalidInputError(f"{what} {value!r} is out of range") from None


def cutoff(days: float) -> str:
    """The stored form of ``now - days``."""
    if not math.isfinite(days):
        raise InvalidInputError("ttl_days must be finite")
    try:
        return format_utc(now_utc() - timedelta(days=days))
    except OverflowError:
        return format_utc(datetime.min.replace(tzinfo=timezone.utc))
