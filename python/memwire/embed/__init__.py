"""Embedders: turn text into vectors for the dense stream (docs/dense.md).

memwire ships one default, :class:`~memwire.embed.static.StaticEmbedder` (a bundled int8 table,
no download, no torch). Any object with ``id``, ``dim`` and ``embed(texts)`` satisfies
:class:`Embedder`, so a sentence-transformers model or an API client plugs in the same way;
memwire normalises and quantises what it returns (``memwire._kernel.vectors.quantize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memwire._kernel.contract import MAX_DIM
from memwire._kernel.vectors import quantize, quantize_many
from memwire.embed.static import StaticEmbedder
from memwire.errors import InvalidInputError

__all__ = ["MAX_DIM", "MAX_ID_CHARS", "Embedder", "Vector", "check_embedder", "encode"]

# What an embedder may return per text: a sequence of floats or a 1-d numpy array, or None.
Vector = Sequence[float] | npt.NDArray[Any] | None

MAX_ID_CHARS = 200


@runtime_checkable
class Embedder(Protocol):
    """What memwire needs from an embedder."""

    @property
    def id(self) -> str:
        """A stable name of the vector space (a bank refuses vectors of another space)."""
        ...

    @property
    def dim(self) -> int:
        """The number of components of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> Sequence[Vector]:
        """One vector per text (any scale: memwire normalises), or None for "no vector"."""
        ...


def check_embedder(embedder: object) -> tuple[str, int]:
    """Validate an embedder; its ``(id, dim)`` space."""
    if not isinstance(embedder, Embedder):
        raise InvalidInputError(
            "embedder must have 'id', 'dim' and 'embed(texts)' (see memwire.embed.Embedder)"
        )
    name, dim = embedder.id, embedder.dim
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ID_CHARS:
        raise InvalidInputError(f"embedder id must be a non-blank string of at most {MAX_ID_CHARS}")
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
        raise InvalidInputError(f"embedder dim must be an integer from 1 to {MAX_DIM}, got {dim!r}")
    return name, dim


def encode(embedder: Embedder, space: tuple[str, int], texts: Sequence[str]) -> list[bytes | None]:
    """One ``embed`` call for ``texts``; each vector quantised to the kernel's canonical int16
    bytes, or None where the embedder gave none (or the zero vector)."""
    if not texts:
        return []
    name, dim = space
    if isinstance(embedder, StaticEmbedder) and embedder.dim == dim:
        return embedder.quantized(texts)  # quantised in the kernel: the same bytes
    vectors = embedder.embed(list(texts))
    try:
        count = len(vectors)
    except TypeError:
        raise InvalidInputError(f"embedder {name!r} did not return a list of vectors") from None
    if count != len(texts):
        raise InvalidInputError(
            f"embedder {name!r} returned {count} vectors for {len(texts)} texts"
        )
    bulk = quantize_many(vectors, dim)
    if bulk is not None:
        return bulk
    out: list[bytes | None] = []
    for position, vector in enumerate(vectors):
        if vector is None:
            out.append(None)
            continue
        try:
            out.append(quantize(vector, dim))
        except InvalidInputError as exc:
            if "all zeros" in str(exc) and np.size(vector) == dim:
                out.append(None)  # no direction: as good as no vector
                continue
            raise InvalidInputError(
                f"embedder {name!r} returned an unusable vector for text {position}: {exc}"
            ) from None
    return out
