"""Read a host's transcript and cut it into exchanges worth retaining.

Every host's transcript format (:mod:`memwire.hosts`, ``Host.transcript``) is applied to each
entry, per line / per file, never by file name: JSON Lines of messages, possibly wrapped in a
host's envelope, or one JSON document holding a list of messages, whose messages carry a role
and text in a content field; anything else is taken as the file's text, one user message.
Tool calls, tool results and thinking are other part types and are skipped: only the
conversation's own text is kept.

An *exchange* is one user prompt and the assistant text that follows it. Exchanges are numbered
from the start of the transcript, so the same exchange always gets the same number: the hooks
use it in the memory's ``document_id`` and a re-run or a spool replay never duplicates it.
Host-injected wrappers and boilerplate (each host lists its own) and memwire's own recall
blocks are removed before anything is kept.

Capture stores each message (a *turn*, cut into pieces when longer than a chunk) as one memory
with the turns around it as its context, through the windowing of
``Memory.retain_conversation`` (:func:`memwire.memory.conversation.conversation_items`), so a
short reply ("yes, do that") is found by what it answered. Each message is redacted whole
before it is cut, and before its text reaches any other turn's context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwire.hooks.block import strip_blocks
from memwire.hosts import TranscriptRules, transcript_rules

__all__ = [
    "MAX_CHUNK_CHARS",
    "Exchange",
    "Turn",
    "read_exchanges",
    "turn_chunks",
]

MAX_CHUNK_CHARS = 4000
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024


@dataclass
class Exchange:
    """One user prompt and the assistant text after it (either side may be empty)."""

    index: int
    user: list[str] = field(default_factory=list)
    assistant: list[str] = field(default_factory=list)
    timestamp: str | None = None

    def text(self) -> str:
        parts = [f"User: {t}" for t in self.user] + [f"Assistant: {t}" for t in self.assistant]
        return "\n\n".join(parts)


@dataclass(frozen=True)
class Turn:
    """A piece of one message of an exchange, with the turns around it as context (what
    :func:`turn_chunks` gives: one memory each)."""

    exchange: int
    part: int
    """Its position among the pieces of its exchange (a stable part of its document id)."""
    text: str
    """``"User: ..."`` or ``"Assistant: ..."``, redacted."""
    context: str | None
    timestamp: str | None


class _Reader:
    """Every host's transcript rules, ready to apply to entries."""

    def __init__(self, rules: TranscriptRules) -> None:
        self.rules = rules
        # Tags hosts wrap around injected (not typed) text; their content is dropped. Longest
        # first, so a tag is never taken for a shorter one it begins with.
        names = "|".join(re.escape(t) for t in rules.wrappers) or r"(?!)"
        self.wrappers = re.compile(rf"<({names})\b[^>]*>.*?(?:</\1>|\Z)", re.S)

    def clean(self, text: str) -> str:
        text = strip_blocks(text)
        text = self.wrappers.sub("", text)
        return text.strip()

    def texts(self, content: Any) -> list[str]:
        """The plain text parts of a message's content (tool calls and results are skipped)."""
        if isinstance(content, str):
            return [content]
        out: list[str] = []
        if isinstance(content, dict):
            content = [content]
        if isinstance(content, list):
            for part in content:
                if isinstance(part, str):
                    out.append(part)
                elif isinstance(part, dict):
                    kind = part.get(self.rules.part_kind_key)
                    text = part.get(self.rules.part_text_key)
                    if isinstance(text, str) and (kind is None or kind in self.rules.text_types):
                        out.append(text)
        return out

    def message(self, obj: Any) -> tuple[str, list[str], str | None] | None:
        """``(role, texts, timestamp)`` for one transcript entry, None when not a message."""
        rules = self.rules
        if not isinstance(obj, dict):
            return None
        stamp = obj.get(rules.timestamp_key)
        stamp = stamp if isinstance(stamp, str) else None
        if any(obj.get(flag) for flag in rules.skip_flags):
            return None
        for envelope in rules.envelopes:
            inner = obj.get(envelope.inner)
            if obj.get(envelope.kind_key) in envelope.kinds and isinstance(inner, dict):
                if envelope.inner_kind is not None and (
                    inner.get(envelope.kind_key) != envelope.inner_kind
                ):
                    return None
                obj = inner
                break
        role: Any = None
        for key in rules.role_keys:
            if key in obj:
                role = obj[key]
                break
        if not isinstance(role, str):
            return None
        role = role.lower()
        if role in rules.user_roles:
            role = "user"
        elif role in rules.assistant_roles:
            role = "assistant"
        else:
            return None
        for key in rules.content_keys:
            if key in obj:
                return role, self.texts(obj[key]), stamp
        for key in rules.string_keys:
            if isinstance(obj.get(key), str):
                return role, [obj[key]], stamp
        return None

    def entries(self, raw: str) -> Iterator[Any]:
        stripped = raw.lstrip()
        if stripped.startswith(("{", "[")):
            try:
                whole = json.loads(stripped)
            except ValueError:
                whole = None
            if isinstance(whole, list):
                yield from whole
                return
            if isinstance(whole, dict):
                for key in self.rules.document_keys:
                    value = whole.get(key)
                    if isinstance(value, list):
                        yield from value
                        return
                yield whole
                return
        for line in raw.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except ValueError:  # a torn last line, or not JSON at all
                yield line

    def exchanges(self, entries: Iterable[Any]) -> list[Exchange]:
        out: list[Exchange] = []
        current: Exchange | None = None
        plain: list[str] = []
        skip = self.rules.skip_prefixes
        for entry in entries:
            if isinstance(entry, str):
                plain.append(entry)
                continue
            found = self.message(entry)
            if found is None:
                continue
            role, texts, stamp = found
            kept = [c for c in (self.clean(t) for t in texts) if c and not c.startswith(skip)]
            if not kept:
                continue
            if role == "user":
                if current is None or current.assistant:
                    current = Exchange(index=len(out), timestamp=stamp)
                    out.append(current)
                current.user.extend(kept)
            else:
                if current is None:
                    current = Exchange(index=len(out), timestamp=stamp)
                    out.append(current)
                current.assistant.extend(kept)
        if not out and plain:
            text = self.clean("\n".join(plain))
            if text:
                out.append(Exchange(index=0, user=[text]))
        return out


def read_exchanges(path: str | Path) -> list[Exchange]:
    """Every exchange of the transcript at ``path`` (empty if it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_TRANSCRIPT_BYTES).decode("utf-8", "replace")
    except OSError:
        return []
    reader = _Reader(transcript_rules())
    return reader.exchanges(reader.entries(raw))


def _split(text: str, limit: int) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters, at paragraph, line or
    sentence boundaries when there is one in the second half of the window."""
    pieces: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = -1
        for sep in ("\n\n", "\n", ". ", " "):
            at = window.rfind(sep)
            if at >= limit // 2:
                cut = at + len(sep)
                break
        if cut <= 0:
            cut = limit
        pieces.append(text[:cut].strip())
        text = text[cut:]
    if text.strip():
        pieces.append(text.strip())
    return [p for p in pieces if p]


def _redacted(text: str) -> str:
    from memwire._text import nfkc
    from memwire.redact import redact

    return redact(nfkc(text))


def turn_chunks(
    exchanges: list[Exchange], start: int = 0, limit: int = MAX_CHUNK_CHARS
) -> list[Turn]:
    """The assistant turns of ``exchanges[start:]``, one per message piece, each with the texts
    of the turns around it (``retain_conversation``'s default window over every message, the
    user's included, which may reach into the exchanges before ``start``) as its context.

    Only the assistant's pieces become memories: a prompt hook that injected the user's own
    earlier question ("User: how do we deploy?") would show the agent nothing it can use, while
    the reply is found by that question, which sits in its context. Every message is redacted
    whole before it is cut into pieces of at most ``limit`` characters and before any window
    is built."""
    from memwire.memory.conversation import conversation_items

    pieces: list[tuple[int, int, str, str, str | None]] = []
    for exchange in exchanges:
        part = 0
        said = [("User", t) for t in exchange.user] + [("Assistant", t) for t in exchange.assistant]
        for speaker, message in said:
            for piece in _split(_redacted(message), limit):
                pieces.append((exchange.index, part, speaker, piece, exchange.timestamp))
                part += 1
    if not pieces:
        return []
    items = conversation_items([{"speaker": p[2], "text": p[3]} for p in pieces])
    return [
        Turn(
            exchange=index,
            part=part,
            text=item["content"],
            context=item.get("context"),
            timestamp=stamp,
        )
        for (index, part, speaker, _, stamp), item in zip(pieces, items, strict=True)
        if index >= start and speaker == "Assistant"
    ]
