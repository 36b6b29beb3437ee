"""Conversation ingest: ordered turns into memories, each with the turns around it as context.

A turn alone ("sure, Thursday works") rarely says what it is about; the turns around it do.
Storing each turn with its neighbours as context (matched at half weight, docs/storage.md) is
the memory design the LoCoMo harness measures (docs/BENCHMARKS.md): 2 turns before and 1 after,
within the same session, chosen on the LoCoMo dev split, with two refinements chosen there too:

- a turn that asks (its text ends with ``?``) is stored without the turns after it: with its
  answer in its context it matched a question about that answer as well as the answer did and,
  carrying the question's words as content, came first;
- a turn with ``created_at`` carries its date (``8 May 2023``) as the first line of its
  context, so "what did we decide in May" finds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memwire import _dates
from memwire._text import MAX_CONTEXT_CHARS
from memwire.errors import InvalidInputError

__all__ = [
    "DEFAULT_AFTER",
    "DEFAULT_BEFORE",
    "MAX_TURNS",
    "MAX_WINDOW",
    "TURN_KEYS",
    "conversation_items",
    "date_line",
    "is_question",
]

DEFAULT_BEFORE = 2
DEFAULT_AFTER = 1
MAX_WINDOW = 20
MAX_TURNS = 100_000
"""The most turns one call stores (a long conversation is sent in parts: a window never needs
more than its neighbours, and ``session`` keeps parts apart)."""
TURN_KEYS = frozenset(("speaker", "text", "created_at", "session", "tags"))
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


def is_question(text: str) -> bool:
    """Whether a turn asks: its text ends with a question mark (trailing space ignored)."""
    return text.rstrip().endswith("?")


def date_line(created_at: object) -> str | None:
    """A turn's UTC date as its context's first line (``8 May 2023``, English month names
    whatever the locale), or None without a date or with one that does not parse
    (``retain_many`` reports that)."""
    if created_at is None:
        return None
    try:
        moment = _dates.parse_created_at(created_at)
    except InvalidInputError:
        return None
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment.year}"


def _window(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_WINDOW:
        raise InvalidInputError(f"{name} must be an integer between 0 and {MAX_WINDOW}")
    return value


def _turn(position: int, turn: object) -> dict[str, Any]:
    where = f"turns[{position}]"
    if not isinstance(turn, Mapping):
        raise InvalidInputError(f"{where}: a turn must be a dict with speaker and text")
    unknown = sorted(str(k) for k in turn if k not in TURN_KEYS)
    if unknown:
        raise InvalidInputError(f"{where}: unknown key {unknown[0]!r}")
    speaker, text = turn.get("speaker"), turn.get("text")
    if not isinstance(speaker, str) or not speaker.strip():
        raise InvalidInputError(f"{where}: speaker must be a non-empty string")
    if not isinstance(text, str) or not text.strip():
        raise InvalidInputError(f"{where}: text must be a non-empty string")
    session = turn.get("session")
    if session is not None and (isinstance(session, bool) or not isinstance(session, (str, int))):
        raise InvalidInputError(f"{where}: session must be a string or an integer")
    return dict(turn)


def _tag_list(tags: object) -> list[str]:
    """A tag list as given (one string is one tag; the Memory API checks the rest)."""
    if tags is None:
        return []
    if isinstance(tags, str):
        return [tags]
    if isinstance(tags, Iterable) and not isinstance(tags, (bytes, Mapping)):
        return list(tags)
    raise InvalidInputError("tags must be a list of strings")


def conversation_items(
    turns: Iterable[object],
    *,
    before: int = DEFAULT_BEFORE,
    after: int = DEFAULT_AFTER,
    tags: Iterable[str] | None = None,
) -> list[dict[str, Any]]:
    """The ``retain_many`` items of a conversation: per turn, content ``"speaker: text"`` and
    context its date (when it has ``created_at``), then the texts of up to ``before`` turns
    before it and ``after`` after it in the same ``session`` (none after a turn that asks, see
    :func:`is_question`; one line each, without speaker labels; cut to the context limit)."""
    if isinstance(turns, (str, bytes, Mapping)):
        raise InvalidInputError("turns must be a list of dicts with speaker and text")
    before = _window(before, "before")
    after = _window(after, "after")
    checked = [_turn(i, t) for i, t in enumerate(turns)]
    if len(checked) > MAX_TURNS:
        raise InvalidInputError(
            f"turns: at most {MAX_TURNS:,} turns per call, got {len(checked):,}"
        )
    shared = _tag_list(tags)
    items: list[dict[str, Any]] = []
    # Positions of each session's turns, in conversation order: a window never crosses a
    # session, even when sessions interleave.
    sessions: dict[object, list[int]] = {}
    at: list[int] = []
    for i, turn in enumerate(checked):
        members = sessions.setdefault(turn.get("session"), [])
        at.append(len(members))
        members.append(i)
    for i, turn in enumerate(checked):
        members = sessions[turn.get("session")]
        k = at[i]
        # A question is not stored with its answer: that context made it outrank the answer.
        ahead = 0 if is_question(turn["text"]) else after
        near = members[max(0, k - before) : k] + members[k + 1 : k + 1 + ahead]
        dated = date_line(turn.get("created_at"))
        around = ([dated] if dated else []) + [checked[j]["text"] for j in near]
        item: dict[str, Any] = {"content": f"{turn['speaker']}: {turn['text']}"}
        if around:
            item["context"] = "\n".join(around)[:MAX_CONTEXT_CHARS]
        if turn.get("created_at") is not None:
            item["created_at"] = turn["created_at"]
        try:
            own = _tag_list(turn.get("tags"))
        except InvalidInputError:
            raise InvalidInputError(f"turns[{i}]: tags must be a list of strings") from None
        if shared or own:
            item["tags"] = shared + [t for t in own if t not in shared]
        items.append(item)
    return items
