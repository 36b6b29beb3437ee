"""Resident memory of a loaded bank, per memory, and where it goes (issue 18).

    python benchmarks/footprint.py --n 100000 [--backend rust|python] [--dir /tmp/mw-foot]

Builds (once, kept in --dir) two stores of N memories of the shared corpus generator's corpus,
one with ``embedder="none"`` and one with the default configuration (static embedder, dense
stream on), waits for the background HNSW graph and closes it, so a snapshot with the graph
exists. Then, each in a fresh process, it
opens that store and answers recalls until the background work is done, and reports the RSS
(/proc/self/status VmRSS) above the same process's RSS on an empty store:

- ``lexical``: a store built with ``embedder="none"`` (no vectors): postings, document lengths,
  the id maps and the Python-side caches;
- ``lex-rows``: the same store with its snapshot ignored, so the index is built from the rows
  in the process (as after an upgrade that cannot read the snapshot);
- ``default``: the bank as `memwire serve` holds it (dense on, graph loaded from the snapshot);

and, for each, Python's own share (tracemalloc's current size after the recalls). The two
stores built once are opened from their snapshots on later runs. One run is indicative: RSS
depends on the allocator; the probe tunes and trims glibc's heap as `memwire serve` does
(memwire._heap). docs/dense.md, "The graph's scalar", breaks the figure down.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"

PROBE = r"""
import gc, json, sys, tempfile, tracemalloc
sys.path.insert(0, sys.argv[1])
path, backend, embedder, rows = sys.argv[2], sys.argv[3] or None, sys.argv[4], sys.argv[5]
queries = sys.argv[6:]

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")

from memwire import Memory, _heap
_heap.tune_for_server()  # as `memwire serve` does: freed blocks go back to the system
with tempfile.TemporaryDirectory() as empty:
    with Memory(empty + "/empty.db", backend=backend) as m:
        m.retain("an empty store's one memory")
        m.recall("memory")
gc.collect()
_heap.trim()
idle = rss_kib()
tracemalloc.start()
m = Memory(path, backend=backend, embedder=embedder)
if rows == "rows":
    m._store.load_snapshot = lambda *args, **kwargs: None
for q in queries:
    m.recall(q)
m._snapshotter.drain()
for q in queries:
    m.recall(q)
gc.collect()
_heap.trim()
out = {
    "idle_kib": idle,
    "loaded_kib": rss_kib(),
    "python_heap_kib": tracemalloc.get_traced_memory()[0] // 1024,
    "count": m.stats()["count"],
}
print(json.dumps(out, default=str))
"""


def corpus(n: int) -> tuple[list[str], list[str]]:
    import corpus_cache

    corpus_cache.ensure_corpus(n)  # generates it the first time only
    data = corpus_cache.load_corpus(n)
    return data.texts, [q.text for q in data.queries][:50]


def build(path: Path, texts: list[str], backend: str | None, embedder: str) -> None:
    from memwire import Memory

    print(f"building {path} ({len(texts)} memories, embedder {embedder})", flush=True)
    with Memory(path, backend=backend, embedder=embedder) as m:
        m.retain_many(texts)
        m.recall("memory")
        m._snapshotter.drain()


def probe(
    path: Path, backend: str | None, embedder: str, rows: bool, queries: list[str]
) -> dict[str, int]:
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            str(PYTHON_DIR),
            str(path),
            backend or "",
            embedder,
            "rows" if rows else "snapshot",
            *queries,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, int] = json.loads(run.stdout)
    return result


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--backend", default=None, choices=["rust", "python"])
    ap.add_argument("--dir", default=None, help="keeps the built store between runs")
    args = ap.parse_args()
    sys.path.insert(0, str(PYTHON_DIR))
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="memwire-foot-"))
    workdir.mkdir(parents=True, exist_ok=True)
    texts, queries = corpus(args.n)
    n = len(texts)
    rows: dict[str, dict[str, int]] = {}
    for label, embedder, from_rows in (
        ("lexical", "none", False),
        ("lex-rows", "none", True),
        ("default", "static", False),
    ):
        path = workdir / f"n{args.n}-{embedder}.db"
        if not path.exists():
            build(path, texts, args.backend, embedder)
        r = probe(path, args.backend, embedder, from_rows, queries)
        above = r["loaded_kib"] - r["idle_kib"]
        rows[label] = r
        print(
            f"{label:<8} idle {r['idle_kib'] / 1024:7.1f} MiB  loaded {r['loaded_kib'] / 1024:7.1f}"
            f" MiB  above idle {above / 1024:7.1f} MiB = {above * 1024 / n:6.0f} B/memory"
            f"  (Python heap {r['python_heap_kib'] * 1024 / n:5.0f} B/memory)",
            flush=True,
        )
    print(json.dumps(rows, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
