"""Helpers of the dense-stream tests: a toy user embedder, store inspection, the corpus of the
paraphrase test."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from api_support import BACKENDS
from backends import RUST_MISSING
from memwire import Memory

# Both kernels run the bundled embedder; the names stay for the dense tests' readability.
DENSE_BACKENDS = BACKENDS
RUST_SKIP = "" if "rust" in BACKENDS else RUST_MISSING


class TinyEmbedder:
    """A deterministic user embedder: each word hashed onto ``dim`` signed components.

    ``salt`` changes the vectors but not the id (a model fixed under the same name);
    ``fail_after`` raises on that many-th call (a crash in the middle of a reembed)."""

    def __init__(
        self, name: str = "tiny", dim: int = 16, salt: str = "", fail_after: int | None = None
    ) -> None:
        self._id, self._dim, self.salt = name, dim, salt
        self.calls: list[int] = []
        self.fail_after = fail_after

    @property
    def id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> list[list[float] | None]:
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise RuntimeError("embedder crashed")
        self.calls.append(len(texts))
        out: list[list[float] | None] = []
        for text in texts:
            vec = [0.0] * self._dim
            words = text.lower().split()
            for word in words:
                h = hashlib.sha256((self.salt + word).encode()).digest()
                vec[h[0] % self._dim] += 1.0 if h[1] & 1 else -1.0
            out.append(vec if any(vec) else None)
        return out


def bank_space(path: Path, bank: str = "default") -> tuple[str | None, int]:
    with sqlite3.connect(path) as conn:
        found = conn.execute("SELECT embedder, dim FROM banks WHERE name = ?", (bank,)).fetchone()
    return found[0], found[1]


def stored_vectors(path: Path, bank: str = "default") -> dict[str, bytes | None]:
    """id -> the stored vector column, for every memory of ``bank``."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT m.id, m.vector FROM memories m JOIN banks b ON b.id = m.bank_id "
            "WHERE b.name = ? ORDER BY m.ordinal",
            (bank,),
        ).fetchall()
    return {r[0]: None if r[1] is None else bytes(r[1]) for r in rows}


def recall_rows(
    m: Memory, queries: Sequence[str], bank: str = "default"
) -> list[list[tuple[str, float, int, int, int]]]:
    return [
        [
            (h.id, h.score, h.bm25_rank, h.overlap_rank, h.dense_rank)
            for h in m.recall(q, bank=bank, limit=100)
        ]
        for q in queries
    ]


# A small team-notes bank: each memory, and questions about it sharing none of its words.
NOTES = [
    "auth uses jose for tokens",
    "the staging database runs on port 5433",
    "deploys go out every tuesday after standup",
    "the frontend is built with vite and react",
    "we pin numpy below 2.0 for the old workers",
    "logs are shipped to loki via promtail",
    "the billing service retries failed charges three times",
    "CI runs on github actions with a self-hosted runner",
    "the mobile app caches images for a week",
    "backups of postgres are taken nightly to s3",
    "feature flags live in launchdarkly",
    "the search page uses elasticsearch 7",
    "alice prefers dark mode in every editor",
    "the office closes early on fridays",
    "our cat is named pixel and hates the vacuum",
    "bob is allergic to peanuts",
    "the api rate limit is 100 requests per minute",
    "invoices are sent on the first of the month",
]
PARAPHRASES = [
    (0, "where is authentication handled?"),
    (0, "login credentials library"),
    (15, "what food can't he eat?"),
    (14, "which animal lives with us?"),
    (9, "how often do we back up the data?"),
    (2, "when do we release to production?"),
    (16, "how many calls can a client make?"),
    (12, "which color theme does she like?"),
]


GRAPH_WORDS = ["alpha", "beta", "gamma", "delta", "kappa", "sigma", "omega", "theta", "zeta"]


def graph_bank(path: Path, backend: str, threshold: int = 40) -> Memory:
    """A bank of 600 memories tagged by word, whose dense stream is served by an HNSW graph
    from ``threshold`` vectors (a TinyEmbedder's, dimension 32)."""
    m = Memory(path, backend=backend, embedder=TinyEmbedder(dim=32))
    words = GRAPH_WORDS
    m.retain_many(
        [
            {
                "content": f"{words[i % 9]} {words[i * 5 % 9]} {words[i * 7 % 9]} note {i}",
                "tags": [words[i % 3]],
            }
            for i in range(600)
        ]
    )
    m.recall("alpha")  # loads the index
    state = m._bank("default")
    with state.lock.write():
        assert state.index is not None
        state.index._set_dense_exact_max(threshold)
        assert state.index.build_dense_graph()
    return m
