"""Embedders: turn text into vectors for the dense stream.

memwire ships one default, :class:`~memwire.embed.static.StaticEmbedder` (a bundled int8 table,
no download, no torch). Any object with ``id``, ``dim`` and ``embed(texts)`` satisfies
:class:`Embedder`, so a sentence-transformers model or an API client plugs in the same way;
memwire normalises and quantises what it returns (``memwire._vectors.quantize``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

__all__ = ["Embedder"]


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

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float] | None]:
        """One vector per text (any scale: memwire normalises), or None for "no vector"."""
        ...
