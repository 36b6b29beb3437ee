"""The bundled static embedder's kernel: uncased WordPiece + integer row sums (docs/parity.md).

Pre-processing is driven by the generated EMBED_* tables (pinned UCD), so both kernels split
and fold text identically; a text's vector is the exact int32 sum of its tokens' int8 rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from memwire._kernel.pure import _checks
from memwire._kernel.pure._generated import (
    EMBED_CLASS_RANGES,
    EMBED_FOLD,
    EMBED_MAX_WORD_CHARS,
    EMBED_SUBWORD_PREFIX,
    EMBED_UNK,
)
from memwire._kernel.vectors import quantize_many
from memwire.errors import InvalidInputError

__all__ = ["StaticEmbedder"]

_SPACE, _DROP, _PUNCT, _CJK = 1, 2, 3, 4


def _class(cls: int) -> str:
    return "".join(
        f"\\U{lo:08x}" if lo == hi else f"\\U{lo:08x}-\\U{hi:08x}"
        for lo, hi, c in EMBED_CLASS_RANGES
        if c == cls
    )


_DROP_TABLE = {
    cp: None for lo, hi, c in EMBED_CLASS_RANGES if c == _DROP for cp in range(lo, hi + 1)
}
# A word is a run of ordinary characters; punctuation and CJK ideographs are words on their own.
_WORDS = re.compile(
    f"[{_class(_PUNCT)}{_class(_CJK)}]|[^{_class(_SPACE)}{_class(_PUNCT)}{_class(_CJK)}]+"
)
_FOLD = dict(EMBED_FOLD)
_CACHE_MAX = 200_000
# Squares summing below 2**53 are exact in float64 in any order: the norm is then the same for
# every implementation of ``quantize`` (docs/parity.md, "Static embedder").
_EXACT_SQUARES = 2**53


class StaticEmbedder:
    """Token ids and integer row sums for one vocabulary and int8 table."""

    def __init__(self, vocab: Sequence[str], table: bytes, dim: int) -> None:
        if dim < 1 or len(table) != len(vocab) * dim:
            raise InvalidInputError("embedding table does not match the vocabulary and dimension")
        _checks.dim(dim)
        self.dim = dim
        self._ids = {token: i for i, token in enumerate(vocab)}
        self._unk = self._ids.get(EMBED_UNK)
        self._table = np.frombuffer(table, dtype=np.int8).reshape(len(vocab), dim)
        self._cache: dict[str, tuple[int, ...]] = {}

    def _word_ids(self, word: str) -> tuple[int, ...]:
        cached = self._cache.get(word)
        if cached is not None:
            return cached
        ids: list[int] = []
        if len(word) <= EMBED_MAX_WORD_CHARS:
            start, n = 0, len(word)
            while start < n:
                end, found = n, None
                while start < end:
                    piece = (
                        word[start:end] if start == 0 else EMBED_SUBWORD_PREFIX + word[start:end]
                    )
                    found = self._ids.get(piece)
                    if found is not None:
                        break
                    end -= 1
                if found is None:  # an unknown piece makes the whole word [UNK]: dropped
                    ids = []
                    break
                ids.append(found)
                start = end
        out = tuple(i for i in ids if i != self._unk)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[word] = out
        return out

    def token_ids(self, text: str) -> list[int]:
        """WordPiece ids of ``text`` in order, unknown words dropped."""
        ids: list[int] = []
        for match in _WORDS.finditer(text.translate(_DROP_TABLE)):
            word = match.group().translate(_FOLD)
            if word:
                ids.extend(self._word_ids(word))
        return ids

    def sums(self, texts: Sequence[str]) -> list[bytes | None]:
        """Per text, the int32 little-endian sum of its tokens' rows, or None without tokens."""
        out: list[bytes | None] = []
        for text in texts:
            ids = self.token_ids(text)
            if not ids:
                out.append(None)
                continue
            total = self._table[np.asarray(ids, dtype=np.intp)].astype(np.int32).sum(axis=0)
            out.append(total.astype("<i4").tobytes())
        return out

    def quantized(self, texts: Sequence[str]) -> tuple[list[bytes | None], list[int]]:
        """Per text, ``quantize`` of its sum (None: no token, or a zero sum), and the positions
        whose sum's squares reach 2**53 (None in the list: the caller quantises their sums)."""
        sums = self.sums(texts)
        out: list[bytes | None] = [None] * len(sums)
        found = [(i, total) for i, total in enumerate(sums) if total is not None]
        rows = np.frombuffer(b"".join(total for _, total in found), dtype="<i4")
        rows = rows.reshape(len(found), self.dim)
        wide = rows.astype(np.float64)
        # A float64 sum of integer squares stays below 2**53 exactly when the true sum does,
        # whatever the order (every partial sum is then exact).
        squares = np.einsum("ij,ij->i", wide, wide).tolist()
        exact = [k for k, s in enumerate(squares) if s < _EXACT_SQUARES]
        inexact = [found[k][0] for k, s in enumerate(squares) if s >= _EXACT_SQUARES]
        vectors = quantize_many([rows[k] for k in exact], self.dim)
        if vectors is None:  # integer rows of the right width are never handed back
            raise AssertionError("quantize_many refused the embedder's sums")
        for k, vector in zip(exact, vectors, strict=True):
            out[found[k][0]] = vector
        return out, inexact
