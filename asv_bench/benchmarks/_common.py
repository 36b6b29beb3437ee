"""Shared state of the asv kernel benchmarks: corpus, kernels and per-process index memo.

asv re-runs ``setup`` before every timed sample, so ``setup`` must be cheap: everything costly
(reading the corpus, loading an index) is done once per process here and looked up afterwards.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ["rust", "python"]
SIZES = [1000, 10000, 100000]
SEED = 7
K = 10

if os.environ.get("MEMWIRE_BENCH_SIZES"):  # e.g. "1000,10000" while iterating on the suite
    SIZES = [int(s) for s in os.environ["MEMWIRE_BENCH_SIZES"].split(",") if s.strip()]


def _import_memwire() -> None:
    """Benchmark the installed memwire; fall back to the checkout's pure package if none is."""
    try:
        import memwire  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(REPO / "python"))


_import_memwire()

from memwire._kernel.backend import load_kernel  # noqa: E402
from memwire.errors import BackendError  # noqa: E402


def load_bench_module(name: str) -> ModuleType:
    """``benchmarks/{name}.py`` of the repository, imported by path: the top-level benchmarks/
    package has the same name as this asv package, so it cannot be imported as
    ``benchmarks.{name}``."""
    path = REPO / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"memwire_bench_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


corpus_cache = load_bench_module("corpus_cache")


def kernel(backend: str) -> Any:
    """The kernel named ``backend``; ``NotImplementedError`` (asv: skipped) when unavailable."""
    try:
        return load_kernel(backend)
    except BackendError as exc:
        raise NotImplementedError(f"{backend} kernel unavailable: {exc}") from exc


def available_backends() -> list[str]:
    out = []
    for backend in BACKENDS:
        try:
            kernel(backend)
        except NotImplementedError:
            continue
        out.append(backend)
    return out


_corpora: dict[int, Any] = {}


def corpus(n: int) -> Any:
    """Corpus ``n`` (NFKC-normalised, as the shell hands text to the kernel), once per process."""
    if n not in _corpora:
        _corpora[n] = corpus_cache.load_corpus(n, SEED, nfkc=True)
    return _corpora[n]


def build(backend: str, n: int) -> Any:
    c = corpus(n)
    index = kernel(backend).BankIndex()
    index.add_many(c.ids, c.texts)
    return index


def snapshots() -> dict[tuple[str, int], bytes | str]:
    """asv ``setup_cache``: one snapshot per (available backend, size), built by that backend.

    A failure is stored as its message so that only that backend's benchmarks fail.
    """
    out: dict[tuple[str, int], bytes | str] = {}
    for n in SIZES:
        for backend in available_backends():
            try:
                out[backend, n] = build(backend, n).to_bytes()
            except Exception as exc:
                out[backend, n] = f"{type(exc).__name__}: {exc}"
    return out


class Loaded:
    """One loaded index with endless, warmed-up query streams (shared by every sample)."""

    def __init__(self, backend: str, n: int, snapshot: bytes) -> None:
        self.index = kernel(backend).BankIndex.from_bytes(snapshot)
        c = corpus(n)
        self.generic = [q.text for q in c.queries_of("generic")]
        self.needle = [q.text for q in c.queries_of("needle")]
        for q in self.generic + self.needle:  # warm every lazy per-term structure once
            self.index.recall(q, K)
        self._streams: dict[str, Iterator[str]] = {}

    def next_query(self, kind: str, stream: str) -> str:
        """The next query of ``kind`` for benchmark ``stream``: each sample runs another query,
        so asv's median over samples is the median latency over the query set."""
        it = self._streams.get(stream)
        if it is None:
            it = self._streams[stream] = itertools.cycle(
                self.generic if kind == "generic" else self.needle
            )
        return next(it)


_loaded: dict[tuple[str, int], Loaded] = {}


def loaded(cache: dict[tuple[str, int], bytes | str], backend: str, n: int) -> Loaded:
    kernel(backend)  # skip cleanly when the backend is not importable
    key = (backend, n)
    if key not in _loaded:
        if key not in cache:
            raise NotImplementedError(f"no snapshot for {key} (size not in MEMWIRE_BENCH_SIZES?)")
        snap = cache[key]
        if isinstance(snap, str):
            raise RuntimeError(f"building the {backend} index of {n} docs failed: {snap}")
        _loaded[key] = Loaded(backend, n, snap)
    return _loaded[key]


def rss_bytes() -> int:
    """Current resident set size (Linux /proc; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0
