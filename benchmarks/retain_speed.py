"""retain_many throughput beside tantivy's single-thread indexing, in ONE run on one corpus, and
the pure-Python fallback against the Rust backend end to end (retain_many, then recall).

    python benchmarks/retain_speed.py [--n 100000] [--systems rust,tantivy,python] [--profile]

Each system runs in its own fresh subprocess on the same generated corpus
(benchmarks/corpus_cache.py): ``rust`` and ``python`` are ``Memory.retain_many`` of every
document into a new SQLite store in a temp dir with the default bank config (static embedder
on: every memory is embedded, quantised and stored with its vector), then the p50 of
``Memory.recall(limit=10)`` over the corpus's generic queries (the index loads on the first
recall, which is timed apart as ``first_recall_s``); ``tantivy`` is the anchors harness's
tantivy adapter (benchmarks/anchors/systems.py: one writer thread, one commit). ``--profile``
adds a cProfile of the Rust backend's retain_many (top functions by own time). Nothing here
asserts: it prints a JSON report for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import corpus_cache  # noqa: E402
from kernel_speed import machine_info  # noqa: E402

QUERIES = 300


def run_memwire(backend: str, n: int, profile: bool) -> dict[str, Any]:
    from memwire import Memory

    corpus = corpus_cache.load_corpus(n)
    texts = list(corpus.texts[:n])
    queries = [q.text for q in corpus.queries][:QUERIES]
    out: dict[str, Any] = {"system": f"memwire-{backend}", "n": n}
    with tempfile.TemporaryDirectory() as tmp:
        memory = Memory(Path(tmp) / "m.db", backend=backend)
        memory.retain("warm up the embedder", bank="warm")
        profiler = cProfile.Profile() if profile else None
        started = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        memory.retain_many(texts, bank="bench")
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - started
        out["retain_many_s"] = round(seconds, 2)
        out["docs_per_s"] = round(n / seconds)
        if profiler is not None:
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
            out["profile"] = text.getvalue().splitlines()[-16:]
        started = time.perf_counter()
        memory.recall(queries[0], bank="bench")
        out["first_recall_s"] = round(time.perf_counter() - started, 2)
        for q in queries[:20]:
            memory.recall(q, bank="bench")
        timings = []
        for q in queries:
            t0 = time.perf_counter_ns()
            memory.recall(q, bank="bench", limit=10)
            timings.append((time.perf_counter_ns() - t0) / 1000)
        out["recall_p50_us"] = round(statistics.median(timings), 1)
        memory.close()
    return out


def run_tantivy(n: int) -> dict[str, Any]:
    from anchors.systems import SYSTEMS

    texts = list(corpus_cache.load_corpus(n).texts[:n])
    adapter = SYSTEMS["tantivy"]()
    started = time.perf_counter()
    adapter.build(texts)
    seconds = time.perf_counter() - started
    adapter.close()
    return {
        "system": "tantivy",
        "n": n,
        "build_s": round(seconds, 2),
        "docs_per_s": round(n / seconds),
    }


def worker(system: str, n: int, profile: bool) -> dict[str, Any]:
    if system == "tantivy":
        return run_tantivy(n)
    return run_memwire(system, n, profile)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--systems", default="rust,tantivy,python")
    ap.add_argument("--profile", action="store_true", help="cProfile the rust retain_many")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.n, args.profile)))
        return 0
    corpus_cache.load_corpus(args.n)  # build the cache once, outside the timed workers
    report: dict[str, Any] = {"machine": machine_info(), "n": args.n, "systems": {}}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RAYON_NUM_THREADS": "1"}
    for system in args.systems.split(","):
        command = [sys.executable, __file__, "--worker", system, "--n", str(args.n)]
        if args.profile and system == "rust":
            command.append("--profile")
        print(f"running {system} at {args.n:,} ...", file=sys.stderr)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            report["systems"][system] = {"error": done.stderr.strip().splitlines()[-1:]}
            continue
        report["systems"][system] = json.loads(done.stdout.strip().splitlines()[-1])
    found = report["systems"]
    rate = {k: v.get("docs_per_s") for k, v in found.items()}
    if rate.get("rust") and rate.get("tantivy"):
        report["rust_over_tantivy_indexing"] = round(rate["rust"] / rate["tantivy"], 3)
    if rate.get("rust") and rate.get("python"):
        report["python_retain_slowdown"] = round(rate["rust"] / rate["python"], 2)
        r, p = found["rust"]["recall_p50_us"], found["python"]["recall_p50_us"]
        report["python_recall_slowdown"] = round(p / r, 2)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
