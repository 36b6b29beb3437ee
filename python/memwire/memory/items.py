"""One memory's way in and out of the API: validation, normalisation and redaction of what a
caller retains (:func:`prepare`), the checks of scalar arguments, ids, and the public
:class:`~memwire.records.Record` of a stored row."""

from __future__ import annotations

import hashlib
import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from memwire import _dates, config
from memwire._text import (
    MAX_CONTENT_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_DOCUMENT_ID_CHARS,
    clean_label,
    clean_tags,
    clean_text,
)
from memwire.errors import InvalidInputError
from memwire.records import Record
from memwire.redact import redact, redact_many, secret_kinds
from memwire.store import NewMemory, Row

__all__ = [
    "ITEM_KEYS",
    "MAX_ID_CHARS",
    "UPDATE_MODES",
    "Draft",
    "build",
    "check_id",
    "check_identifier",
    "check_int",
    "check_min_score",
    "check_supersedes",
    "config_merger",
    "draft",
    "item_draft",
    "new_id",
    "new_ids",
    "prepare",
    "prepare_item",
    "prepare_many",
    "record_of",
    "with_vector",
]

MAX_ID_CHARS = 64
UPDATE_MODES = ("replace", "append")
ITEM_KEYS = frozenset(
    ("content", "tags", "context", "created_at", "document_id", "update_mode", "supersedes")
)
MAX_SUPERSEDES = 100


def new_id() -> str:
    """``mem_`` + 32 hex digits: 48 bits of milliseconds then 80 random bits, so ids sort
    roughly by creation time and never collide in practice."""
    return f"mem_{time.time_ns() // 1_000_000:012x}{secrets.randbits(80):020x}"


def new_ids(count: int) -> list[str]:
    """``count`` ids as :func:`new_id` makes them, with one clock read and one draw of
    randomness for the lot (a batch's ids share their millisecond). Their random parts are
    handed out in ascending order, so the ids sort in item order: a bulk write then appends to
    the id index instead of dirtying every page of it (which a 100k bank's batches did)."""
    stamp = f"mem_{time.time_ns() // 1_000_000:012x}"
    noise = secrets.token_bytes(10 * count).hex()
    return sorted(stamp + noise[20 * i : 20 * i + 20] for i in range(count))


def check_id(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError("id must be a non-empty string")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"id is too long (limit {MAX_ID_CHARS} characters)")
    return value


def check_identifier(value: str, what: str) -> str:
    """Refuse a name (tag, document id) redaction would change: an identifier is matched
    exactly, so rewriting it would silently break every lookup by it."""
    kinds = secret_kinds(value)
    if kinds:
        raise InvalidInputError(
            f"{what} looks like it holds a secret or personal data ({', '.join(kinds)}); "
            "identifiers are not redacted, so it was refused"
        )
    return value


def check_int(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInputError(f"{what} must be between {low} and {high}, got {value}")
    return value


def check_min_score(value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"min_score must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0:
        raise InvalidInputError(f"min_score must be a finite number >= 0, got {value}")
    return float(value)


def record_of(row: Row) -> Record:
    return Record(
        id=row.id,
        bank=row.bank,
        content=row.content,
        context=row.context,
        tags=row.tags,
        created_at=_dates.parse_stored(row.created_at),
        retained_at=_dates.parse_stored(row.retained_at),
        document_id=row.document_id,
        status=row.status,
        superseded_by=row.superseded_by,
        archived_at=_dates.parse_stored(row.archived_at) if row.archived_at else None,
    )


def check_supersedes(value: object) -> tuple[str, ...]:
    """The ids a new memory supersedes: an iterable of ids (not one string)."""
    if isinstance(value, (str, bytes, Mapping)):
        raise InvalidInputError("supersedes must be a list of memory ids")
    try:
        ids = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise InvalidInputError(
            f"supersedes must be a list of memory ids, got {type(value).__name__}"
        ) from None
    if len(ids) > MAX_SUPERSEDES:
        raise InvalidInputError(f"supersedes lists too many ids (limit {MAX_SUPERSEDES})")
    return tuple(dict.fromkeys(check_id(i) for i in ids))


# A prepared memory before its vector: NewMemory's fields in order, without ``vector`` (which
# goes in before ``supersedes`` when :func:`build` makes the NewMemory, once, with it).
Draft: TypeAlias = tuple[
    str, str, str | None, tuple[str, ...], str, str, str | None, str, bytes, tuple[str, ...]
]


def draft(
    content: object,
    *,
    tags: object = (),
    context: object = None,
    created_at: object = None,
    document_id: object = None,
    update_mode: object = "replace",
    memory_id: str | None = None,
    retained_at: str | None = None,
    now: str | None = None,
    supersedes: object = (),
) -> Draft:
    """Validate, normalise and redact one memory; raises InvalidInputError, writes nothing."""
    text = redact(clean_text(content, "content", MAX_CONTENT_CHARS))
    ctx: str | None = None
    if context is not None:
        ctx = clean_text(context, "context", MAX_CONTEXT_CHARS, allow_blank=True)
        ctx = redact(ctx) if ctx.strip() else None
    doc: str | None = None
    if document_id is not None:
        doc = check_identifier(
            clean_label(document_id, "document_id", MAX_DOCUMENT_ID_CHARS), "document_id"
        )
    if update_mode not in UPDATE_MODES:
        raise InvalidInputError(f"update_mode must be 'replace' or 'append', got {update_mode!r}")
    if created_at is None and now is not None:
        when = now
    else:
        when = _dates.format_utc(_dates.parse_created_at(created_at))
    return (
        memory_id or new_id(),
        text,
        ctx,
        () if _none(tags) else tuple(clean_tags(tags, check=_check_tag)),
        when,
        retained_at or now or _dates.format_utc(_dates.now_utc()),
        doc,
        str(update_mode),
        hashlib.sha256(text.encode("utf-8")).digest(),
        () if _none(supersedes) else check_supersedes(supersedes),
    )


def _none(value: object) -> bool:
    """The empty tuple (the default), whose checks cost a call and give () again; any other
    empty value still goes through them (a blank string is refused there)."""
    return isinstance(value, tuple) and not value


def _check_tag(tag: str) -> object:
    return check_identifier(tag, "tag")


def build(item: Draft, vector: bytes | None = None) -> NewMemory:
    """The NewMemory of ``item`` with ``vector`` (a direct construction: ``dataclasses.replace``
    costs ten times as much, which a batch of 10,000 notices)."""
    return NewMemory(*item[:9], vector, item[9])


def prepare(content: object, **fields: Any) -> NewMemory:
    """:func:`draft`'s memory (same keywords), built without a vector."""
    return build(draft(content, **fields))


def with_vector(item: NewMemory, vector: bytes) -> NewMemory:
    """``item`` with its vector (a direct construction: ``dataclasses.replace`` costs ten times
    as much, which a batch of 10,000 notices)."""
    return NewMemory(
        item.id,
        item.content,
        item.context,
        item.tags,
        item.created_at,
        item.retained_at,
        item.document_id,
        item.update_mode,
        item.content_hash,
        vector,
        item.supersedes,
    )


def item_draft(item: object, now: str, memory_id: str | None = None) -> Draft:
    """:func:`draft` of one ``retain_many`` item (a string, or a dict of :func:`draft`'s
    fields)."""
    if isinstance(item, str):
        return draft(item, now=now, memory_id=memory_id)
    if not isinstance(item, Mapping):
        raise InvalidInputError(f"each item must be a string or a dict, got {type(item).__name__}")
    unknown = set(item) - ITEM_KEYS
    if unknown:
        raise InvalidInputError(f"unknown item keys: {', '.join(sorted(map(str, unknown)))}")
    if "content" not in item:
        raise InvalidInputError("an item has no 'content'")
    return draft(
        item["content"],
        tags=item.get("tags", ()),
        context=item.get("context"),
        created_at=item.get("created_at"),
        document_id=item.get("document_id"),
        update_mode=item.get("update_mode", "replace"),
        supersedes=item.get("supersedes", ()),
        memory_id=memory_id,
        now=now,
    )


def prepare_item(item: object, now: str, memory_id: str | None = None) -> NewMemory:
    return build(item_draft(item, now, memory_id))


def prepare_many(
    items: Sequence[object],
    now: str,
    ids: Sequence[str],
    gate: Callable[[list[str]], list[bool]] | None = None,
) -> list[Draft]:
    """:func:`item_draft` of each item with its id from ``ids``: the same drafts, and the same
    error prefixed by ``items[<position>]``. A plain string, most of a bulk retain, takes a
    path without the keyword plumbing: its fields are constants but the content and its hash,
    and the strings are redacted together (:func:`memwire.redact.redact_many`, ``gate`` the
    kernel's redaction gate) once every item is validated: redaction raises nothing, so the
    first bad item is still the one reported."""
    out: list[Draft | None] = []
    append = out.append
    plain: list[int] = []
    cleaned: list[str] = []
    for position, (item, memory_id) in enumerate(zip(items, ids, strict=True)):
        try:
            if type(item) is str:
                cleaned.append(clean_text(item, "content", MAX_CONTENT_CHARS))
                plain.append(position)
                append(None)
            else:
                append(item_draft(item, now, memory_id))
        except InvalidInputError as exc:
            raise InvalidInputError(f"items[{position}]: {exc}") from None
    sha256 = hashlib.sha256
    for position, text in zip(plain, redact_many(cleaned, gate), strict=True):
        digest = sha256(text.encode("utf-8")).digest()
        out[position] = (ids[position], text, None, (), now, now, None, "replace", digest, ())
    return cast("list[Draft]", out)


def config_merger(
    values: Mapping[str, Any], *, strict: bool = True
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda current: config.merge_config(current, values, strict=strict)
