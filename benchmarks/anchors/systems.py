"""One adapter per system measured by benchmarks/anchors.py, all with the same tiny interface.

    adapter = SYSTEMS[name]()          # imports the library (ImportError: not installed)
    adapter.build(docs)                # doc i gets id i
    adapter.search(query, k) -> ids    # best first, at most k
    adapter.disk_bytes() -> int | None # what the system persists, None when it keeps nothing
    adapter.close()                    # release files and temp dirs

``nfkc`` says whether the harness should NFKC-normalise documents and queries beforehand (only
the bare memwire kernel, which expects the shell to have done it); ``info`` describes the
configuration (tokenizer, scoring) for the report. Every library is imported lazily, so this
module loads in any interpreter (trw-memory runs in its own virtualenv: see anchors.py).

Each adapter uses the library's documented, default way to index and search short texts; where
a choice had to be made (tokenizer, persistence) ``info`` says which.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = ["SYSTEMS", "Adapter", "dir_bytes"]


def dir_bytes(path: str | os.PathLike[str]) -> int:
    """Total size of the regular files under ``path``."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


class Adapter:
    """Base class: a temp dir for systems that persist, and the shared metadata."""

    nfkc = False
    persists = True

    def __init__(self) -> None:
        self.info: dict[str, Any] = {}
        self._tmp: str | None = None

    def tmpdir(self) -> str:
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="memwire-anchor-")
        return self._tmp

    def build(self, docs: Sequence[str]) -> None:
        raise NotImplementedError

    def search(self, query: str, k: int) -> list[int]:
        raise NotImplementedError

    def disk_bytes(self) -> int | None:
        return dir_bytes(self._tmp) if self._tmp else None

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


# -- memwire --------------------------------------------------------------------------------


class MemwireKernel(Adapter):
    """``BankIndex.add_many`` then ``search_bm25(q, k)``: exact BM25, no storage, no ``Memory``."""

    nfkc = True

    def __init__(self, backend: str) -> None:
        super().__init__()
        from memwire import __version__
        from memwire._kernel.backend import load_kernel

        self.kernel = load_kernel(backend)
        self.index: Any = None
        self.info = {
            "version": f"memwire {__version__} ({backend} kernel)",
            "config": "BankIndex.search_bm25 top-k (k1 1.2, b 0.75, Snowball stemmer, stopwords)",
            "disk": "size of the index snapshot (to_bytes), which Memory persists",
        }

    def build(self, docs: Sequence[str]) -> None:
        self.index = self.kernel.BankIndex()
        self.index.add_many(list(range(len(docs))), list(docs))

    def search(self, query: str, k: int) -> list[int]:
        return [row[0] for row in self.index.search_bm25(query, k)]

    def disk_bytes(self) -> int | None:
        return len(self.index.to_bytes())


class MemwireRecall(Adapter):
    """The public API: ``Memory(path).retain_many(docs)`` then ``recall(q, limit=k)``.

    The store is an SQLite file in a temp dir. ``lexical=True`` sets the bank's config to
    ``embedder: none`` and ``fusion_weights: [1, 0.5, 0]`` before retaining (no vectors: BM25
    plus overlap); otherwise the bank keeps the defaults (bundled static embedder, dense stream
    at weight 0.3). After ``retain_many`` the harness waits for the background thread to
    install the bank's HNSW graph (above 20,000 vectors; ``graph_s``, reported apart from the
    build, as a long-running service pays it once in the background), then the Memory is
    closed (which writes the index snapshot, graph included) and reopened, so queries run
    against a store as a new process finds it, with no background work in flight; ``open_s``
    is that reopen plus the first recall.
    """

    def __init__(self, backend: str, lexical: bool) -> None:
        super().__init__()
        from memwire import Memory, __version__

        self._memory_cls = Memory
        self.backend = backend
        self.lexical = lexical
        self.mem: Any = None
        self.ids: dict[str, int] = {}
        self.graph_s = 0.0
        self.path = str(Path(self.tmpdir()) / "memwire.db")
        cfg = (
            "embedder none, fusion_weights [1, 0.5, 0] (BM25 + overlap)"
            if lexical
            else "default bank config (static embedder, fusion_weights [1, 0.5, 0.3])"
        )
        self.info = {
            "version": f"memwire {__version__} ({backend} backend)",
            "config": f"Memory.recall(limit=k) on an SQLite store in a temp dir; {cfg}",
            "disk": "SQLite store (db, wal, shm) after close, index snapshot included",
        }

    def build(self, docs: Sequence[str]) -> None:
        mem = self._memory_cls(self.path, backend=self.backend)
        if self.lexical:
            mem.set_config("default", {"embedder": "none", "fusion_weights": [1, 0.5, 0]})
        ids = mem.retain_many(list(docs))
        self.ids = {memory_id: i for i, memory_id in enumerate(ids)}
        self.mem = mem

    def after_build(self, probe: str) -> float:
        """Wait for the HNSW graph, close (snapshot written), reopen, first recall; returns
        seconds for reopen + recall."""
        import time

        t0 = time.perf_counter()
        self.mem.recall(probe, limit=1)  # the index loads lazily: load it, so the graph starts
        # The bank's index is private API; a harness may wait on it (no public "idle" call).
        state = self.mem._bank("default")
        while state.index is not None and state.index.dense_graph_needed():
            time.sleep(0.05)
        self.graph_s = time.perf_counter() - t0
        self.mem.close()
        t0 = time.perf_counter()
        self.mem = self._memory_cls(self.path, backend=self.backend)
        self.mem.recall(probe, limit=1)
        return time.perf_counter() - t0

    def search(self, query: str, k: int) -> list[int]:
        ids = self.ids
        return [ids[hit.id] for hit in self.mem.recall(query, limit=k)]

    def disk_bytes(self) -> int | None:
        return dir_bytes(self.tmpdir())

    def close(self) -> None:
        if self.mem is not None:
            self.mem.close()
            self.mem = None
        super().close()


# -- the anchors ----------------------------------------------------------------------------

_NON_ALNUM = re.compile(r"[\W_]+")
_ALNUM_RUN = re.compile(r"[^\W_]+")


class Tantivy(Adapter):
    """tantivy-py in a temp-dir index: one text field (tokenizer ``en_stem``: split on
    non-alphanumerics, lowercase, English stemmer; freq-only postings), an i64 fast field for
    the id. Indexing with one writer thread; one commit. A query is lowercased, its
    non-alphanumerics replaced by spaces (so nothing is read as query syntax), parsed by
    ``parse_query`` (terms OR-ed) and searched for the top k by tantivy's BM25 (k1 1.2,
    b 0.75); ids are read from the fast field."""

    def __init__(self) -> None:
        super().__init__()
        import tantivy

        self.t = tantivy
        self.index: Any = None
        self.searcher: Any = None
        self.info = {
            "version": f"tantivy-py {_version('tantivy')}",
            "config": "en_stem tokenizer (no stopwords), freq postings, 1 writer thread, "
            "parse_query over the cleaned query, BM25 top-k, ids from a fast field",
            "disk": "index directory",
        }

    def build(self, docs: Sequence[str]) -> None:
        t = self.t
        sb = t.SchemaBuilder()
        sb.add_integer_field("id", stored=False, indexed=False, fast=True)
        sb.add_text_field("body", stored=False, tokenizer_name="en_stem", index_option="freq")
        self.index = t.Index(sb.build(), path=self.tmpdir())
        writer = self.index.writer(heap_size=256 * 2**20, num_threads=1)
        for i, text in enumerate(docs):
            writer.add_document(t.Document(id=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
        self.index.reload()
        self.searcher = self.index.searcher()
        self.info["segments"] = self.searcher.num_segments

    def search(self, query: str, k: int) -> list[int]:
        cleaned = _NON_ALNUM.sub(" ", query.lower()).strip()
        if not cleaned:
            return []
        q = self.index.parse_query(cleaned, ["body"])
        hits = self.searcher.search(q, k, count=False).hits
        if not hits:
            return []
        return self.searcher.fast_field_values("id", [addr for _score, addr in hits])


class Bm25s(Adapter):
    """bm25s with its own default tokenizer (``bm25s.tokenize``: lowercase, ``\\w\\w+`` tokens,
    English stopwords, no stemmer) and default scorer (Lucene BM25, k1 1.5, b 0.75, numpy
    backend); one ``retrieve`` call per query. Persisted with ``save`` to a temp dir for its
    size (not timed)."""

    def __init__(self) -> None:
        super().__init__()
        import bm25s

        self.bm25s = bm25s
        self.retriever: Any = None
        self.info = {
            "version": f"bm25s {_version('bm25s')}",
            "config": "bm25s.tokenize defaults (lowercase, \\w\\w+, English stopwords, no "
            "stemmer), BM25() defaults (lucene, k1 1.5, b 0.75), numpy backend",
            "disk": "retriever.save() directory (after the timed build)",
        }

    def build(self, docs: Sequence[str]) -> None:
        b = self.bm25s
        tokens = b.tokenize(list(docs), show_progress=False)
        self.retriever = b.BM25()
        self.retriever.index(tokens, show_progress=False)
        self._k_max = len(docs)

    def search(self, query: str, k: int) -> list[int]:
        toks = self.bm25s.tokenize([query], return_ids=False, show_progress=False)
        vocab = self.retriever.vocab_dict
        toks = [[t for t in toks[0] if t in vocab]]
        if not toks[0]:
            return []
        docs, scores = self.retriever.retrieve(toks, k=min(k, self._k_max), show_progress=False)
        return [int(d) for d, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def disk_bytes(self) -> int | None:
        path = Path(self.tmpdir()) / "bm25s"
        if not path.exists():
            self.retriever.save(str(path))
        return dir_bytes(path)


class SqliteFts5(Adapter):
    """SQLite FTS5 through the stdlib ``sqlite3``: a file in a temp dir, one FTS5 table with
    ``tokenize='porter unicode61'`` (Unicode-aware split and case folding, then the Porter
    stemmer), all rows inserted in one transaction. A query's alphanumeric runs are quoted and
    OR-ed; ``SELECT rowid ... WHERE body MATCH ? ORDER BY bm25(docs) LIMIT k``."""

    def __init__(self) -> None:
        super().__init__()
        import sqlite3

        self.sqlite3 = sqlite3
        self.db: Any = None
        self.info = {
            "version": f"SQLite {sqlite3.sqlite_version} (stdlib sqlite3)",
            "config": "FTS5 tokenize='porter unicode61', default journal; terms OR-ed, "
            "ORDER BY bm25() LIMIT k",
            "disk": "database file",
        }

    def build(self, docs: Sequence[str]) -> None:
        db = self.sqlite3.connect(str(Path(self.tmpdir()) / "fts.db"))
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(body, tokenize='porter unicode61')")
        with db:
            db.executemany("INSERT INTO docs(rowid, body) VALUES (?, ?)", enumerate(docs))
        self.db = db

    def search(self, query: str, k: int) -> list[int]:
        terms = dict.fromkeys(_ALNUM_RUN.findall(query.lower()))
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = self.db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, k)
        ).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        super().close()


class RankBm25(Adapter):
    """rank-bm25's ``BM25Okapi`` (k1 1.5, b 0.75, epsilon 0.25) over lowercase ``\\w+`` tokens;
    top k by ``numpy.argpartition`` of ``get_scores``. In RAM only; ``get_scores`` walks every
    document in Python for every query term, so the cost grows with the corpus."""

    persists = False

    def __init__(self) -> None:
        super().__init__()
        import numpy as np
        import rank_bm25

        self.np = np
        self.mod = rank_bm25
        self.bm: Any = None
        self.info = {
            "version": f"rank-bm25 {_version('rank-bm25')}",
            "config": "BM25Okapi defaults over lowercase \\w+ tokens (no stopwords, no stemmer)",
            "disk": "none (in RAM only)",
        }

    def build(self, docs: Sequence[str]) -> None:
        word = re.compile(r"\w+")
        self.bm = self.mod.BM25Okapi([word.findall(d.lower()) for d in docs])
        self._word = word

    def search(self, query: str, k: int) -> list[int]:
        np = self.np
        scores = self.bm.get_scores(self._word.findall(query.lower()))
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [int(i) for i in top if scores[i] > 0]

    def disk_bytes(self) -> int | None:
        return None


class TrwMemory(Adapter):
    """trw-memory's ``MemoryClient`` in keyword-only mode: ``MEMORY_EMBEDDINGS_ENABLED=false``
    (documented in its config: "never loads [the model]: stores write no vectors and recall is
    keyword-only"), storage in a temp dir, ``store_many`` of all docs (the doc id kept in
    metadata), then ``recall(q, limit=k)`` with defaults. Needs its own virtualenv: trw-memory
    pins ``mcp<2`` through fastmcp, memwire needs ``mcp>=2.3``."""

    def __init__(self) -> None:
        super().__init__()
        store = Path(self.tmpdir()) / "store"
        store.mkdir()
        os.environ["MEMORY_STORAGE_PATH"] = str(store)
        os.environ["MEMORY_EMBEDDINGS_ENABLED"] = "false"
        os.environ["TRW_PLATFORM_CONTACT_ENABLED"] = "false"
        from trw_memory.client import MemoryClient

        self.loop = asyncio.new_event_loop()
        self.client: Any = self.loop.run_until_complete(self._open(MemoryClient))
        self.info = {
            "version": f"trw-memory {_version('trw-memory')}",
            "config": "MemoryClient('project:bench', mode='local'), MEMORY_EMBEDDINGS_ENABLED="
            "false (keyword-only recall), store_many, recall(limit=k) defaults",
            "disk": "storage directory (SQLite store and its security state)",
        }

    @staticmethod
    async def _open(cls: Callable[..., Any]) -> Any:
        return cls("project:bench", mode="local")

    def build(self, docs: Sequence[str]) -> None:
        entries = [{"content": text, "metadata": {"doc": str(i)}} for i, text in enumerate(docs)]
        stored = self.loop.run_until_complete(self.client.store_many(entries))
        self.info["stored"] = stored

    def search(self, query: str, k: int) -> list[int]:
        rows = self.loop.run_until_complete(self.client.recall(query, limit=k))
        return [int(r["metadata"]["doc"]) for r in rows]

    def close(self) -> None:
        close = getattr(self.client, "close", None)
        if close is not None:
            try:
                res = close()
                if asyncio.iscoroutine(res):
                    self.loop.run_until_complete(res)
            except Exception:  # best effort on the way out
                pass
        self.loop.close()
        super().close()


SYSTEMS: dict[str, Callable[[], Adapter]] = {
    "memwire-kernel-rust": lambda: MemwireKernel("rust"),
    "memwire-kernel-python": lambda: MemwireKernel("python"),
    "memwire-recall-rust": lambda: MemwireRecall("rust", lexical=False),
    "memwire-recall-rust-lexical": lambda: MemwireRecall("rust", lexical=True),
    "memwire-recall-python": lambda: MemwireRecall("python", lexical=False),
    "memwire-recall-python-lexical": lambda: MemwireRecall("python", lexical=True),
    "tantivy": Tantivy,
    "bm25s": Bm25s,
    "sqlite-fts5": SqliteFts5,
    "rank-bm25": RankBm25,
    "trw-memory": TrwMemory,
}
