"""Text validation and normalisation shared by every layer above the kernel.

All text memwire stores or indexes goes through :func:`clean_text`: it must be a ``str``,
contain no lone surrogates (they cannot be encoded as UTF-8, so they could not be stored), and
is NFKC-normalised once, with the interpreter's :mod:`unicodedata`, so both kernels see the
same strings (docs/parity.md, "Input the kernel may assume").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable

from memwire.errors import InvalidInputError

__all__ = [
    "MAX_BANK_CHARS",
    "MAX_CONTENT_CHARS",
    "MAX_CONTEXT_CHARS",
    "MAX_DOCUMENT_ID_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_TAGS",
    "MAX_TAG_CHARS",
    "clean_bank",
    "clean_label",
    "clean_tags",
    "clean_text",
    "embed_text",
    "fold_tag",
    "fold_tags",
    "index_text",
    "nfkc",
]

MAX_CONTENT_CHARS = 100_000
MAX_CONTEXT_CHARS = 20_000
MAX_QUERY_CHARS = 10_000
MAX_BANK_CHARS = 128
MAX_TAG_CHARS = 64
MAX_TAGS = 32
MAX_DOCUMENT_ID_CHARS = 256

_SURROGATE = re.compile("[\ud800-\udfff]")
# C0/C1 controls and DEL: never allowed in names (bank, tag, document id).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
# Bidi embedding, override and isolate controls and marks: they make a name display as
# another (never allowed in names; zero-width joiners stay legal in tags, for emoji).
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def nfkc(text: str) -> str:
    """NFKC-normalise ``text`` (the one normalisation memwire applies)."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text)


def clean_text(value: object, what: str, max_chars: int, *, allow_blank: bool = False) -> str:
    """Validate and NFKC-normalise free text (content, context, query)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, got {type(value).__name__}")
    if not value.isascii() and _SURROGATE.search(value):
        raise InvalidInputError(f"{what} contains a lone surrogate (not valid Unicode text)")
    text = nfkc(value)
    if not allow_blank and not text.strip():
        raise InvalidInputError(f"{what} must not be blank")
    if len(text) > max_chars:
        raise InvalidInputError(
            f"{what} is too long: {len(text)} characters, the limit is {max_chars}"
        )
    return text


def clean_label(value: object, what: str, max_chars: int) -> str:
    """Validate a name-like string (bank, tag, document id): normalised and stripped."""
    text = clean_text(value, what, max_chars * 4).strip()
    if len(text) > max_chars:
        raise InvalidInputError(
            f"{what} is too long: {len(text)} characters, the limit is {max_chars}"
        )
    if _CONTROL.search(text):
        raise InvalidInputError(f"{what} must not contain control characters")
    if _BIDI.search(text):
        raise InvalidInputError(f"{what} must not contain bidi control characters")
    return text


_UNADDRESSABLE_BANK = re.compile(r".+/memories(/[^/]+)?\Z")


def clean_bank(value: object) -> str:
    """A bank name: a label without invisible characters (Unicode format characters: zero-width
    spaces and joiners, bidi controls, BOM), which would make ``default`` and
    ``default`` + U+200B two banks no one can tell apart."""
    name = clean_label(value, "bank", MAX_BANK_CHARS)
    if not name.isascii() and any(unicodedata.category(ch) == "Cf" for ch in name):
        raise InvalidInputError(
            "bank must not contain invisible characters (zero-width or bidi controls)"
        )
    if _UNADDRESSABLE_BANK.search(name):
        # DELETE /banks/x/memories/y forgets memory y of bank x, GET /banks/x/memories/stats
        # reads memory "stats": banks named "x/memories/y" or "x/memories" could be created but
        # not deleted or read over HTTP.
        raise InvalidInputError(
            "bank must not end in '/memories' or '/memories/<name>': the HTTP API could not "
            "address it"
        )
    return name


def fold_tag(tag: str) -> str:
    """A tag as stored and compared: casefolded (Unicode full case folding), so ``Deploy``,
    ``DEPLOY`` and ``deploy`` are one tag everywhere: filters, ``exclude_tags``, stats."""
    return tag.casefold()


def fold_tags(tags: Iterable[str]) -> list[str]:
    """Casefolded tags, order kept, duplicates (after folding) dropped."""
    out: list[str] = []
    for tag in tags:
        folded = fold_tag(tag)
        if folded not in out:
            out.append(folded)
    return out


def clean_tags(
    value: object, what: str = "tags", check: Callable[[str], object] | None = None
) -> list[str]:
    """A tag list: a string (one tag) or an iterable of strings; each normalised (NFKC) and
    casefolded (:func:`fold_tag`); order kept, duplicates dropped. ``check`` sees each tag
    before it is folded (the secret check: its patterns know the case of what they match)."""
    if value is None:
        return []
    if isinstance(value, str):
        items: Iterable[object] = (value,)
    elif isinstance(value, (bytes, bytearray, dict)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{what} must be a list of strings, got {type(value).__name__}")
    else:
        items = value
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        tag = clean_label(item, "tag", MAX_TAG_CHARS)
        if check is not None:
            check(tag)
        tag = fold_tag(tag)
        if len(tag) > MAX_TAG_CHARS:  # folding may lengthen a tag ("ß" is "ss")
            raise InvalidInputError(
                f"tag is too long: {len(tag)} characters casefolded, the limit is {MAX_TAG_CHARS}"
            )
        if tag not in seen:
            seen.add(tag)
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"{what}: at most {MAX_TAGS} tags, got {len(out)}")
    return out


def index_text(content: str, context: str | None) -> str:
    """The text the kernel indexes for one memory.

    Without context it is the content. With context it is the content twice, then the
    context: BM25 then weighs the memory's own words twice as much as its context (BM25F with
    integer field weights 2 and 1, exact on both backends because it is plain term counting).
    Context widens what a memory is found by without letting a long context outrank the
    memory that says the thing (docs/storage.md, "What is indexed").
    """
    return content if not context else content + "\n" + content + "\n" + context


def embed_text(content: str) -> str:
    """The text a memory's vector is computed from: its content alone.

    The lexical streams already use the context; mean-pooled context drowns what the memory
    itself says (docs/dense.md, "The space rules").
    """
    return content
