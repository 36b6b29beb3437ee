"""Kernel benchmarks, parametrised over backend (rust, python) and corpus size (docs).

Corpus and queries: ../shared/bench/corpus.py (seed 7), cached outside the repository by
benchmarks/corpus_cache.py. Query benchmarks run ONE query per timed sample, cycling through the
corpus's 500 generic (or needle) queries, so the reported median is the median per-query
latency over the query set; the index is a snapshot built by the same backend and loaded once
per process, with every query run once before timing (the pure kernel materialises per-term
arrays lazily). A backend that cannot be imported is skipped (asv prints n/a).
"""

from __future__ import annotations

import gc
from typing import Any

from . import _common as c

PARAMS = [c.BACKENDS, c.SIZES]
PARAM_NAMES = ["backend", "n"]
BACKEND_ONLY = [c.BACKENDS]
BACKEND_NAME = ["backend"]


class _WithSnapshots:
    """Base of the classes that share one ``setup_cache`` (asv keys it by source line)."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 600

    def setup_cache(self) -> dict[tuple[str, int], bytes | str]:
        return c.snapshots()

    # Building every (backend, size) index once per asv run takes ~15 s with the pure kernel
    # at 100k documents (more on a loaded machine).
    setup_cache.timeout = 1200  # type: ignore[attr-defined]


class Query(_WithSnapshots):
    """BM25, overlap and fused recall, top-10, on a loaded index."""

    number = 1  # one query per sample (asv re-runs setup between samples anyway)
    repeat = (20, 400, 4.0)
    warmup_time = 0.05

    def setup(self, cache: Any, backend: str, n: int) -> None:
        self.state = c.loaded(cache, backend, n)

    def time_bm25_top10(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.search_bm25(self.state.next_query("generic", "bm25"), c.K)

    def time_bm25_top10_needle(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.search_bm25(self.state.next_query("needle", "bm25n"), c.K)

    def time_overlap_top10(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.search_overlap(self.state.next_query("generic", "overlap"), c.K)

    def time_recall_top10_generic(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.recall(self.state.next_query("generic", "recall"), c.K)

    def time_recall_top10_needle(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.recall(self.state.next_query("needle", "recalln"), c.K)


class FilteredQuery(_WithSnapshots):
    """Fused recall, top-10, with half the ordinals allowed: as an AllowSet made once (issue 18)
    and as the list it replaces. Skipped (n/a) on commits whose kernel has no AllowSet."""

    number = 1
    repeat = (20, 400, 4.0)
    warmup_time = 0.05

    def setup(self, cache: Any, backend: str, n: int) -> None:
        self.state = c.loaded(cache, backend, n)
        kern = c.kernel(backend)
        if not hasattr(kern, "AllowSet"):
            raise NotImplementedError("no AllowSet in this kernel")
        self.half_list = list(range(0, n, 2))
        self.half = kern.AllowSet(self.half_list)

    def time_recall_top10_allow_half(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.recall(self.state.next_query("generic", "recall"), c.K, allow=self.half)

    def time_recall_top10_allow_half_list(self, cache: Any, backend: str, n: int) -> None:
        query = self.state.next_query("generic", "recall")
        self.state.index.recall(query, c.K, allow=self.half_list)


class Snapshot(_WithSnapshots):
    """Snapshot serialisation: bytes out, bytes in, size."""

    repeat = (3, 20, 10.0)

    def setup(self, cache: Any, backend: str, n: int) -> None:
        self.state = c.loaded(cache, backend, n)
        self.snapshot = cache[backend, n]
        self.bank_index = c.kernel(backend).BankIndex

    def time_to_bytes(self, cache: Any, backend: str, n: int) -> None:
        self.state.index.to_bytes()

    def time_from_bytes(self, cache: Any, backend: str, n: int) -> None:
        self.bank_index.from_bytes(self.snapshot)

    def track_snapshot_mb(self, cache: Any, backend: str, n: int) -> float:
        return len(self.snapshot) / 1e6

    track_snapshot_mb.unit = "MB"  # type: ignore[attr-defined]


class Build:
    """Index build: ``add_many`` of the whole corpus into an empty index."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 900
    number = 1
    repeat = (1, 3, 30.0)
    rounds = 1
    warmup_time = 0.0

    def setup(self, backend: str, n: int) -> None:
        self.kernel = c.kernel(backend)
        self.corpus = c.corpus(n)

    def time_add_many(self, backend: str, n: int) -> None:
        self.kernel.BankIndex().add_many(self.corpus.ids, self.corpus.texts)

    def peakmem_add_many(self, backend: str, n: int) -> None:
        # Whole-process peak: interpreter, numpy and the corpus texts included (~n * 0.3 KB).
        self.kernel.BankIndex().add_many(self.corpus.ids, self.corpus.texts)

    def track_index_rss_mb(self, backend: str, n: int) -> float:
        """Resident memory the built index holds (RSS with it alive minus RSS before)."""
        gc.collect()
        before = c.rss_bytes()
        index = self.kernel.BankIndex()
        index.add_many(self.corpus.ids, self.corpus.texts)
        gc.collect()
        held = c.rss_bytes() - before
        del index
        return held / 1e6

    track_index_rss_mb.unit = "MB"  # type: ignore[attr-defined]


class Tokenize:
    """The tokenizer alone, over the first 1,000 documents (~22k tokens)."""

    params = BACKEND_ONLY
    param_names = BACKEND_NAME
    repeat = (5, 50, 4.0)

    def setup(self, backend: str) -> None:
        self.tokenize = c.kernel(backend).tokenize
        self.texts = c.corpus(1000).texts

    def time_tokenize_1k_docs(self, backend: str) -> None:
        for text in self.texts:
            self.tokenize(text)
