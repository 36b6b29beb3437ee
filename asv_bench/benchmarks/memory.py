"""``Memory.recall`` end to end (issue 18): the public API on an SQLite store, unfiltered and
with ``exclude_tags`` of half the bank, on both backends and every corpus size; and on a copy
of the store made a TTL bank (``ttl_days`` 3650) holding one expired memory that is never
swept (its background sweep is switched off).

``setup_cache`` builds one store per (backend, size) with that backend: the corpus with every
even document tagged ``even`` and every odd one ``odd``, default bank config (static embedder,
dense stream on), the HNSW graph awaited, then closed (snapshot written). Each process opens
the store once and runs every query once before timing; a sample is one recall, cycling
through the generic queries, so asv's median is the median recall latency.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import _common as c

STORES = Path(tempfile.gettempdir()) / "memwire-asv-memory"
PARAMS = [c.BACKENDS, c.SIZES]
PARAM_NAMES = ["backend", "n"]


def _build(path: Path, backend: str, n: int) -> None:
    from memwire import Memory

    corpus = c.corpus(n)
    items = [
        {"content": text, "tags": ["even" if i % 2 == 0 else "odd"]}
        for i, text in enumerate(corpus.texts)
    ]
    mem = Memory(path, backend=backend)
    mem.retain_many(items)
    mem.recall("warm", limit=1)
    state = mem._bank("default")  # private: the harness waits for the background graph
    while state.index is not None and state.index.dense_graph_needed():
        time.sleep(0.1)
    mem.close()


def _ttl_copy(path: Path, backend: str) -> Path:
    """A copy of the store at ``path`` whose bank has a TTL and one expired memory."""
    from memwire import Memory

    copy = path.with_name(f"{path.stem}-ttl.db")
    shutil.copyfile(path, copy)
    with Memory(copy, backend=backend) as mem:
        mem.retain("an expired note", created_at="2001-01-01T00:00:00Z")
        mem.set_config("default", {"ttl_days": 3650})
    return copy


class _Opened:
    def __init__(self, path: str, backend: str, n: int) -> None:
        from memwire import Memory

        self.mem = Memory(path, backend=backend)
        self.mem._snapshotter._sweep = None  # private: an expired memory stays unswept
        queries = [q.text for q in c.corpus(n).queries_of("generic")]
        for q in queries:
            self.mem.recall(q, limit=c.K)
            self.mem.recall(q, limit=c.K, exclude_tags=["even"])
        self._streams: dict[str, Iterator[str]] = {}
        self._queries = queries

    def next_query(self, stream: str) -> str:
        it = self._streams.get(stream)
        if it is None:
            it = self._streams[stream] = itertools.cycle(self._queries)
        return next(it)


_opened: dict[tuple[str, int], _Opened] = {}


class Recall:
    """``Memory.recall(q, limit=10)``, plain and filtered."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 600
    number = 1
    repeat = (20, 300, 4.0)
    warmup_time = 0.05

    def setup_cache(self) -> dict[tuple[str, int], str]:
        shutil.rmtree(STORES, ignore_errors=True)
        out: dict[tuple[str, int], str] = {}
        for n in c.SIZES:
            for backend in c.available_backends():
                path = STORES / f"{backend}-{n}.db"
                path.parent.mkdir(parents=True, exist_ok=True)
                _build(path, backend, n)
                out[backend, n] = str(path)
                out[backend, -n] = str(_ttl_copy(path, backend))
        return out

    setup_cache.timeout = 3600  # type: ignore[attr-defined]

    def setup(self, cache: dict[tuple[str, int], str], backend: str, n: int) -> None:
        c.kernel(backend)  # skip cleanly when the backend is not importable
        if (backend, n) not in cache:
            raise NotImplementedError(f"no store for {(backend, n)}")
        for key in ((backend, n), (backend, -n)):  # -n: the TTL copy
            if key not in _opened:
                _opened[key] = _Opened(cache[key], backend, n)
        self.opened = _opened[backend, n]
        self.ttl = _opened[backend, -n]

    def time_recall(self, cache: Any, backend: str, n: int) -> None:
        self.opened.mem.recall(self.opened.next_query("plain"), limit=c.K)

    def time_recall_exclude_half(self, cache: Any, backend: str, n: int) -> None:
        query = self.opened.next_query("filtered")
        self.opened.mem.recall(query, limit=c.K, exclude_tags=["even"])

    def time_recall_ttl_expired(self, cache: Any, backend: str, n: int) -> None:
        self.ttl.mem.recall(self.ttl.next_query("plain"), limit=c.K)
