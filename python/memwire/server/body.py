"""Request bodies parsed as JSON, the large ones in small steps off the event loop.

``json.loads`` runs in C and keeps the GIL until it returns: a 10,000-item ``retain_many`` body
(2.2 MB) held it for ~3 ms, and its decode from UTF-8 for longer, on the event loop, so every
request in flight waited behind it (the tail of recalls during a large write, issue 18). A body
of at least :data:`STEPWISE_MIN_BYTES` is therefore decoded in chunks and parsed one array
element at a time (the elements of a top-level array, or of the arrays a top-level object
holds, such as ``items``) on a worker thread: between two steps the interpreter may hand the
GIL to another thread, and the loop is free meanwhile.

The stepwise parse gives what ``json.loads`` gives: each element is parsed by the same decoder
(``JSONDecoder.raw_decode``), members are assigned in order (a repeated key keeps its last
value), and any body it does not accept, for whatever reason, is handed to ``json.loads``,
which then raises its own error at its own position (or, were the stepwise parse ever too
strict, parses it).
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any

from memwire.errors import InvalidInputError

__all__ = ["MAX_INT_DIGITS", "STEPWISE_MIN_BYTES", "parse_json"]

STEPWISE_MIN_BYTES = 256 * 1024
"""Bodies at least this long are parsed stepwise (well below it ``json.loads`` takes < 0.5 ms)."""

_DECODE_CHUNK = 256 * 1024

# No field takes an integer beyond 64 bits; a longer literal is refused before int() parses
# it (a 5,001-digit one would otherwise hit CPython's digit limit and end as a 500).
MAX_INT_DIGITS = 20

_WS = re.compile(r"[ \t\n\r]*")  # JSON's whitespace, as json.decoder skips it


def _reject_constant(name: str) -> Any:
    raise InvalidInputError(f"invalid JSON: {name} is not allowed")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise InvalidInputError(f"invalid JSON: an integer of more than {MAX_INT_DIGITS} digits")
    return int(text)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_bounded_int)


class _NotStepwise(Exception):
    """The stepwise parse does not accept the body; ``json.loads`` will say why."""


def parse_json(raw: bytes, *, stepwise: bool = False) -> Any:
    """The JSON value of a request body; an :class:`InvalidInputError` naming what is wrong for
    an empty body, one that is not UTF-8, or one that is not JSON. ``stepwise``: decode and
    parse in small steps (the same value; for a large body on a worker thread)."""
    if not raw or raw.isspace():
        raise InvalidInputError("the request body is empty; send a JSON object")
    text = _decode_stepwise(raw) if stepwise else _decode(raw)
    try:
        if stepwise:
            try:
                return _document(text)
            except (_NotStepwise, InvalidInputError, RecursionError, ValueError):
                pass  # json.loads below gives the error, at its position
        return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"invalid JSON: {exc.msg} at position {exc.pos}") from None
    except RecursionError:
        raise InvalidInputError("invalid JSON: nested too deeply") from None


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInputError("invalid JSON: the body is not UTF-8") from None


def _decode_stepwise(raw: bytes) -> str:
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    view = memoryview(raw)
    try:
        steps = range(0, len(raw), _DECODE_CHUNK)
        parts = [decoder.decode(view[at : at + _DECODE_CHUNK]) for at in steps]
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        raise InvalidInputError("invalid JSON: the body is not UTF-8") from None
    return "".join(parts)


def _skip(text: str, at: int) -> int:
    return _WS.match(text, at).end()  # type: ignore[union-attr]  # the pattern matches ""


def _document(text: str) -> Any:
    at = _skip(text, 0)
    value: Any
    if text.startswith("{", at):
        value, at = _object(text, at)
    elif text.startswith("[", at):
        value, at = _array(text, at)
    else:
        raise _NotStepwise
    if _skip(text, at) != len(text):
        raise _NotStepwise
    return value


def _object(text: str, at: int) -> tuple[dict[str, Any], int]:
    """The top-level object at ``text[at] == "{"``; its array members stepwise."""
    out: dict[str, Any] = {}
    done, at = _opened(text, at, "}")
    while not done:
        if not text.startswith('"', at):
            raise _NotStepwise
        key, at = _DECODER.raw_decode(text, at)
        at = _skip(text, at)
        if not text.startswith(":", at):
            raise _NotStepwise
        at = _skip(text, at + 1)
        if text.startswith("[", at):
            out[key], at = _array(text, at)
        else:
            out[key], at = _DECODER.raw_decode(text, at)
        done, at = _went_on(text, at, "}")
    return out, at


def _array(text: str, at: int) -> tuple[list[Any], int]:
    """The array at ``text[at] == "["``, one element (parsed whole) a step."""
    out: list[Any] = []
    done, at = _opened(text, at, "]")
    while not done:
        item, at = _DECODER.raw_decode(text, at)
        out.append(item)
        done, at = _went_on(text, at, "]")
    return out, at


def _opened(text: str, at: int, close: str) -> tuple[bool, int]:
    """Past the opening bracket at ``at``: (empty, where its first entry or the end is)."""
    at = _skip(text, at + 1)
    if text.startswith(close, at):
        return True, at + 1
    return False, at


def _went_on(text: str, at: int, close: str) -> tuple[bool, int]:
    """After an entry ending at ``at``: (closed, where the next entry or the end is)."""
    at = _skip(text, at)
    if text.startswith(close, at):
        return True, at + 1
    if not text.startswith(",", at):
        raise _NotStepwise
    return False, _skip(text, at + 1)
