"""Both backends give the same vectors and the same fused recall (docs/parity.md). Skipped,
with the reason, until the Rust kernel has the static embedder runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from dense_support import DENSE_BACKENDS, NOTES, PARAPHRASES, RUST_SKIP, recall_rows, stored_vectors
from memwire import Memory

pytestmark = pytest.mark.skipif(len(DENSE_BACKENDS) < 2, reason=RUST_SKIP or "needs both backends")

TEXTS = [
    *NOTES,
    "Straße café naïve résumé",
    "東京都に住んでいます",
    "emoji 🙂 and symbols ∰ ⅻ",
    "𓀀𓀁",
    "CamelCaseIdentifiers and snake_case_names in src/main.rs",
    "x" * 300,
    "",
]
QUERIES = [q for _, q in PARAPHRASES] + ["postgres backups", "café", "東京", "src main"]


def test_both_embedders_give_the_same_vectors() -> None:
    from memwire.embed.static import StaticEmbedder

    rust, python = StaticEmbedder("rust"), StaticEmbedder("python")
    for a, b in zip(rust.embed(TEXTS), python.embed(TEXTS), strict=True):
        assert (a is None and b is None) or (
            a is not None and b is not None and a.tobytes() == b.tobytes()
        )


def test_both_backends_write_and_recall_identically(tmp_path: Path) -> None:
    texts = [t for t in TEXTS if t]
    runs = {}
    for backend in ("rust", "python"):
        path = tmp_path / f"{backend}.db"
        with Memory(path, backend=backend) as m:
            m.retain_many(texts)
        runs[backend] = path
    assert list(stored_vectors(runs["rust"]).values()) == list(
        stored_vectors(runs["python"]).values()
    )
    results = {}
    for writer, path in runs.items():
        for reader in ("rust", "python"):  # each reads the other's snapshot too
            with Memory(path, backend=reader) as m:
                results[writer, reader] = [[row[1:] for row in q] for q in recall_rows(m, QUERIES)]
    first = results["rust", "rust"]
    assert any(row[3] for q in first for row in q)
    assert all(r == first for r in results.values())
