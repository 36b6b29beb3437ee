"""Tokenizer of the pure kernel (docs/parity.md, "Tokenizer").

Folding is one ``str.translate`` over the generated FOLD table and scanning one regex whose
character classes are generated from CLASS_RANGES, so the pure kernel never consults the
interpreter's own Unicode data.
"""

from __future__ import annotations

import re

from memwire._pure._generated import CLASS_RANGES, FOLD, JOINERS, MAX_TOKEN_CHARS, STOPWORDS

__all__ = ["tokenize"]

_WORD, _CJK = 1, 2
_FOLD_TABLE: dict[int, str] = dict(FOLD)


def _char_class(cls: int) -> str:
    parts = []
    for lo, hi, c in CLASS_RANGES:
        if c == cls:
            parts.append(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}")
    return "[" + "".join(parts) + "]"


def _escape(cp: int) -> str:
    return f"\\U{cp:08x}"


_W = _char_class(_WORD)
_C = _char_class(_CJK)
_J = "[" + "".join(_escape(ord(ch)) for ch in JOINERS) + "]"
_TOKEN_RE = re.compile(f"({_W}+(?:{_J}{_W}+)*)|({_C}+)")
_JOIN_RE = re.compile(_J)


def tokenize(text: str) -> list[str]:
    """Split NFKC-normalised ``text`` into index terms, in order, duplicates kept."""
    folded = text.translate(_FOLD_TABLE)
    out: list[str] = []
    append = out.append
    for match in _TOKEN_RE.finditer(folded):
        group = match.group(1)
        if group is not None:
            parts = _JOIN_RE.split(group)
            if len(parts) > 1 and len(group) <= MAX_TOKEN_CHARS and group not in STOPWORDS:
                append(group)
            for part in parts:
                if len(part) <= MAX_TOKEN_CHARS and part not in STOPWORDS:
                    append(part)
        else:
            run = match.group(2)
            if len(run) == 1:
                if run not in STOPWORDS:
                    append(run)
            else:
                for i in range(len(run) - 1):
                    bigram = run[i : i + 2]
                    if bigram not in STOPWORDS:
                        append(bigram)
    return out
