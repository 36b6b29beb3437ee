"""The kernel contract: what both backends (``_native``, ``pure``) provide.

docs/parity.md specifies the behaviour; this module states the Python shape of it so that the
rest of the package, and mypy, depend on the contract rather than on either implementation.
mypy checks both backend modules against :class:`Kernel` (``memwire._kernel.backend``), and
``mypy.stubtest`` checks the extension's stub against the compiled module (``make lint``).
Vectors cross this boundary as little-endian int16 ``bytes`` (see ``memwire._kernel.vectors``).

The contract's numbers are re-exported here, from the code native/codegen.py generates out of
native/constants.toml: code outside the kernel imports them from this module, never writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from memwire._kernel.constants import (
    CHARS_PER_TOKEN,
    CONTRACT_VERSION,
    DEFAULT_DEPTH,
    DEFAULT_WEIGHTS,
    DENSE_EXACT_MAX,
    DENSE_SCALE,
    MAX_DIM,
    MAX_ORDINAL,
    TRUNCATION_MARKER,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "CONTRACT_VERSION",
    "DEFAULT_DEPTH",
    "DEFAULT_WEIGHTS",
    "DENSE_EXACT_MAX",
    "DENSE_SCALE",
    "MAX_DIM",
    "MAX_ORDINAL",
    "TRUNCATION_MARKER",
    "Allow",
    "AllowSet",
    "AllowSetType",
    "BankIndex",
    "BankIndexType",
    "BuildInfo",
    "DenseGraphBuild",
    "Kernel",
    "RecallRow",
    "Scored",
    "StaticEmbedder",
    "StaticEmbedderType",
]

# (ordinal, fused score, bm25 rank, overlap rank, dense rank); a rank of 0 means absent.
RecallRow = tuple[int, float, int, int, int]
Scored = tuple[int, float]
# Facts about a backend for `memwire doctor`: "backend" ("rust" or "python"), "version" and
# "contract" in both, then backend-specific keys (build profile, library versions...).
BuildInfo = dict[str, str | int | list[str]]


class AllowSet(Protocol):
    """A search filter built once and passed by reference (docs/parity.md, "Filters"): a set
    of ordinals that any search of any index of the same backend takes as ``allow``. It holds
    ordinals, so it stays right however an index changes after it was built."""

    def __len__(self) -> int: ...

    def __contains__(self, ordinal: object, /) -> bool: ...


class AllowSetType(Protocol):
    def __call__(self, ordinals: Iterable[int]) -> AllowSet:
        """Every item must be an ordinal (``InvalidInputError`` otherwise)."""
        ...

    def from_bytes(self, data: bytes) -> AllowSet:
        """From the portable roaring serialisation (pyroaring's ``BitMap.serialize()``)."""
        ...


# A search's ``allow``: an AllowSet of the index's backend, or any sequence of ordinals.
Allow = AllowSet | Sequence[int]


class DenseGraphBuild(Protocol):
    """An HNSW graph planned by :meth:`BankIndex.plan_dense_graph` (docs/parity.md, "Dense
    stream"): built with no index lock held, then given to :meth:`BankIndex.install_dense_graph`.
    """

    def build(self) -> bool:
        """Build the graph (long: ~40 s at 100k vectors); False when cancelled."""
        ...

    def cancel(self) -> None:
        """Stop a running :meth:`build` early, from any thread; the plan is then useless."""
        ...


class BankIndex(Protocol):
    """One bank's derived index: inverted lexical index plus optional dense vectors."""

    @property
    def dim(self) -> int: ...

    def __len__(self) -> int: ...

    def __contains__(self, ordinal: object) -> bool: ...

    def add(self, ordinal: int, text: str, vector: bytes | None = None) -> None: ...

    def add_many(
        self,
        ordinals: Sequence[int],
        texts: Sequence[str],
        vectors: Sequence[bytes | None] | None = None,
    ) -> None: ...

    def remove(self, ordinal: int) -> bool: ...

    def pack_order(
        self,
        contents: Sequence[str],
        created: Sequence[str],
        ordinals: Sequence[int],
        limit: int,
        num: int,
        den: int,
        prefer_newest: bool,
    ) -> list[int] | None:
        """The served pack's choice among recall's candidates, ranked best first (their
        contents, stored ``created_at`` texts and ordinals): indices of those to serve, at most
        ``limit``, in serving order; ``num / den`` in (0, 1] is the near-duplicate threshold
        (docs/parity.md, "The relevance floor and the dense rescue", step 5). None (compiled
        kernel only): a walked content has no index term, or the fraction does not fit 64
        bits; ``memwire._kernel.pack_rule`` then decides over the kernel's ``tokenize``. The
        index keeps the terms of the memories it packed recently (dropped with their
        memory)."""
        ...

    def search_bm25(self, query: str, k: int, allow: Allow | None = None) -> list[Scored]: ...

    def search_overlap(self, query: str, k: int, allow: Allow | None = None) -> list[Scored]: ...

    def search_dense(self, vector: bytes, k: int, allow: Allow | None = None) -> list[Scored]: ...

    def recall(
        self,
        query: str,
        limit: int,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
        allow: Allow | None = None,
        vector: bytes | None = None,
    ) -> list[RecallRow]: ...

    def recall_gated(
        self,
        query: str,
        limit: int,
        lookup_ratio: float,
        weights: Sequence[float] | None = None,
        depth: int | None = None,
        allow: Allow | None = None,
        vector: bytes | None = None,
    ) -> tuple[list[RecallRow], bool]:
        """``recall`` with the lookup gate in its BM25 pass (docs/parity.md, "The lookup
        gate"): with ``vector`` and a lexical weight, when BM25's best hit (among ``allow``)
        scores at least ``lookup_ratio`` (> 0) times the second, the dense stream is left out
        (the rows of ``recall`` without a vector and a dense weight of 0) and the flag is
        True. One lexical pass instead of ``search_bm25(query, 2, allow)`` and then ``recall``."""
        ...

    def dense_graph_needed(self) -> bool:
        """More than ``DENSE_GRAPH_MIN`` vectors and no HNSW graph installed: dense searches
        scan sign bits (never building a graph) until one is installed."""
        ...

    def plan_dense_graph(self) -> DenseGraphBuild | None:
        """Phase 1: copy the vectors and start recording later changes; None if no graph is
        needed."""
        ...

    def install_dense_graph(self, plan: DenseGraphBuild) -> bool:
        """Phase 3: replay the changes made since ``plan`` onto its graph and install it;
        False when it was not built, was cancelled or superseded, or is another index's
        (another backend's included: the backends type ``plan`` as any object)."""
        ...

    def build_dense_graph(self) -> bool:
        """The three phases; searches and writes go on during the build itself."""
        ...

    def _set_dense_exact_max(self, n: int) -> None:
        """Test hook: lower this index's exact dense threshold, and the graph's with it."""
        ...

    def _set_dense_tiers(
        self, exact_max: int, graph_min: int, sign_candidates: int, sign_rescored: int
    ) -> None:
        """Test hook: set the dense search tiers' bounds (exact, sign scan, graph)."""
        ...

    def stats(self) -> dict[str, int]: ...

    def to_bytes(self) -> bytes: ...


class BankIndexType(Protocol):
    def __call__(self, dim: int = 0) -> BankIndex: ...

    def from_bytes(self, data: bytes | memoryview) -> BankIndex: ...


class StaticEmbedder(Protocol):
    """The bundled embedder's kernel: WordPiece ids and exact int32 row sums (LE bytes)."""

    @property
    def dim(self) -> int: ...

    def token_ids(self, text: str) -> list[int]: ...

    def sums(self, texts: Sequence[str]) -> list[bytes | None]: ...

    def quantized(self, texts: Sequence[str]) -> tuple[list[bytes | None], list[int]]:
        """Per text, its sum normalised and quantised by ``memwire._kernel.vectors.quantize``'s
        rule (None: no known token or a zero sum), and the positions whose sum's squares reach
        2**53 (None in the list: the caller quantises their :meth:`sums`)."""
        ...


class StaticEmbedderType(Protocol):
    def __call__(self, vocab: Sequence[str], table: bytes, dim: int) -> StaticEmbedder: ...


class Kernel(Protocol):
    """A backend module: ``memwire._kernel._native`` or ``memwire._kernel.pure``."""

    # Read-only members, so that both modules (whose attributes are classes) satisfy them.
    @property
    def CONTRACT_VERSION(self) -> int: ...

    @property
    def BankIndex(self) -> BankIndexType: ...

    @property
    def StaticEmbedder(self) -> StaticEmbedderType: ...

    @property
    def AllowSet(self) -> AllowSetType: ...

    def tokenize(self, text: str) -> list[str]: ...

    def rrf(self, streams: Sequence[Sequence[int]], weights: Sequence[float]) -> list[Scored]: ...

    def trim_to_budget(self, texts: Sequence[str], budget_tokens: int) -> list[tuple[int, str]]: ...

    def may_redact_many(self, texts: Sequence[str]) -> list[bool]:
        """Redaction's gate of each text (``memwire.redact._may_redact``, the specification):
        False where no redaction rule could change it. Not part of the ranking contract."""
        ...

    def build_info(self) -> BuildInfo:
        """Facts about this backend's build, for ``memwire doctor`` and bug reports."""
        ...
