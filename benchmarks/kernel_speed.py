"""One-shot kernel speed table: both backends, same corpus, same run, same machine.

    python benchmarks/kernel_speed.py --sizes 1000,10000,100000 --out /tmp/kernel.md

For each corpus size (../shared/bench/corpus.py, seed 7, cached by corpus_cache.py) and each
backend (``load_kernel("rust")`` and ``load_kernel("python")``), a fresh subprocess builds the
index with ``add_many``, serialises and reloads it, then times every query individually:
500 generic queries (3-8 English words) and up to 500 needle queries (a rare identifier plus
context words), ``--passes`` times each in a shuffled order after one untimed warm-up pass.
It prints a markdown report (machine, load, commit, the tables, rust/python ratios) and a
parity check: both backends must return the same ids and score bits for every query.

Only the kernel is timed (no ``Memory``, no storage); text is NFKC-normalised beforehand, as
the Python shell does. Numbers from a loaded machine are noisy: compare ratios from one run.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_cache

REPO = corpus_cache.repo_root()
BACKENDS = ("rust", "python")
K = 10


def _import_memwire() -> None:
    try:
        import memwire  # noqa: F401
    except ImportError:  # not installed: the checkout's pure package still runs
        sys.path.insert(0, str(REPO / "python"))


# -- measurement (runs in a worker subprocess per backend and size) -------------------------


def _rss() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


def _pct(samples: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of ``samples``."""
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s) + 0.5) - 1))]


def _time_queries(
    fn: Callable[[str], object], queries: Sequence[str], passes: int, seed: int
) -> list[float]:
    """Microseconds per call, every query ``passes`` times, shuffled per pass."""
    rng = random.Random(seed)
    out: list[float] = []
    clock = time.perf_counter_ns
    for _ in range(passes):
        order = list(queries)
        rng.shuffle(order)
        gc.collect()
        for q in order:
            t0 = clock()
            fn(q)
            out.append((clock() - t0) / 1000)
    return out


def _summary(us: Sequence[float]) -> dict[str, float]:
    return {
        "p50": statistics.median(us),
        "p95": _pct(us, 95),
        "p99": _pct(us, 99),
        "mean": statistics.fmean(us),
        "count": len(us),
    }


def _fingerprint(rows: object) -> str:
    def enc(x: object) -> object:
        if isinstance(x, float):
            return x.hex()
        if isinstance(x, (list, tuple)):
            return [enc(y) for y in x]
        return x

    return hashlib.sha256(json.dumps(enc(rows)).encode()).hexdigest()[:16]


def measure(backend: str, n: int, seed: int, passes: int) -> dict[str, Any]:
    _import_memwire()
    import memwire
    from memwire._kernel.backend import load_kernel

    kernel = load_kernel(backend)
    corpus = corpus_cache.load_corpus(n, seed, nfkc=True)
    generic = [q.text for q in corpus.queries_of("generic")]
    needles = corpus.queries_of("needle")
    needle = [q.text for q in needles]
    res: dict[str, Any] = {"backend": backend, "n": n, "memwire": memwire.__file__}

    gc.collect()
    rss0 = _rss()
    index = kernel.BankIndex()
    t0 = time.perf_counter()
    index.add_many(corpus.ids, corpus.texts)
    build_s = time.perf_counter() - t0
    gc.collect()
    res["build_s"] = build_s
    res["build_docs_per_s"] = n / build_s
    res["index_rss_mb"] = (_rss() - rss0) / 1e6
    res["stats"] = index.stats()

    dumps, loads = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        snap = index.to_bytes()
        dumps.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        kernel.BankIndex.from_bytes(snap)
        loads.append(time.perf_counter() - t0)
    res["snapshot_mb"] = len(snap) / 1e6
    res["to_bytes_ms"] = statistics.median(dumps) * 1e3
    res["from_bytes_ms"] = statistics.median(loads) * 1e3
    res["snapshot_sha"] = hashlib.sha256(snap).hexdigest()[:16]
    del snap

    # First (cold) query pass: the pure kernel builds per-term numpy arrays lazily.
    cold = []
    for q in generic:
        t0 = time.perf_counter_ns()
        index.search_bm25(q, K)
        cold.append((time.perf_counter_ns() - t0) / 1000)
    res["bm25_cold"] = _summary(cold)
    for q in needle:  # warm the rest
        index.recall(q, K)

    ops: dict[str, tuple[Callable[[str], object], list[str]]] = {
        "bm25": (lambda q: index.search_bm25(q, K), generic),
        "bm25_needle": (lambda q: index.search_bm25(q, K), needle),
        "overlap": (lambda q: index.search_overlap(q, K), generic),
        "recall": (lambda q: index.recall(q, K), generic),
        "recall_needle": (lambda q: index.recall(q, K), needle),
    }
    for name, (fn, qs) in ops.items():
        res[name] = _summary(_time_queries(fn, qs, passes, seed))

    bm25_rows = [index.search_bm25(q, K) for q in generic + needle]
    recall_rows = [index.recall(q, K) for q in generic + needle]
    res["fingerprint"] = _fingerprint([bm25_rows, recall_rows])
    hits1 = hits10 = 0
    for q, rows in zip(needles, recall_rows[len(generic) :], strict=True):
        ids = [r[0] for r in rows]
        hits1 += bool(ids[:1]) and ids[0] in q.gold
        hits10 += any(o in q.gold for o in ids[:10])
    res["needle_r1"] = hits1 / max(1, len(needles))
    res["needle_r10"] = hits10 / max(1, len(needles))
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


# -- orchestration and report ----------------------------------------------------------------


def _run(cmd: Sequence[str]) -> str:
    try:
        return subprocess.run(
            cmd, capture_output=True, text=True, check=True, cwd=REPO
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = ""
    try:
        kb = int(Path("/proc/meminfo").read_text().split()[1])
        mem = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    commit = _run(["git", "rev-parse", "--short=12", "HEAD"])
    dirty = bool(_run(["git", "status", "--porcelain", "--untracked-files=no"]))
    untracked = bool(_run(["git", "status", "--porcelain"])) and not dirty
    state = " + uncommitted changes" if dirty else (" + untracked files" if untracked else "")
    versions = {}
    for mod in ("numpy", "pyroaring", "msgpack"):
        try:
            versions[mod] = __import__(mod).__version__
        except Exception:
            versions[mod] = "?"
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": (commit or "unknown") + state,
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 0,
        "memory": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "versions": versions,
        "load_before": os.getloadavg(),
    }


def _backend_status(backend: str) -> str:
    _import_memwire()
    from memwire._kernel.backend import load_kernel
    from memwire.errors import BackendError

    try:
        load_kernel(backend)
    except BackendError as exc:
        return str(exc)
    return ""


def _f(x: float, digits: int = 0) -> str:
    return f"{x:,.{digits}f}"


def report(
    machine: dict[str, Any], results: list[dict[str, Any]], missing: dict[str, str], args: Any
) -> str:
    out = []
    m = machine
    la = ", ".join(f"{x:.2f}" for x in m["load_before"])
    lb = ", ".join(f"{x:.2f}" for x in m["load_after"])
    out.append("### Machine and run\n")
    out.append(f"- date: {m['date']}; memwire commit `{m['commit']}`")
    out.append(
        f"- CPU: {m['cpu']}; {m['cores']} logical cores ({m['usable_cores']} usable); "
        f"RAM {m['memory']}; {m['os']}"
    )
    out.append(
        f"- Python {m['python']}; " + ", ".join(f"{k} {v}" for k, v in m["versions"].items())
    )
    out.append(f"- load average (1, 5, 15 min): before {la}; after {lb}")
    out.append(
        f"- corpus: ../shared/bench/corpus.py seed {args.seed}; 500 generic + "
        f"min(500, n/10) needle queries; each timed {args.passes} times after a warm-up pass"
    )
    if m.get("rust_build"):
        info = m["rust_build"]
        out.append(
            f"- Rust extension: profile {info.get('profile')}, opt-level {info.get('opt_level')}, "
            f"{info.get('target')}, pyo3 {info.get('pyo3')}"
        )
    for b, why in missing.items():
        out.append(f"- **{b} backend not measured**: {why}")
    out.append("")

    out.append("### Latency per query (µs, top-10, single thread, in-process)\n")
    out.append(
        "| docs | backend | BM25 p50 | BM25 p95 | BM25 p99 | BM25 needle p50 | overlap p50 "
        "| recall p50 | recall p95 | recall needle p50 | needle R@1 / R@10 |"
    )
    out.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        out.append(
            f"| {r['n']:,} | {r['backend']} | {_f(r['bm25']['p50'], 1)} "
            f"| {_f(r['bm25']['p95'], 1)} | {_f(r['bm25']['p99'], 1)} "
            f"| {_f(r['bm25_needle']['p50'], 1)} | {_f(r['overlap']['p50'], 1)} "
            f"| {_f(r['recall']['p50'], 1)} | {_f(r['recall']['p95'], 1)} "
            f"| {_f(r['recall_needle']['p50'], 1)} "
            f"| {r['needle_r1']:.3f} / {r['needle_r10']:.3f} |"
        )
    out.append("")
    out.append("### Build, snapshot, memory\n")
    out.append(
        "| docs | backend | build s | build docs/s | snapshot MB | to_bytes ms | from_bytes ms "
        "| index RSS MB | peak RSS MB | first-pass BM25 p50 µs |"
    )
    out.append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        out.append(
            f"| {r['n']:,} | {r['backend']} | {_f(r['build_s'], 2)} "
            f"| {_f(r['build_docs_per_s'])} | {_f(r['snapshot_mb'], 1)} "
            f"| {_f(r['to_bytes_ms'], 1)} | {_f(r['from_bytes_ms'], 1)} "
            f"| {_f(r['index_rss_mb'], 1)} | {_f(r['peak_rss_mb'])} "
            f"| {_f(r['bm25_cold']['p50'], 1)} |"
        )
    out.append("")

    by = {(r["backend"], r["n"]): r for r in results}
    pairs = [n for n in args.sizes if ("rust", n) in by and ("python", n) in by]
    if pairs:
        out.append("### Rust vs Python (speedup = python time / rust time)\n")
        out.append(
            "| docs | build | BM25 p50 | BM25 p99 | overlap p50 | recall p50 | recall needle p50 "
            "| from_bytes | to_bytes | rust/python BM25 p50 | same results / snapshot bytes |"
        )
        out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for n in pairs:
            rs, py = by["rust", n], by["python", n]

            def x(key: str, stat: str = "p50", rs: dict = rs, py: dict = py) -> str:
                return f"{py[key][stat] / rs[key][stat]:.1f}x"

            same = "yes" if rs["fingerprint"] == py["fingerprint"] else "**NO**"
            same += " / " + ("yes" if rs["snapshot_sha"] == py["snapshot_sha"] else "**NO**")
            out.append(
                f"| {n:,} | {rs['build_docs_per_s'] / py['build_docs_per_s']:.1f}x "
                f"| {x('bm25')} | {x('bm25', 'p99')} | {x('overlap')} | {x('recall')} "
                f"| {x('recall_needle')} | {py['from_bytes_ms'] / rs['from_bytes_ms']:.1f}x "
                f"| {py['to_bytes_ms'] / rs['to_bytes_ms']:.1f}x "
                f"| {rs['bm25']['p50'] / py['bm25']['p50']:.3f} | {same} |"
            )
        out.append("")
    big = max(args.sizes)
    if ("rust", big) in by:
        rs = by["rust", big]
        line = (
            f"Target (issue 2): Rust BM25 top-10 p50 at {big:,} docs = {rs['bm25']['p50']:.1f} µs"
        )
        if ("python", big) in by:
            line += f", {by['python', big]['bm25']['p50'] / rs['bm25']['p50']:.1f}x Python"
        out.append(line + " (want well under 1,000 µs and at least 10x).\n")
    return "\n".join(out)


def _sizes(values: Sequence[str]) -> list[int]:
    out = []
    for v in values:
        out += [int(s.replace("_", "")) for s in v.split(",") if s.strip()]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["1000,10000,100000"], help="e.g. 1000,10000")
    ap.add_argument("--backends", default="rust,python")
    ap.add_argument("--seed", type=int, default=corpus_cache.DEFAULT_SEED)
    ap.add_argument("--passes", type=int, default=5, help="timed passes over each query set")
    ap.add_argument("--out", help="also write the markdown report to this file")
    ap.add_argument("--json", help="also write the raw measurements to this JSON file")
    ap.add_argument("--worker", nargs=2, metavar=("BACKEND", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        backend, n = args.worker[0], int(args.worker[1])
        print(json.dumps(measure(backend, n, args.seed, args.passes)))
        return 0

    args.sizes = _sizes(args.sizes)
    machine = machine_info()
    try:
        for n in args.sizes:
            corpus_cache.ensure_corpus(n, args.seed)
    except corpus_cache.CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    missing: dict[str, str] = {}
    backends = []
    for b in args.backends.split(","):
        why = _backend_status(b)
        if why:
            missing[b] = why
            print(f"skipping the {b} backend: {why}", file=sys.stderr)
        else:
            backends.append(b)
    if "rust" in backends:
        from memwire._kernel.backend import load_kernel

        build_info = getattr(load_kernel("rust"), "build_info", None)
        machine["rust_build"] = build_info() if callable(build_info) else {}
    results = []
    for n in args.sizes:
        for b in backends:
            print(f"measuring {b} at {n:,} docs...", file=sys.stderr, flush=True)
            cmd = [sys.executable, __file__, "--worker", b, str(n)]
            cmd += ["--seed", str(args.seed), "--passes", str(args.passes)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            results.append(json.loads(proc.stdout))
    machine["load_after"] = os.getloadavg()
    text = report(machine, results, missing, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.json:
        Path(args.json).write_text(
            json.dumps({"machine": machine, "results": results}, indent=1), encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
