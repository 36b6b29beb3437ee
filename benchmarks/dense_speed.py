"""Indicative cost of the dense stream at the Memory API: retain throughput with the default
(static) embedder, recall latency with vectors on, and resident memory of a loaded bank.

    python benchmarks/dense_speed.py --n 10000 100000 [--backend python|rust] [--dir DIR]
        [--tree PATH]

One run, wall clock (indicative, not a benchmark suite). For each N: ``retain_many`` of N
memories (the corpus of corpus_cache.py when cached, else synthetic text) into a fresh file,
timed end to end (validation, embedding, quantising, SQLite, index), then the first recall
(builds the index from rows; the dense search is exact until the HNSW graph is installed),
recalls every 50 ms until the background thread has installed the graph (above DENSE_EXACT_MAX
vectors), and ``close()`` (writes the snapshot, with the graph). For the largest N, a fresh
process measures: RSS after importing memwire and loading the bundled embedder (idle), RSS after
opening the store and loading the bank from its snapshot, and recall p50/p95 over the corpus
queries with the default fusion weights (vectors on; lookups run lexically), with the dense
stream forced on every query (``lookup_ratio`` 0), and with the dense weight at 0; then, with
the bank's defaults (weights, lookup gate, relevance floor), recall p50/p95 and the needle
queries' hit@1 (``limit=1``: the needle's memory must come first). ``--tree`` runs another
checkout's ``python/`` (e.g. main's, or an older rule's) with this harness, so two rules are
measured by the same code in the same run."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

if TYPE_CHECKING:
    from memwire import Memory


def corpus(n: int) -> tuple[list[str], list[str], list[tuple[str, int]]]:
    """Texts, query texts, and (needle query, index of its document)."""
    try:
        import corpus_cache

        if (corpus_cache.cache_dir(n) / "meta.json").exists():
            c = corpus_cache.load_corpus(n)
            needles = [(q.text, q.gold[0]) for q in c.queries_of("needle")]
            return c.texts, [q.text for q in c.queries], needles
    except Exception:
        pass
    rng = random.Random(7)
    words = [f"w{i}" for i in range(20_000)]
    texts = [" ".join(rng.choices(words, k=rng.randint(8, 40))) for _ in range(n)]
    return texts, [" ".join(rng.choices(words, k=4)) for _ in range(500)], []


PROBE = r"""
import json, sys, time, unicodedata
sys.path.insert(0, sys.argv[3])
def rss(field="VmRSS:"):
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1]) / 1024
from memwire import Memory
from memwire.embed.static import default_embedder
path, backend = sys.argv[1], sys.argv[2] or None
given = json.loads(sys.stdin.read())
queries, needles = given["queries"], given["needles"]
out = {"rss_import_mib": rss()}
m = Memory(path, backend=backend)
default_embedder(m.backend).embed(["warm up"])
out["rss_idle_embedder_mib"] = rss()
t = time.perf_counter()
m.recall(queries[0])
out["open_first_recall_ms"] = (time.perf_counter() - t) * 1e3
out["rss_loaded_mib"] = rss()
def lat(weights, lookup_ratio=None):
    m.set_config("default", {"fusion_weights": weights, "lookup_ratio": lookup_ratio})
    for q in queries[:20]:
        m.recall(q)
    xs = []
    for q in queries:
        t = time.perf_counter(); m.recall(q); xs.append((time.perf_counter() - t) * 1e3)
    xs.sort()
    return xs[len(xs) // 2], xs[int(len(xs) * 0.95)]
out["recall_ms_vectors_on"] = lat([1.0, 0.5, 0.3])
# the dense stream on every query, lookups included (config lookup_ratio 0)
out["recall_ms_vectors_always"] = lat([1.0, 0.5, 0.3], 0)
out["recall_ms_dense_off"] = lat([1.0, 0.5, 0.0])
m.set_config("default", {"fusion_weights": None, "lookup_ratio": None})
out["recall_ms_defaults"] = lat(None)
m.set_config("default", {"fusion_weights": None, "lookup_ratio": None})
if needles:
    def same(a, b):
        return unicodedata.normalize("NFKC", a) == unicodedata.normalize("NFKC", b)
    hit = 0
    for q, want in needles:
        hits = m.recall(q, limit=1)
        hit += len(hits) == 1 and same(hits[0].content, want)
    out["needles_hit@1"] = f"{hit}/{len(needles)} = {hit / len(needles):.4f}"
out["rss_after_recalls_mib"] = rss()
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork + exec.
out["peak_rss_mib"] = rss("VmHWM:")
m._closed = True  # leave without writing a snapshot
print(json.dumps(out))
"""


def graph_wait(m: Memory, queries: list[str], imported: float) -> None:
    """Above the exact threshold the HNSW graph is built by the background thread: recall
    (exact dense search meanwhile) until it is installed; report how long that took and the
    recall latency during the build."""
    state = m._bank("default")
    index = state.index
    if index is None or not index.dense_graph_needed():
        return
    during: list[float] = []
    while index.dense_graph_needed():
        t = time.perf_counter()
        m.recall(queries[len(during) % len(queries)])
        during.append((time.perf_counter() - t) * 1e3)
        time.sleep(0.05)
    installed = time.perf_counter() - imported
    during.sort()
    print(
        f"  HNSW graph installed {installed:.1f} s after the first recall began; "
        f"{len(during)} recalls meanwhile (exact dense): p50 {during[len(during) // 2]:.1f} ms, "
        f"max {during[-1]:.1f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--backend", default=None)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--queries", type=int, default=500)
    ap.add_argument(
        "--tree",
        type=Path,
        default=HERE.parent / "python",
        help="the python/ directory whose memwire is measured (default: this checkout's)",
    )
    ap.add_argument(
        "--probe-only",
        action="store_true",
        help="skip the build: probe the store a previous run left in --dir (same --tree)",
    )
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree))
    import memwire
    from memwire import Memory

    print(f"memwire from {memwire.__file__}", flush=True)
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="memwire-dense-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "memory.db"
    queries: list[str] = []
    needles: list[tuple[str, int]] = []
    for n in args.n:
        if args.probe_only:
            texts, queries, needles = corpus(n)
            continue
        for suffix in ("", "-wal", "-shm"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        texts, queries, needles = corpus(n)
        m = Memory(path, backend=args.backend)
        m.recall("warm up the embedder")  # loads the bundled table: not part of the throughput
        start = time.perf_counter()
        m.retain_many(texts)
        elapsed = time.perf_counter() - start
        print(
            f"backend={m.backend} N={n}: retain_many {elapsed:.2f} s = {n / elapsed:,.0f} "
            "memories/s (embedding included)",
            flush=True,
        )
        start = time.perf_counter()
        m.recall(queries[0])
        print(f"  first recall (index from rows): {time.perf_counter() - start:.2f} s")
        graph_wait(m, queries, imported=start)
        start = time.perf_counter()
        m.close()
        print(f"  close (snapshot): {time.perf_counter() - start:.2f} s")
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), args.backend or "", str(args.tree)],
        input=json.dumps(
            {"queries": queries[: args.queries], "needles": [(q, texts[d]) for q, d in needles]}
        ),
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(probe.stdout)
    print(f"fresh process on N={args.n[-1]}:")
    for key, value in result.items():
        print(f"  {key}: {value if not isinstance(value, float) else round(value, 2)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
