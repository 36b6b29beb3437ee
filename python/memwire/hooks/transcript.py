"""Read a host's transcript and cut it into exchanges worth retaining.

Understood formats (detected per line / per file, never by file name):

- JSON Lines with Claude Code entries (``{"type": "user"|"assistant", "message": {"role",
  "content": str | [{"type": "text", "text"}, ...]}, "timestamp"}``); tool calls, tool results
  and thinking blocks are skipped: only the conversation's own text is kept;
- JSON Lines with Codex rollout items (``{"type": "response_item", "payload": {"type":
  "message", "role", "content": [{"type": "input_text"|"output_text", "text"}]}}``);
- JSON Lines or a JSON document whose messages carry ``role``/``type`` and ``content``/``text``/
  ``parts`` (Cursor, Gemini CLI and other hosts);
- anything else: the file's text as one user message.

An *exchange* is one user prompt and the assistant text that follows it. Exchanges are numbered
from the start of the transcript, so the same exchange always gets the same number: the hooks
use it in the memory's ``document_id`` and a re-run or a spool replay never duplicates it.
Host-injected wrappers (``<system-reminder>``, ``<environment_context>``...) and memwire's own
recall blocks are removed before anything is kept.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwire.hooks.block import strip_blocks

__all__ = ["MAX_CHUNK_CHARS", "Chunk", "Exchange", "chunk_exchange", "read_exchanges"]

MAX_CHUNK_CHARS = 4000
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
_USER = {"user", "human"}
_ASSISTANT = {"assistant", "model", "gemini", "ai", "agent", "bot"}
_TEXT_TYPES = {"text", "input_text", "output_text"}
# Tags hosts wrap around injected (not typed) text; their content is dropped.
_WRAPPERS = re.compile(
    r"<(system-reminder|environment_context|user_instructions|local-command-stdout|"
    r"local-command-stderr|command-message|command-name|command-args|user-prompt-submit-hook|"
    r"session-start-hook)\b[^>]*>.*?(?:</\1>|\Z)",
    re.S,
)
_SKIP_PREFIXES = ("# AGENTS.md instructions", "<permissions instructions>", "Caveat: The messages")


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
class Chunk:
    """A piece of one exchange small enough to be one memory."""

    exchange: int
    part: int
    text: str
    timestamp: str | None


def _clean(text: str) -> str:
    text = strip_blocks(text)
    text = _WRAPPERS.sub("", text)
    return text.strip()


def _texts(content: Any) -> list[str]:
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
                kind = part.get("type")
                text = part.get("text")
                if isinstance(text, str) and (kind is None or kind in _TEXT_TYPES):
                    out.append(text)
    return out


def _message(obj: Any) -> tuple[str, list[str], str | None] | None:
    """``(role, texts, timestamp)`` for one transcript entry, None when it is not a message."""
    if not isinstance(obj, dict):
        return None
    stamp = obj.get("timestamp")
    stamp = stamp if isinstance(stamp, str) else None
    if obj.get("isMeta") or obj.get("isSidechain") or obj.get("isCompactSummary"):
        return None
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind == "response_item" and isinstance(payload, dict):  # Codex rollout
        if payload.get("type") != "message":
            return None
        obj = payload
    elif kind in ("user", "assistant") and isinstance(obj.get("message"), dict):  # Claude Code
        obj = obj["message"]
    role = obj.get("role", obj.get("type"))
    if not isinstance(role, str):
        return None
    role = role.lower()
    if role in _USER:
        role = "user"
    elif role in _ASSISTANT:
        role = "assistant"
    else:
        return None
    if "content" in obj:
        texts = _texts(obj["content"])
    elif "parts" in obj:
        texts = _texts(obj["parts"])
    elif isinstance(obj.get("text"), str):
        texts = [obj["text"]]
    elif isinstance(obj.get("message"), str):
        texts = [obj["message"]]
    else:
        return None
    return role, texts, stamp


def _entries(raw: str) -> Iterator[Any]:
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
            for key in ("messages", "history", "conversation", "turns", "items"):
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


def _exchanges(entries: Iterable[Any]) -> list[Exchange]:
    out: list[Exchange] = []
    current: Exchange | None = None
    plain: list[str] = []
    for entry in entries:
        if isinstance(entry, str):
            plain.append(entry)
            continue
        found = _message(entry)
        if found is None:
            continue
        role, texts, stamp = found
        kept = [c for c in (_clean(t) for t in texts) if c and not c.startswith(_SKIP_PREFIXES)]
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
        text = _clean("\n".join(plain))
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
    return _exchanges(_entries(raw))


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


def chunk_exchange(exchange: Exchange, limit: int = MAX_CHUNK_CHARS) -> list[Chunk]:
    """The chunks of one exchange (one when it fits in ``limit`` characters)."""
    text = exchange.text()
    return [
        Chunk(exchange=exchange.index, part=n, text=piece, timestamp=exchange.timestamp)
        for n, piece in enumerate(_split(text, limit))
    ]
