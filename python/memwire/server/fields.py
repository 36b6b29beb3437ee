"""The one table of request fields: every door's checks, schemas and flags come from here.

Each :class:`Field` says a field's wire name, type, limits, default, help text, the operations
that take it and the doors that expose it. From it:

- :mod:`memwire.server.ops` checks HTTP bodies, MCP arguments and CLI values (:func:`read`);
- :mod:`memwire.server.openapi` writes the request schemas and query/path parameters;
- :mod:`memwire.server.mcp_server` writes each tool's ``inputSchema``;
- :mod:`memwire.cli` adds the argparse options (type, default, help, choices).

The limits are the Memory layer's own constants, imported, never copied: a change there
reaches every door. Those defined in :mod:`memwire.memory` are read on first use
(:func:`_memory_limits`), because importing that package loads the kernel and numpy, which the
CLI must not pay for just to build its parser (hosts run ``memwire hook`` on every prompt).

The table checks types and ranges only; the Memory API does the rest (NFKC, lengths after
normalisation, blank text, dates, tag rules), so its messages are the ones every door shows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, NamedTuple, TypeAlias

from memwire._text import (
    MAX_BANK_CHARS,
    MAX_CONTENT_CHARS,
    MAX_CONTEXT_CHARS,
    MAX_DOCUMENT_ID_CHARS,
    MAX_QUERY_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
)
from memwire.config import (
    DEFAULT_NEAR_DUPLICATE,
    DEFAULT_PREFER_NEWEST,
    DEFAULT_RECALL_TOKENS,
    MAX_RECALL_TOKENS,
)
from memwire.errors import InvalidInputError

__all__ = [
    "BANK",
    "DOORS",
    "FIELDS",
    "MAX_OFFSET",
    "OPERATIONS",
    "RECALL_FORMATS",
    "TURN_SCHEMA",
    "Field",
    "cli_flags",
    "describe",
    "field",
    "fields_for",
    "json_schema",
    "markdown_table",
    "reject_unknown",
]

Kind = Literal["string", "integer", "number", "boolean", "strings", "choice", "turns", "items"]
"""``items``: an array of memories, each a string or an object of retain's fields. ``boolean``:
JSON true or false; on the CLI a flag and its ``--no-`` form (:func:`cli_flags`)."""
Door = Literal["http", "mcp", "cli"]
DOORS: tuple[Door, ...] = ("http", "mcp", "cli")

RECALL_FORMATS = ("text", "full")
"""HTTP recall's answer shapes (MCP and the CLI always answer full hits)."""
MAX_OFFSET = 2**62
"""The largest ``offset`` of a page of memories. ``Memory.memories`` checks against the same
number but names no constant for it; a test keeps the two equal."""

Number: TypeAlias = int | float
Bound: TypeAlias = Number | Callable[[], Number] | None
Length: TypeAlias = int | Callable[[], int] | None
Choices: TypeAlias = tuple[str, ...] | Callable[[], tuple[str, ...]] | None


class _MemoryLimits(NamedTuple):
    recall_limit: int
    page_limit: int
    reembed_batch: int
    id_chars: int
    update_modes: tuple[str, ...]
    window: int
    turns: int
    batch: int


@functools.cache
def _memory_limits() -> _MemoryLimits:
    from memwire.memory.api import BATCH_SIZE, MAX_LIMIT, MAX_LIST_LIMIT, MAX_REEMBED_BATCH
    from memwire.memory.conversation import MAX_TURNS, MAX_WINDOW
    from memwire.memory.items import MAX_ID_CHARS, UPDATE_MODES

    return _MemoryLimits(
        MAX_LIMIT,
        MAX_LIST_LIMIT,
        MAX_REEMBED_BATCH,
        MAX_ID_CHARS,
        UPDATE_MODES,
        MAX_WINDOW,
        MAX_TURNS,
        BATCH_SIZE,
    )


def _resolve(value: object) -> object:
    return value() if callable(value) else value


@dataclass(frozen=True)
class Field:
    """One request field. ``key`` is unique in the table; ``name`` is what the wire calls it
    (two fields may share one, e.g. recall's ``limit`` and a page's ``limit``)."""

    key: str
    name: str
    kind: Kind
    help: str
    operations: tuple[str, ...]
    required: bool = False
    default: str | int | None = None
    """Applied by :func:`memwire.server.ops.read` (and the CLI) when the field is absent or
    null."""
    default_help: str | None = None
    """How the default is said when the Memory layer picks it (``default`` is None then)."""
    doors: tuple[Door, ...] = DOORS
    flags: tuple[str, ...] = ()
    """The CLI's option strings; empty for a positional argument."""
    metavar: str | None = None
    low: Bound = None
    high: Bound = None
    min_chars: int | None = None
    max_chars: Length = None
    max_items: Length = None
    item_max_chars: Length = None
    values: Choices = None

    @property
    def minimum(self) -> Number | None:
        return _resolve(self.low)  # type: ignore[return-value]

    @property
    def maximum(self) -> Number | None:
        return _resolve(self.high)  # type: ignore[return-value]

    @property
    def max_length(self) -> int | None:
        return _resolve(self.max_chars)  # type: ignore[return-value]

    @property
    def max_count(self) -> int | None:
        """The most items of a list field (``strings``, ``turns``, ``items``)."""
        return _resolve(self.max_items)  # type: ignore[return-value]

    @property
    def item_max_length(self) -> int | None:
        """The most characters of one item of a ``strings`` field."""
        return _resolve(self.item_max_chars)  # type: ignore[return-value]

    @property
    def choices(self) -> tuple[str, ...] | None:
        return _resolve(self.values)  # type: ignore[return-value]


RETAIN = ("retain", "retain_many_item")
"""``retain_many_item``: the fields of one object in retain_many's ``items``."""
RECALL = ("recall",)
CONVERSATION = ("retain_conversation",)
UPDATE = ("update",)
BY_ID = ("update", "history", "restore", "purge")
"""The operations on one memory by id, besides get and forget (issue 17)."""

TURN_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "speaker": {"type": "string", "minLength": 1, "description": "who said it"},
        "text": {"type": "string", "minLength": 1, "description": "what was said"},
        "created_at": {
            "type": "string",
            "description": "when: an ISO 8601 date or datetime, stored as UTC",
        },
        "session": {
            "type": ["string", "integer"],
            "description": "the session it belongs to; a context window never crosses one",
        },
        "tags": {
            "type": "array",
            "items": {"type": "string", "maxLength": MAX_TAG_CHARS},
            "maxItems": MAX_TAGS,
            "description": "labels of this turn's memory",
        },
    },
    "required": ["speaker", "text"],
    "additionalProperties": False,
}
"""One turn of a conversation (``Memory.retain_conversation`` checks it; a test keeps its keys
those of :data:`memwire.memory.conversation.TURN_KEYS`)."""

BANK = Field(
    "bank",
    "bank",
    "string",
    "the memory bank, without control characters",
    (),  # every operation but listing the banks; each door places it (path, argument, --bank)
    default="default",
    flags=("--bank", "-b"),
    min_chars=1,
    max_chars=MAX_BANK_CHARS,
)

FIELDS: tuple[Field, ...] = (
    Field(
        "content",
        "content",
        "string",
        "the memory text; secrets are redacted before it is stored",
        RETAIN,
        required=True,
        min_chars=1,
        max_chars=MAX_CONTENT_CHARS,
    ),
    Field(
        "tags",
        "tags",
        "strings",
        "labels to filter recall by; stored casefolded, so case never matters",
        (*RETAIN, *CONVERSATION),
        flags=("--tag", "-t"),
        metavar="TAG",
        max_items=MAX_TAGS,
        item_max_chars=MAX_TAG_CHARS,
    ),
    Field(
        "context",
        "context",
        "string",
        "where the memory comes from; indexed with it, redacted",
        RETAIN,
        flags=("--context",),
        max_chars=MAX_CONTEXT_CHARS,
    ),
    Field(
        "created_at",
        "created_at",
        "string",
        "when it happened: an ISO 8601 date or datetime, stored as UTC",
        RETAIN,
        default_help="now",
        flags=("--created-at",),
    ),
    Field(
        "document_id",
        "document_id",
        "string",
        "upsert key: this memory becomes the document's current revision (see update_mode)",
        RETAIN,
        flags=("--document-id",),
        max_chars=MAX_DOCUMENT_ID_CHARS,
    ),
    Field(
        "update_mode",
        "update_mode",
        "choice",
        "with document_id: replace the document's previous memory, or refuse a second one "
        "with a conflict (append)",
        RETAIN,
        default="replace",
        flags=("--update-mode",),
        metavar="MODE",
        values=lambda: _memory_limits().update_modes,
    ),
    Field(
        "supersedes",
        "supersedes",
        "strings",
        "ids of live memories of this bank that this one replaces: they leave recall and stay "
        "in its history, in the same transaction as the new memory",
        RETAIN,
        flags=("--supersedes",),
        metavar="ID",
        item_max_chars=lambda: _memory_limits().id_chars,
    ),
    Field(
        "turns",
        "turns",
        "turns",
        "the conversation in order: one memory per turn, stored as 'speaker: text' with its "
        "date and the texts of the turns around it (same session) as its context; secrets are "
        "redacted",
        CONVERSATION,
        required=True,
        max_items=lambda: _memory_limits().turns,
    ),
    Field(
        "before",
        "before",
        "integer",
        "how many turns before each turn go into its context",
        CONVERSATION,
        default=2,
        flags=("--before",),
        metavar="N",
        low=0,
        high=lambda: _memory_limits().window,
    ),
    Field(
        "after",
        "after",
        "integer",
        "how many turns after each turn go into its context (none after a turn that asks)",
        CONVERSATION,
        default=1,
        flags=("--after",),
        metavar="N",
        low=0,
        high=lambda: _memory_limits().window,
    ),
    Field(
        "items",
        "items",
        "items",
        "the memories to store, each a string (its content) or an object with retain's fields "
        "(content, tags, context, created_at, document_id, update_mode, supersedes; any other "
        "is refused); all are checked before any is written, and they are written in one "
        "transaction",
        ("retain_many",),
        required=True,
        doors=("http", "mcp"),
        max_items=lambda: _memory_limits().batch,
    ),
    Field(
        "query",
        "query",
        "string",
        "what to look for",
        ("recall", "reflect"),
        required=True,
        min_chars=1,
        max_chars=MAX_QUERY_CHARS,
    ),
    Field(
        "limit",
        "limit",
        "integer",
        "at most this many memories",
        RECALL,
        default=10,
        flags=("--limit", "-n"),
        low=1,
        high=lambda: _memory_limits().recall_limit,
    ),
    Field(
        "budget",
        "budget",
        "integer",
        "token budget of the content returned; the top hit is truncated rather than dropped",
        RECALL,
        default_help=f"the bank's recall_max_tokens, else {DEFAULT_RECALL_TOKENS}",
        flags=("--budget",),
        low=1,
        high=MAX_RECALL_TOKENS,
    ),
    Field(
        "filter_tags",
        "tags",
        "strings",
        "only memories with at least one of these tags",
        RECALL,
        flags=("--tag", "-t"),
        metavar="TAG",
        max_items=MAX_TAGS,
        item_max_chars=MAX_TAG_CHARS,
    ),
    Field(
        "exclude_tags",
        "exclude_tags",
        "strings",
        "no memory with any of these tags",
        RECALL,
        flags=("--exclude-tag",),
        metavar="TAG",
        max_items=MAX_TAGS,
        item_max_chars=MAX_TAG_CHARS,
    ),
    Field(
        "format",
        "format",
        "choice",
        "text: an array of strings; full: hit objects with id, score, created_at, content, "
        "context, tags",
        RECALL,
        default="text",
        doors=("http",),
        values=RECALL_FORMATS,
    ),
    Field(
        "min_score",
        "min_score",
        "number",
        "drop memories whose fused score is below it, so a query with nothing relevant finds "
        "nothing; fused scores are in [0, 1] (docs/dense.md)",
        ("recall", "reflect"),
        default_help="the bank's min_score, else 0.15; 0 keeps every hit",
        flags=("--min-score",),
        metavar="SCORE",
        low=0,
    ),
    Field(
        "as_of",
        "as_of",
        "string",
        "recall the memories that were live at this instant (before a later version "
        "superseded them or they were trashed): an ISO 8601 date or datetime, UTC when it "
        "names no offset",
        RECALL,
        default_help="now",
        flags=("--as-of",),
        metavar="WHEN",
    ),
    Field(
        "near_duplicate",
        "near_duplicate",
        "number",
        "serve one hit per family of near-duplicates: memories whose texts are the same or "
        "whose index terms have at least this Jaccard similarity; 0 turns it off "
        '(docs/dense.md, "The pack")',
        RECALL,
        default_help=f"the bank's near_duplicate, else {DEFAULT_NEAR_DUPLICATE}",
        flags=("--near-duplicate",),
        metavar="SIMILARITY",
        low=0,
        high=1,
    ),
    Field(
        "prefer_newest",
        "prefer_newest",
        "boolean",
        "serve each family of near-duplicates by its newest memory instead of its best-ranked one",
        RECALL,
        default_help=f"the bank's prefer_newest, else {str(DEFAULT_PREFER_NEWEST).lower()}",
        flags=("--prefer-newest",),
    ),
    Field(
        "id",
        "id",
        "string",
        "the memory id",
        ("get", "forget", *BY_ID),
        required=True,
        min_chars=1,
        max_chars=lambda: _memory_limits().id_chars,
    ),
    Field(
        "new_content",
        "content",
        "string",
        "the new text: a new memory (new id, dated now) supersedes this one, which stays in "
        "its history; redacted like retain's",
        UPDATE,
        flags=("--content",),
        metavar="TEXT",
        min_chars=1,
        max_chars=MAX_CONTENT_CHARS,
    ),
    Field(
        "new_context",
        "context",
        "string",
        "the new context: like content, a new version supersedes this one",
        UPDATE,
        flags=("--context",),
        max_chars=MAX_CONTEXT_CHARS,
    ),
    Field(
        "new_tags",
        "tags",
        "strings",
        "the memory's tags, all of them (an empty list removes every tag); changing only the "
        "tags edits the memory in place, same id",
        UPDATE,
        flags=("--tag", "-t"),
        metavar="TAG",
        max_items=MAX_TAGS,
        item_max_chars=MAX_TAG_CHARS,
    ),
    Field(
        "page_limit",
        "limit",
        "integer",
        "page size",
        ("memories",),
        default=50,
        doors=("http", "cli"),
        flags=("--limit", "-n"),
        low=1,
        high=lambda: _memory_limits().page_limit,
    ),
    Field(
        "offset",
        "offset",
        "integer",
        "skip this many memories (newest first)",
        ("memories",),
        default=0,
        doors=("http", "cli"),
        flags=("--offset",),
        low=0,
        high=MAX_OFFSET,
    ),
    Field(
        "trash_limit",
        "limit",
        "integer",
        "page size",
        ("trash",),
        default=50,
        flags=("--limit", "-n"),
        low=1,
        high=lambda: _memory_limits().page_limit,
    ),
    Field(
        "trash_offset",
        "offset",
        "integer",
        "skip this many trashed memories (the last trashed first)",
        ("trash",),
        default=0,
        flags=("--offset",),
        low=0,
        high=MAX_OFFSET,
    ),
    Field(
        "older_than_days",
        "older_than_days",
        "number",
        "only the memories trashed longer ago than this many days",
        ("empty_trash",),
        default_help="every trashed memory",
        doors=("http", "cli"),
        flags=("--older-than-days",),
        metavar="DAYS",
        low=0,
    ),
    Field(
        "batch",
        "batch",
        "integer",
        "memories per batch (each batch is committed as it goes)",
        ("reembed",),
        default=1000,
        doors=("cli",),
        flags=("--batch",),
        low=1,
        high=lambda: _memory_limits().reembed_batch,
    ),
)

OPERATIONS: dict[str, tuple[Door, ...]] = {
    "retain": DOORS,
    "retain_conversation": DOORS,
    "retain_many": ("http", "mcp"),
    "retain_many_item": (),  # no door: the shape of one of retain_many's items
    "recall": DOORS,
    "reflect": DOORS,
    "get": DOORS,
    "forget": DOORS,
    "memories": ("http", "cli"),
    "update": DOORS,
    "history": DOORS,
    "trash": DOORS,
    "restore": DOORS,
    "purge": DOORS,
    "empty_trash": ("http", "cli"),
    "vacuum": ("cli",),
    "stats": ("http", "cli"),
    "banks": ("http", "cli"),
    "delete_bank": ("http", "cli"),
    "config_get": DOORS,
    "config_put": ("http", "cli"),
    "reembed": ("cli",),
}
"""Every operation and the doors that offer it (all but ``banks`` also take :data:`BANK`)."""


_BY_KEY = {f.key: f for f in (BANK, *FIELDS)}


def field(key: str) -> Field:
    """The field whose :attr:`Field.key` is ``key``."""
    return _BY_KEY[key]


@functools.cache
def fields_for(operation: str, door: Door | None = None) -> tuple[Field, ...]:
    """The fields ``operation`` takes, at ``door`` (every door's when None), in table order."""
    if operation not in OPERATIONS:
        raise KeyError(f"no operation {operation!r}")
    return tuple(
        f for f in FIELDS if operation in f.operations and (door is None or door in f.doors)
    )


def reject_unknown(
    names: Iterable[object], operation: str, door: Door | None = None, *, what: str = "field"
) -> None:
    """Refuse a request naming a field ``operation`` does not take at ``door``: an unknown
    field is a typo or a client of another API, and dropping it silently would answer a
    question that was not asked. The message names the first unknown one and lists the rest.
    (The ``/mw`` memory-wire routes do not call this: memory-wire ignores unknown fields.)"""
    known = {f.name for f in fields_for(operation, door)}
    unknown = sorted(str(n) for n in names if n not in known)
    if unknown:
        listed = ", ".join(sorted(known)) or "none"
        raise InvalidInputError(
            f"unknown {what} {unknown[0]!r} for {operation}; the {what}s are {listed}"
        )


def cli_flags(field: Field) -> tuple[str, ...]:
    """Every CLI option string of ``field``: a boolean's flags and their ``--no-`` forms (as
    :class:`argparse.BooleanOptionalAction` adds them)."""
    if field.kind != "boolean":
        return field.flags
    return (*field.flags, *(f"--no-{f[2:]}" for f in field.flags if f.startswith("--")))


# -- renderings --------------------------------------------------------------------------------


def _number(value: Number) -> str:
    return f"{value:,}" if isinstance(value, int) else repr(value)


def limits_text(field: Field) -> str:
    """The limits in words: ``1 to 100``, ``at most 32 tags of up to 64 characters``."""
    if field.kind in ("integer", "number"):
        low, high = field.minimum, field.maximum
        if low is not None and high is not None and high < MAX_OFFSET:
            return f"{_number(low)} to {_number(high)}"
        if low is not None:
            return f"at least {_number(low)}"
        return ""
    if field.kind == "choice":
        return "one of " + ", ".join(field.choices or ())
    if field.kind == "boolean":
        return "true or false"
    if field.kind == "strings":
        each = f"up to {field.item_max_length} characters each"
        return f"at most {field.max_count} of {each}" if field.max_count is not None else each
    if field.kind == "turns":
        return f"at most {field.max_count:,} turns" if field.max_count is not None else ""
    if field.kind == "items":
        return f"1 to {field.max_count:,} memories"
    high_chars = field.max_length
    return f"up to {high_chars:,} characters" if high_chars is not None else ""


def default_text(field: Field) -> str:
    if isinstance(field.default, str):
        return f"default {field.default!r}"
    if field.default is not None:
        return f"default {field.default}"
    if field.default_help is not None:
        return f"default: {field.default_help}"
    return ""


def describe(field: Field, *, with_default: bool = True) -> str:
    """The help text every door shows: what it is, then its limits and default."""
    said = (limits_text(field), default_text(field) if with_default else "")
    extra = "; ".join(p for p in said if p)
    return f"{field.help} ({extra})" if extra else field.help


_JSON_TYPES = {
    "string": "string",
    "integer": "integer",
    "number": "number",
    "boolean": "boolean",
    "choice": "string",
}


def json_schema(field: Field, *, nullable: bool = False) -> dict[str, object]:
    """The JSON Schema of ``field``; ``nullable`` admits null (HTTP: null means absent)."""
    schema: dict[str, object]
    if field.kind in ("strings", "turns"):
        items: dict[str, object] = {"type": "string"}
        if field.kind == "turns":
            items = dict(TURN_SCHEMA)
        elif field.item_max_length is not None:
            items["maxLength"] = field.item_max_length
        schema = {"type": "array", "items": items}
        if field.max_count is not None:
            schema["maxItems"] = field.max_count
    elif field.kind == "items":
        schema = {"type": "array", "items": _item_schema(), "minItems": 1}
        if field.max_count is not None:
            schema["maxItems"] = field.max_count
    else:
        schema = {"type": _JSON_TYPES[field.kind]}
    if field.kind == "choice":
        schema["enum"] = list(field.choices or ())
    if field.min_chars is not None:
        schema["minLength"] = field.min_chars
    if field.max_length is not None:
        schema["maxLength"] = field.max_length
    if field.minimum is not None:
        schema["minimum"] = field.minimum
    if field.maximum is not None:
        schema["maximum"] = field.maximum
    if field.default is not None:
        schema["default"] = field.default
    if nullable:
        schema["type"] = [schema["type"], "null"]
        if "enum" in schema:
            schema["enum"] = [*(field.choices or ()), None]
    schema["description"] = describe(field)
    return schema


def _item_schema() -> dict[str, object]:
    """One of retain_many's items: a string, or an object of retain's fields."""
    taken = fields_for("retain_many_item")
    return {
        "anyOf": [
            {"type": "string", "minLength": 1},
            {
                "type": "object",
                "properties": {f.name: json_schema(f, nullable=True) for f in taken},
                "required": [f.name for f in taken if f.required],
                "additionalProperties": False,
            },
        ]
    }


def markdown_table() -> str:
    """The table as Markdown, as docs/serving.md shows it (a test keeps the two equal)."""
    rows = [
        "| Field | Type | Limits | Default | Operations | Doors | CLI | What it is |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    kinds = {
        "strings": "array of strings",
        "choice": "string",
        "turns": "array of turns",
        "items": "array of memories",
    }
    for f in (BANK, *FIELDS):
        if "cli" not in f.doors:
            cli = "-"
        elif f.flags:
            cli = ", ".join(f"`{flag}`" for flag in cli_flags(f))
        else:
            cli = "argument"
        default = f"`{f.default}`" if f.default is not None else f.default_help or "-"
        cells = [
            f"`{f.name}`",
            kinds.get(f.kind, f.kind) + (" (required)" if f.required else ""),
            limits_text(f) or "-",
            default,
            ", ".join(o for o in f.operations if OPERATIONS[o])
            if f.operations
            else "all but `banks`",
            ", ".join(d.upper() for d in f.doors),
            cli,
            f.help,
        ]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)
