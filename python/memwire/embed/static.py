"""The bundled default embedder: a static WordPiece embedding table, offline, no torch.

Three tables ship, each in its own ``memwire/models/<name>/`` (PROVENANCE.md there) and checked
against its SHA-256 digests when loaded: the default ``minilm_wndebian_256_int8`` (made by
``scripts/distill_static.py``) and the two previous defaults, ``minilm_wordnet_256_int8`` and
``minilm_static_256_int8`` (:data:`PREVIOUS_IDS`), kept so that a bank whose vectors are in
one of their spaces is still served by it, automatically (the recorded id names the table:
:func:`memwire.embed.tiers.tier_of`), until ``memwire reembed`` moves it. Text is tokenized and
its rows summed by the kernel (Rust or pure Python, bit-identical); the sum's direction is the
embedding.
"""

from __future__ import annotations

import hashlib
import json
import struct
import threading
from collections.abc import Sequence
from importlib import resources
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from memwire._dist import DISTRIBUTION
from memwire._kernel.backend import backend_info, get_kernel, load_kernel
from memwire._kernel.vectors import quantize_many
from memwire.errors import BackendError, MemwireError

__all__ = [
    "LEGACY_ID",
    "MODEL_ID",
    "PREVIOUS_IDS",
    "TABLES",
    "WORDNET_ID",
    "StaticEmbedder",
    "default_embedder",
]

MODEL_ID = "memwire/minilm-wndebian-256-int8"
WORDNET_ID = "memwire/minilm-wordnet-256-int8"  # the default before session 15
LEGACY_ID = "memwire/minilm-static-256-int8"  # the first default
# The previous defaults, newest first: served to banks whose vectors they made, never a default.
PREVIOUS_IDS = (WORDNET_ID, LEGACY_ID)
_TOKENIZER_SHA256 = "dd33465341c98889c3338356b6200c8b232b89af5f1b7aa8e6ee1d4d7a699631"
# embedder id -> (package holding its files, SHA-256 of each file); all share one vocabulary.
TABLES: dict[str, tuple[str, dict[str, str]]] = {
    MODEL_ID: (
        "memwire.models.minilm_wndebian_256_int8",
        {
            "model.safetensors": "87ef2e1b23735c5fdf9ef24532b23a2dffdb37fccea2d4f146055a267df11a72",
            "tokenizer.json": _TOKENIZER_SHA256,
        },
    ),
    WORDNET_ID: (
        "memwire.models.minilm_wordnet_256_int8",
        {
            "model.safetensors": "e6d58f433c3e7bd72467ec921fce85bc3dba78ad3609f5956fd4b5ec4eb8ccd9",
            "tokenizer.json": _TOKENIZER_SHA256,
        },
    ),
    LEGACY_ID: (
        "memwire.models.minilm_static_256_int8",
        {
            "model.safetensors": "99647dfd8725a6a3fa90529e2c9716fcebf4d6b4c17530121ca4e776281bad5f",
            "tokenizer.json": _TOKENIZER_SHA256,
        },
    ),
}


class ModelFileError(MemwireError):
    """A bundled model file is missing or differs from the one memwire was released with."""


def _read(name: str, table: str = MODEL_ID) -> bytes:
    package, digests = TABLES[table]
    try:
        data = resources.files(package).joinpath(name).read_bytes()
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise ModelFileError(
            f"bundled model file {name} is missing; reinstall {DISTRIBUTION}"
        ) from exc
    if hashlib.sha256(data).hexdigest() != digests[name]:
        raise ModelFileError(f"bundled model file {name} is corrupt (sha256 mismatch)")
    return data


def _vocab(tokenizer_json: bytes) -> list[str]:
    ids: dict[str, int] = json.loads(tokenizer_json)["model"]["vocab"]
    vocab = [""] * len(ids)
    for token, i in ids.items():
        vocab[i] = token
    return vocab


def _table(safetensors: bytes) -> tuple[bytes, int, int]:
    """The int8 ``embeddings`` tensor of a safetensors file: (raw bytes, rows, dim)."""
    (header_len,) = struct.unpack("<Q", safetensors[:8])
    header: dict[str, Any] = json.loads(safetensors[8 : 8 + header_len])
    info = header["embeddings"]
    if info["dtype"] != "I8" or len(info["shape"]) != 2:
        raise ModelFileError("bundled model has an unexpected tensor layout")
    start, end = info["data_offsets"]
    base = 8 + header_len
    rows, dim = info["shape"]
    return safetensors[base + start : base + end], rows, dim


class _KernelEmbedder(Protocol):
    def sums(self, texts: Sequence[str]) -> list[bytes | None]: ...

    def quantized(self, texts: Sequence[str]) -> tuple[list[bytes | None], list[int]]: ...


class StaticEmbedder:
    """Sentence vector = direction of the sum of the int8 rows of the text's WordPiece tokens.

    ``table``: the id of a bundled table (:data:`TABLES`); the default is :data:`MODEL_ID`.
    """

    def __init__(self, backend: str | None = None, *, table: str = MODEL_ID) -> None:
        if table not in TABLES:
            raise ValueError(f"no bundled static table {table!r}; one of {sorted(TABLES)}")
        self._id = table
        vocab = _vocab(_read("tokenizer.json", table))
        raw, rows, dim = _table(_read("model.safetensors", table))
        if rows != len(vocab):
            raise ModelFileError("bundled model and vocabulary disagree")
        kernel = get_kernel() if backend is None else load_kernel(backend)
        runtime = getattr(kernel, "StaticEmbedder", None)
        if runtime is None:
            name = backend or backend_info().name
            raise BackendError(
                f"the {name} kernel has no StaticEmbedder (an older build of the extension?); "
                "rebuild it, use backend='python', or set the bank's config 'embedder' to 'none'"
            )
        self._kernel_embedder: _KernelEmbedder = runtime(vocab, raw, dim)
        self._dim = dim

    @property
    def id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.int32] | None]:
        """Integer row sums (exact), one per text; None for a text with no known token."""
        sums = self._kernel_embedder.sums(list(texts))
        return [None if s is None else np.frombuffer(s, dtype="<i4") for s in sums]

    def quantized(self, texts: Sequence[str]) -> list[bytes | None]:
        """``quantize`` of each :meth:`embed` vector, done in the kernel (the same bytes as
        ``memwire.embed.encode`` of :meth:`embed`'s vectors); None for a text with no vector."""
        vectors, inexact = self._kernel_embedder.quantized(list(texts))
        if inexact:  # sums too large to normalise exactly in the kernel: numpy's rule
            again = quantize_many(self.embed([texts[i] for i in inexact]), self._dim)
            if again is None:  # integer vectors of the right width are never handed back
                raise AssertionError("quantize_many refused the embedder's sums")
            for i, vector in zip(inexact, again, strict=True):
                vectors[i] = vector
        return vectors


_default: dict[tuple[str | None, str], StaticEmbedder] = {}
_lock = threading.Lock()


def default_embedder(backend: str | None = None, table: str = MODEL_ID) -> StaticEmbedder:
    """The process-wide static embedder of ``table`` (each loaded once, ~8 MB)."""
    with _lock:
        key = (backend, table)
        if key not in _default:
            _default[key] = StaticEmbedder(backend, table=table)
        return _default[key]
