"""Tokenizer of the pure kernel (docs/parity.md, "Tokenizer").

Folding is one ``str.translate`` over the generated FOLD table and scanning one regex whose
character classes are generated from CLASS_RANGES, so the pure kernel never consults the
interpreter's own Unicode data.
"""

from __future__ import annotations

import re

from snowballstemmer.english_stemmer import EnglishStemmer

from memwire._kernel.pure._generated import CLASS_RANGES, FOLD, JOINERS, MAX_TOKEN_CHARS, STOPWORDS

__all__ = ["tokenize"]

_WORD, _CJK = 1, 2
_FOLD_TABLE: dict[int, str] = dict(FOLD)


def _char_class(cls: int, limit: int = 0x10FFFF) -> str:
    parts = []
    for lo, hi, c in CLASS_RANGES:
        if c == cls and lo <= limit:
            hi = min(hi, limit)
            parts.append(_escape(lo) if lo == hi else f"{_escape(lo)}-{_escape(hi)}")
    return "[" + "".join(parts) + "]"


def _escape(cp: int) -> str:
    return f"\\U{cp:08x}"


_W = _char_class(_WORD)
_C = _char_class(_CJK)
_J = "[" + "".join(_escape(ord(ch)) for ch in JOINERS) + "]"
_TOKEN_RE = re.compile(f"({_W}+(?:{_J}{_W}+)*)|({_C}+)")
_JOIN_RE = re.compile(_J)
# The same tables clipped to ASCII: most agent text is ASCII, and a regex whose classes span
# all of Unicode is several times slower to run. Same tokens by construction.
_AW = _char_class(_WORD, 0x7F)
_ASCII_TOKEN_RE = re.compile(f"({_AW}+(?:{_J}{_AW}+)*)|(?!)()")
_ASCII_FOLD = {cp: s for cp, s in FOLD.items() if cp < 0x80}
# Step 6: only tokens of ASCII a-z alone are stemmed (Snowball English, snowballstemmer 2.2.0,
# the same algorithm the Rust kernel runs through rust-stemmers 1.2.0). The pure-Python class is
# imported directly: snowballstemmer.stemmer() would switch to PyStemmer when it is installed.
_STEMMABLE = re.compile("[a-z]+")
_STEMMER = EnglishStemmer()
_STEMS: dict[str, str] = {}
_STEMS_MAX = 500_000


def _stem(token: str) -> str:
    stem = _STEMS.get(token)
    if stem is None:
        stem = _STEMMER.stemWord(token) if _STEMMABLE.fullmatch(token) else token
        if len(_STEMS) >= _STEMS_MAX:
            _STEMS.clear()
        _STEMS[token] = stem
    return stem


def tokenize(text: str) -> list[str]:
    """Split NFKC-normalised ``text`` into index terms, in order, duplicates kept."""
    if text.isascii():
        folded, pattern = text.translate(_ASCII_FOLD), _ASCII_TOKEN_RE
    else:
        folded, pattern = text.translate(_FOLD_TABLE), _TOKEN_RE
    out: list[str] = []
    append = out.append
    for match in pattern.finditer(folded):
        group = match.group(1)
        if group is not None:
            parts = _JOIN_RE.split(group)
            if len(parts) > 1 and len(group) <= MAX_TOKEN_CHARS and group not in STOPWORDS:
                append(group)
            for part in parts:
                if len(part) <= MAX_TOKEN_CHARS and part not in STOPWORDS:
                    append(_stem(part))
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
