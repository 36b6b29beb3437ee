"""Stub of the compiled kernel ``memwire._native`` (rust/memwire-py); see memwire._kernel.

Import it only through :mod:`memwire._backend`. Behaviour is specified by docs/parity.md.
"""

from collections.abc import Sequence
from typing import final

__all__ = [
    "CONTRACT_VERSION",
    "BankIndex",
    "__version__",
    "build_info",
    "rrf",
    "tokenize",
    "trim_to_budget",
]

CONTRACT_VERSION: int
__version__: str

def tokenize(text: str) -> list[str]: ...
def rrf(streams: Sequence[Sequence[int]], weights: Sequence[float]) -> list[tuple[int, float]]: ...
def trim_to_budget(texts: Sequence[str], budget_tokens: int) -> list[tuple[int, str]]: ...
def build_info() -> dict[str, str | int | list[str]]: ...
@final
class BankIndex:
    def __new__(cls, dim: int = 0) -> BankIndex: ...
    @property
    def dim(self) -> int: ...
    def __len__(self) -> int: ...
    def __contains__(self, ordinal: object, /) -> bool: ...
    def add(self, ordinal: int, text: str, vector: bytes | None = None) -> None: ...
    def add_many(
        self,
        ordinals: Sequence[int],
        texts: Sequence[str],
        vectors: Sequence[bytes | None] | None = None,
    ) -> None: ...
    def remove(self, ordinal: int) -> bool: ...
    def search_bm25(
        self, query: str, k: int, allow: Sequence[int] | None = None
    ) -> list[tuple[int, float]]: ...
    def search_overlap(
        self, query: str, k: int, allow: Sequence[int] | None = None
    ) -> list[tuple[int, float]]: ...
    def search_dense(
        self, vector: bytes, k: int, allow: Sequence[int] | None = None
    ) -> list[tuple[int, float]]: ...
    def recall(
        self,
        query: str,
        limit: int,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
        allow: Sequence[int] | None = None,
        vector: bytes | None = None,
    ) -> list[tuple[int, float, int, int, int]]: ...
    def stats(self) -> dict[str, int]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes) -> BankIndex: ...
