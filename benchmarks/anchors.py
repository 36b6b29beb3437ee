"""memwire beside the anchors a user would pick instead, in ONE run on the same corpus.

    pip install -e .[bench] wordfreq
    python benchmarks/anchors.py --sizes 1000,10000,100000 --out anchors.md

Systems (benchmarks/anchors/systems.py has one adapter each, same interface): the memwire Rust
and Python kernels (``BankIndex.search_bm25`` top-10), memwire's full ``Memory.recall`` on an
SQLite store (Rust and Python backends; default bank config, and lexical-only: embedder none,
fusion weights [1, 0.5, 0]), tantivy, bm25s, SQLite FTS5 ``bm25()``, rank-bm25 and trw-memory
(keyword mode). Every system at every size runs in its own fresh subprocess, so its peak RSS is
its own: the worker loads the corpus, resets the kernel's peak-RSS mark
(``/proc/self/clear_refs``), builds the index (timed: index throughput), measures what it
persists, then times the 500 generic queries individually (one untimed warm-up pass, then
``--passes`` shuffled passes; p50/p95/p99 over all samples) and runs the needle queries once
(recall@1/@10 against the one gold document: a check that each system finds the needle, plus
their latency). Peak RSS is the high-water mark after the reset minus the resident size at the
reset (the corpus, interpreter and library are excluded).

Slow systems get a time budget (``--budget`` seconds per query phase): when the full query set
does not fit, the first queries that do are timed, in one pass, and the report says how many
samples each figure has. rank-bm25 and trw-memory are O(N) per query in Python: by default they
run only up to 10,000 docs (``--cap``). trw-memory cannot share an environment with memwire
(through fastmcp it pins ``mcp<2``; memwire needs ``mcp>=2.3``): its worker runs in the
interpreter given by ``--trw-python`` (default ``~/.cache/memwire/bench/trw-venv/bin/python``,
made with ``python -m venv ...; .../pip install trw-memory==5.4.0``), and is skipped with the
reason when that is missing. The workers run with HF_HUB_OFFLINE=1 and friends: nothing may
download a model or data at run time.

Corpus, percentiles, query timing and the machine description are those of
benchmarks/corpus_cache.py and benchmarks/kernel_speed.py (imported, not copied).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_cache
import kernel_speed
from kernel_speed import _sizes, _summary, _time_queries, machine_info

REPO = corpus_cache.repo_root()
K = 10
BASELINE = "memwire-kernel-rust"
DEFAULT_SYSTEMS = (
    "memwire-kernel-rust",
    "memwire-kernel-python",
    "memwire-recall-rust",
    "memwire-recall-rust-lexical",
    "memwire-recall-python",
    "memwire-recall-python-lexical",
    "tantivy",
    "bm25s",
    "sqlite-fts5",
    "rank-bm25",
    "trw-memory",
)
DEFAULT_CAPS = {"rank-bm25": 10_000, "trw-memory": 10_000}
DEFAULT_TRW_PYTHON = Path.home() / ".cache" / "memwire" / "bench" / "trw-venv" / "bin" / "python"
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRW_PLATFORM_CONTACT_ENABLED": "false",
    "OTEL_SDK_DISABLED": "true",
    "TOKENIZERS_PARALLELISM": "false",
    # one thread for every library that would start a pool (the targets are single-thread)
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "RAYON_NUM_THREADS": "1",
}
RESULT_TAG = "@@anchors-result@@ "


# -- worker: one system, one size, one process -------------------------------------------------


def _status_kb(key: str) -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _reset_peak() -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _peak_kb() -> int:
    import resource

    return _status_kb("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _budgeted(
    fn: Callable[[str], object], queries: Sequence[str], passes: int, seed: int, budget: float
) -> tuple[list[float], int, int]:
    """Warm up, then time ``queries`` within about ``budget`` seconds.

    Returns (µs samples, queries timed, passes). Probe the cost on the first 20 queries; if a
    warm-up pass plus at least one timed pass fit, do the warm-up and up to ``passes`` timed
    passes; otherwise time as many of the first queries as fit, once (the probe served as
    their warm-up).
    """
    probe = list(queries[:20])
    t0 = time.perf_counter()
    for q in probe:
        fn(q)
    per_query = (time.perf_counter() - t0) / max(1, len(probe))
    fits = int(budget / max(per_query * len(queries), 1e-9))  # full passes within the budget
    if fits >= 2:
        for q in queries:  # warm-up pass (e.g. the pure kernel builds per-term arrays lazily)
            fn(q)
        done = max(1, min(passes, fits - 1))
        return _time_queries(fn, queries, done, seed), len(queries), done
    fit = max(len(probe), min(len(queries), int(budget / max(per_query, 1e-9))))
    chosen = list(queries[:fit])
    return _time_queries(fn, chosen, 1, seed), len(chosen), 1


def measure(system: str, n: int, seed: int, passes: int, budget: float) -> dict[str, Any]:
    from anchors.systems import SYSTEMS

    res: dict[str, Any] = {"system": system, "n": n, "load_start": os.getloadavg()}
    adapter = SYSTEMS[system]()
    res["info"] = dict(adapter.info)
    corpus = corpus_cache.load_corpus(n, seed, nfkc=adapter.nfkc)
    texts = corpus.texts
    generic = [q.text for q in corpus.queries_of("generic")]
    needles = corpus.queries_of("needle")
    gc.collect()
    res["peak_reset"] = _reset_peak()
    rss0 = _status_kb("VmRSS") if res["peak_reset"] else _peak_kb()
    try:
        t0 = time.perf_counter()
        adapter.build(texts)
        res["build_s"] = time.perf_counter() - t0
        res["build_docs_per_s"] = n / res["build_s"]
        res["build_peak_rss_mb"] = max(0, _peak_kb() - rss0) / 1024
        after = getattr(adapter, "after_build", None)
        if after is not None:
            res["open_s"] = after(generic[0])
            res["graph_s"] = getattr(adapter, "graph_s", 0.0)
            res["open_peak_rss_mb"] = max(0, _peak_kb() - rss0) / 1024
        res["disk_bytes"] = adapter.disk_bytes()
        gc.collect()

        def search(q: str) -> list[int]:
            return adapter.search(q, K)

        us, count, done = _budgeted(search, generic, passes, seed, budget)
        res["generic"] = _summary(us)
        res["generic_queries"], res["generic_passes"] = count, done

        # needles: one pass (after a short warm-up) for recall@1/@10 and their latency
        for q in needles[:5]:
            search(q.text)
        hits1 = hits10 = 0
        lat: list[float] = []
        spent = 0.0
        for q in needles:
            t = time.perf_counter_ns()
            ids = search(q.text)
            dt = (time.perf_counter_ns() - t) / 1000
            lat.append(dt)
            hits1 += bool(ids) and ids[0] in q.gold
            hits10 += any(i in q.gold for i in ids[:K])
            spent += dt / 1e6
            if spent > budget and len(lat) >= 20:
                break
        res["needle"] = _summary(lat)
        res["needle_queries"] = len(lat)
        res["needle_r1"] = hits1 / len(lat)
        res["needle_r10"] = hits10 / len(lat)
        res["info"] = dict(adapter.info)
    finally:
        adapter.close()
    res["peak_rss_mb"] = max(0, _peak_kb() - rss0) / 1024
    res["process_peak_rss_mb"] = _peak_kb() / 1024
    return res


# -- orchestration ------------------------------------------------------------------------------


def _python_for(system: str, args: argparse.Namespace) -> tuple[str, str]:
    """(interpreter, reason it cannot run or '')."""
    if system != "trw-memory":
        return sys.executable, ""
    py = Path(args.trw_python).expanduser()
    if not py.exists():
        return "", (
            f"no interpreter at {py}: trw-memory needs its own virtualenv (it pins mcp<2 "
            "through fastmcp); `python -m venv ~/.cache/memwire/bench/trw-venv && "
            "~/.cache/memwire/bench/trw-venv/bin/pip install trw-memory==5.4.0`"
        )
    return str(py), ""


def run_worker(system: str, n: int, args: argparse.Namespace) -> tuple[dict[str, Any] | None, str]:
    py, why = _python_for(system, args)
    if why:
        return None, why
    cmd = [py, str(Path(__file__).resolve()), "--worker", system, str(n)]
    cmd += ["--seed", str(args.seed), "--passes", str(args.passes), "--budget", str(args.budget)]
    env = {**os.environ, **OFFLINE_ENV}
    env.setdefault("MEMWIRE_SHARED", str(corpus_cache.generator_path().parent.parent))
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, check=False, env=env, timeout=args.timeout
        )
    except subprocess.TimeoutExpired:
        return None, f"timed out after {args.timeout:.0f} s"
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :]), ""
    tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-12:]
    return None, f"exit {proc.returncode}: " + " / ".join(tail)


# -- report -------------------------------------------------------------------------------------


def _num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _lat(us: float) -> str:
    return f"{us:,.1f}" if us < 100 else f"{us:,.0f}"


def _ratio(x: float | None, base: float | None) -> str:
    if x is None or not base:
        return "—"
    r = x / base
    return f"{r:.2f}x" if r < 10 else f"{r:,.0f}x"


def _mb(b: int | None) -> float | None:
    return None if b is None else b / 1e6


def report(
    machine: dict[str, Any],
    results: dict[tuple[str, int], dict[str, Any]],
    skipped: dict[tuple[str, int], str],
    args: argparse.Namespace,
) -> str:
    m = machine
    la = ", ".join(f"{x:.2f}" for x in m["load_before"])
    lb = ", ".join(f"{x:.2f}" for x in m["load_after"])
    out = ["### Machine and run\n"]
    out.append(f"- date: {m['date']}; memwire commit `{m['commit']}`; run took {m['took']}")
    out.append(
        f"- CPU: {m['cpu']}; {m['cores']} logical cores ({m['usable_cores']} usable); "
        f"RAM {m['memory']}; {m['os']}; Python {m['python']}"
    )
    out.append(f"- load average (1, 5, 15 min): before {la}; after {lb}")
    out.append(f"- command: `{m['command']}`")
    out.append(
        f"- corpus: ../shared/bench/corpus.py seed {args.seed}; latency over the 500 generic "
        f"queries (warm-up pass, then {args.passes} shuffled passes, unless the budget of "
        f"{args.budget:.0f} s per phase cut it: see *samples*), recall@1/@10 over the needle "
        "queries (min(500, n/10)), top-10, one thread, in-process"
    )
    versions: dict[str, str] = {}
    for r in results.values():
        versions.setdefault(r["system"], r["info"].get("version", "?"))
    out.append("- versions: " + "; ".join(f"{s}: {v}" for s, v in versions.items()))
    out.append("")

    out.append(
        "Ratios (*x* columns) are this system's value divided by the memwire Rust kernel's "
        "at the same size: above 1 means more docs/s, more µs (slower), more memory or more "
        "disk. *peak RSS* is the worker's high-water mark during build and queries minus its "
        "resident size before the build (corpus, interpreter and library excluded).\n"
    )
    for n in args.sizes:
        base = results.get((BASELINE, n))
        out.append(f"### {n:,} documents\n")
        out.append(
            "| system | build docs/s | x | p50 µs | x | p95 µs | p99 µs | needle p50 µs "
            "| needle R@1 / R@10 | peak RSS MB | x | process peak MB | disk MB | x | samples |"
        )
        out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for s in args.systems:
            r = results.get((s, n))
            if r is None:
                if (s, n) in skipped:
                    out.append(f"| {s} | *not run: see below* |" + " |" * 13)
                continue
            g, nd = r["generic"], r["needle"]
            samples = f"{r['generic_queries']}x{r['generic_passes']} / {r['needle_queries']}"
            out.append(
                f"| {s} | {_num(r['build_docs_per_s'])} "
                f"| {_ratio(r['build_docs_per_s'], base and base['build_docs_per_s'])} "
                f"| {_lat(g['p50'])} | {_ratio(g['p50'], base and base['generic']['p50'])} "
                f"| {_lat(g['p95'])} | {_lat(g['p99'])} | {_lat(nd['p50'])} "
                f"| {r['needle_r1']:.3f} / {r['needle_r10']:.3f} "
                f"| {_num(r['peak_rss_mb'], 1)} "
                f"| {_ratio(r['peak_rss_mb'], base and base['peak_rss_mb'])} "
                f"| {_num(r['process_peak_rss_mb'])} "
                f"| {_num(_mb(r['disk_bytes']), 1)} "
                f"| {_ratio(_mb(r['disk_bytes']), base and _mb(base['disk_bytes']))} "
                f"| {samples} |"
            )
        out.append("")
    if skipped:
        out.append("### Not run\n")
        for (s, n), why in skipped.items():
            out.append(f"- {s} at {n:,} docs: {why}")
        out.append("")
    out.append("### Configuration of each system\n")
    seen = set()
    for r in results.values():
        if r["system"] in seen:
            continue
        seen.add(r["system"])
        info = r["info"]
        out.append(
            f"- **{r['system']}** ({info.get('version')}): {info.get('config')}; "
            f"disk = {info.get('disk')}"
        )
    opens = [r for r in results.values() if "open_s" in r]
    if opens:
        out.append(
            "- memwire `Memory`: the wait for the background HNSW graph after retain_many "
            "(above 20,000 vectors), then close (writes the snapshot, graph included), reopen "
            "+ first recall, in seconds (neither in *build docs/s*), and peak RSS MB at the end "
            "of retain_many / after that first recall: "
            + "; ".join(
                f"{r['system']} {r['n']:,}: graph {r.get('graph_s', 0.0):.1f} s, "
                f"reopen {r['open_s']:.2f} s "
                f"({r['build_peak_rss_mb']:,.0f} / {r['open_peak_rss_mb']:,.0f} MB)"
                for r in opens
            )
        )
    loads = [
        f"{r['system']} {r['n']:,}: {r['load_start'][0]:.2f}"
        for r in results.values()
        if r["load_start"][0] > 2.5
    ]
    if loads:
        out.append("- 1-min load above 2.5 when these workers started: " + "; ".join(loads))
    out.append("")
    out.append(targets(results, args))
    return "\n".join(out)


def targets(results: dict[tuple[str, int], dict[str, Any]], args: argparse.Namespace) -> str:
    """Issue 5's speed targets, computed from this run at the largest size measured."""
    n = max(args.sizes)
    get = results.get
    rk, py, tv = get((BASELINE, n)), get(("memwire-kernel-python", n)), get(("tantivy", n))
    rc, rcl = get(("memwire-recall-rust", n)), get(("memwire-recall-rust-lexical", n))
    fts = get(("sqlite-fts5", n))
    out = [f"### Issue 5 speed targets at {n:,} docs (this run)\n"]

    def verdict(ok: bool) -> str:
        return "**met**" if ok else "**missed**"

    if rk and tv:
        a, b = rk["generic"]["p50"], tv["generic"]["p50"]
        out.append(
            f"- Rust top-10 lexical p50 at or below tantivy's: {verdict(a <= b)} "
            f"({a:,.1f} µs vs {b:,.1f} µs, {b / a:.1f}x)"
        )
        a, b = rk["build_docs_per_s"], tv["build_docs_per_s"]
        out.append(
            f"- index build at least tantivy's docs/s: {verdict(a >= b)} "
            f"({a:,.0f} vs {b:,.0f} docs/s)"
        )
    for r, label in ((rc, "default config"), (rcl, "lexical config")):
        if r:
            p = r["generic"]["p50"]
            out.append(
                f"- full Memory.recall p50 under 0.5 ms ({label}): {verdict(p < 500)} "
                f"({p / 1000:.3f} ms; p95 {r['generic']['p95'] / 1000:.3f} ms)"
            )
    if rk and py:
        ratio = py["generic"]["p50"] / rk["generic"]["p50"]
        out.append(
            f"- Python kernel within 10x of Rust (BM25 top-10 p50): {verdict(ratio <= 10)} "
            f"({ratio:.1f}x; build {rk['build_docs_per_s'] / py['build_docs_per_s']:.1f}x)"
        )
    for n2 in args.sizes:
        trw, mine = get(("trw-memory", n2)), get(("memwire-recall-rust", n2))
        if trw and mine:
            out.append(
                f"- trw-memory (keyword mode) at {n2:,}: p50 "
                f"{trw['generic']['p50'] / 1000:,.1f} ms vs Memory.recall (Rust, default) "
                f"{mine['generic']['p50'] / 1000:,.3f} ms "
                f"({trw['generic']['p50'] / mine['generic']['p50']:,.0f}x)"
            )
    if fts and rk:
        out.append(
            f"- SQLite FTS5 p50 {fts['generic']['p50'] / 1000:,.2f} ms / p95 "
            f"{fts['generic']['p95'] / 1000:,.2f} ms: "
            f"{fts['generic']['p50'] / rk['generic']['p50']:,.0f}x the Rust kernel's p50"
            + (
                f", {fts['generic']['p50'] / rc['generic']['p50']:,.1f}x Memory.recall's"
                if rc
                else ""
            )
        )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["1000,10000,100000"], help="e.g. 1000,10000")
    ap.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS), help="comma-separated")
    ap.add_argument("--seed", type=int, default=corpus_cache.DEFAULT_SEED)
    ap.add_argument("--passes", type=int, default=3, help="timed passes over the generic queries")
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per query phase")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per worker")
    ap.add_argument(
        "--cap",
        action="append",
        default=[],
        metavar="SYSTEM=N",
        help="largest size a system runs at (default rank-bm25=10000, trw-memory=10000)",
    )
    ap.add_argument("--trw-python", default=str(DEFAULT_TRW_PYTHON))
    ap.add_argument("--out", help="also write the markdown report to this file")
    ap.add_argument("--json", help="also write the raw measurements to this JSON file")
    ap.add_argument("--worker", nargs=2, metavar=("SYSTEM", "N"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.worker:
        res = measure(args.worker[0], int(args.worker[1]), args.seed, args.passes, args.budget)
        print(RESULT_TAG + json.dumps(res), flush=True)
        return 0

    from anchors.systems import SYSTEMS

    args.sizes = _sizes(args.sizes)
    args.systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in args.systems if s not in SYSTEMS]
    if unknown:
        ap.error(f"unknown systems {unknown}; choose from {', '.join(SYSTEMS)}")
    caps = dict(DEFAULT_CAPS)
    for c in args.cap:
        name, _, value = c.partition("=")
        caps[name] = int(value.replace("_", ""))
    started = time.time()
    kernel_speed._import_memwire()
    machine = machine_info()
    machine["command"] = "python benchmarks/anchors.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    try:
        for n in args.sizes:
            corpus_cache.ensure_corpus(n, args.seed)
    except corpus_cache.CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    results: dict[tuple[str, int], dict[str, Any]] = {}
    skipped: dict[tuple[str, int], str] = {}
    for n in args.sizes:
        for s in args.systems:
            if n > caps.get(s, n):
                skipped[s, n] = (
                    f"above its cap of {caps[s]:,} docs (O(N) Python per query; "
                    f"`--cap {s}=N` to force)"
                )
                continue
            print(f"{s} at {n:,} docs... ", end="", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            r, why = run_worker(s, n, args)
            took = time.perf_counter() - t0
            if r is None:
                skipped[s, n] = why
                print(f"not run ({took:.0f} s): {why}", file=sys.stderr, flush=True)
            else:
                results[s, n] = r
                print(
                    f"{took:.0f} s: p50 {r['generic']['p50']:,.1f} µs, "
                    f"{r['build_docs_per_s']:,.0f} docs/s",
                    file=sys.stderr,
                    flush=True,
                )
    machine["load_after"] = os.getloadavg()
    machine["took"] = f"{(time.time() - started) / 60:.1f} min"
    text = report(machine, results, skipped, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    if args.json:
        rows = [{**r} for r in results.values()]
        skip = [{"system": s, "n": n, "why": w} for (s, n), w in skipped.items()]
        Path(args.json).write_text(
            json.dumps({"machine": machine, "results": rows, "skipped": skip}, indent=1),
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
