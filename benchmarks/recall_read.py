"""The read side of issue 18, in ONE run: Memory.recall against tantivy, filtered against
unfiltered, threads on one bank against serial, and two checkouts (before/after) on the
same store file.

    MEMWIRE_SHARED=/work/shared python benchmarks/recall_read.py --n 100000 \\
        --compare /work/main/python

The corpus is the shared generator's (benchmarks/corpus_cache.py, seed 7); every even document
is tagged ``even``, every odd one ``odd``, so ``exclude_tags=["even"]`` excludes half the bank.
The bank is built once (this checkout's code, Rust backend, default config: static embedder,
dense stream on), its HNSW graph awaited and the Memory closed (snapshot written). Then each
checkout (``--compare`` paths, then this one) opens that file in a fresh subprocess and, after
one untimed pass over the queries, times:

- ``recall``: ``Memory.recall(q, limit=10)``, one call per sample, p50/p95 in microseconds;
- ``filtered``: the same with ``exclude_tags=["even"]``;
- ``serial`` / ``threads``: wall time of T x Q recalls one after another, and of T threads
  (``--threads``, default 2) running Q each at once (throughput ratio = serial / threads);
  each twice, interleaved, the faster kept.

tantivy (same corpus, same queries, its own subprocess): ``parse_query`` + top-10 search, then
the stored text of each hit fetched (``searcher.doc``), the same work a recall's hits need.
Nothing here asserts a speed; the report is printed (and written with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_cache
from kernel_speed import _summary, machine_info

REPO = corpus_cache.repo_root()
K = 10
_NON_ALNUM = re.compile(r"[^0-9a-z]+")


def _queries(n: int, count: int) -> list[str]:
    corpus = corpus_cache.load_corpus(n)
    return [q.text for q in corpus.queries_of("generic")][:count]


def build(path: str, n: int) -> dict[str, Any]:
    from memwire import Memory

    corpus = corpus_cache.load_corpus(n)
    items = [
        {"content": text, "tags": ["even" if i % 2 == 0 else "odd"]}
        for i, text in enumerate(corpus.texts)
    ]
    t0 = time.perf_counter()
    mem = Memory(path, backend="rust")
    mem.retain_many(items)
    retain_s = time.perf_counter() - t0
    mem.recall("warm", limit=1)
    state = mem._bank("default")  # private: a harness may wait for the graph
    while state.index is not None and state.index.dense_graph_needed():
        time.sleep(0.1)
    graph_s = time.perf_counter() - t0 - retain_s
    mem.close()
    return {"retain_s": retain_s, "graph_s": graph_s}


def _timed(fn: Any, queries: list[str]) -> list[float]:
    out = []
    clock = time.perf_counter_ns
    for q in queries:
        t0 = clock()
        fn(q)
        out.append((clock() - t0) / 1000)
    return out


def measure_memwire(path: str, n: int, count: int, threads: int) -> dict[str, Any]:
    from memwire import Memory

    queries = _queries(n, count)
    mem = Memory(path, backend="rust")
    t0 = time.perf_counter()
    mem.recall(queries[0], limit=K)
    open_s = time.perf_counter() - t0
    # A checkout of another kernel contract refuses the stored snapshot and rebuilds the index,
    # its HNSW graph in the background: timed recalls start once the graph is in.
    state = mem._bank("default")  # private: a harness may wait for the graph
    while state.index is not None and state.index.dense_graph_needed():
        time.sleep(0.1)

    def plain(q: str) -> object:
        return mem.recall(q, limit=K)

    def filtered(q: str) -> object:
        return mem.recall(q, limit=K, exclude_tags=["even"])

    for q in queries:  # untimed pass: caches, lazily built arrays
        plain(q)
        filtered(q)
    out: dict[str, Any] = {"open_s": open_s}
    out["recall"] = _summary(_timed(plain, queries))
    out["filtered"] = _summary(_timed(filtered, queries))
    serial, parallel = [], []
    for _ in range(2):  # interleaved, the faster of two each: the machine's load moves
        t0 = time.perf_counter()
        for q in queries * threads:
            plain(q)
        serial.append(time.perf_counter() - t0)
        parallel.append(_in_threads(plain, queries, threads))
    out["serial_s"], out["threads_s"] = min(serial), min(parallel)
    mem.close()
    return out


def _in_threads(fn: Any, queries: list[str], count: int) -> float:
    """Seconds for ``count`` threads running every query each (each from another place in
    the list, alternately reversed) at once."""
    start = threading.Barrier(count + 1)

    def worker(order: list[str]) -> None:
        start.wait()
        for q in order:
            fn(q)

    orders = []
    for i in range(count):
        shift = i * len(queries) // count
        order = queries[shift:] + queries[:shift]
        orders.append(order[::-1] if i % 2 else order)
    threads = [threading.Thread(target=worker, args=(order,)) for order in orders]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    return time.perf_counter() - t0


def measure_tantivy(n: int, count: int) -> dict[str, Any]:
    import tantivy

    corpus = corpus_cache.load_corpus(n)
    queries = _queries(n, count)
    with tempfile.TemporaryDirectory() as tmp:
        sb = tantivy.SchemaBuilder()
        sb.add_integer_field("id", stored=True, indexed=False, fast=True)
        sb.add_text_field("body", stored=True, tokenizer_name="en_stem", index_option="freq")
        index = tantivy.Index(sb.build(), path=tmp)
        writer = index.writer(heap_size=256 * 2**20, num_threads=1)
        for i, text in enumerate(corpus.texts):
            writer.add_document(tantivy.Document(id=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        searcher = index.searcher()

        def search(q: str) -> list[str]:
            cleaned = _NON_ALNUM.sub(" ", q.lower()).strip()
            if not cleaned:
                return []
            hits = searcher.search(index.parse_query(cleaned, ["body"]), K).hits
            return [searcher.doc(addr)["body"][0] for _score, addr in hits]

        for q in queries:
            search(q)
        return {"search_fetch": _summary(_timed(search, queries)), "version": tantivy.__name__}


def _worker(args: argparse.Namespace, pythonpath: str | None, what: str) -> dict[str, Any]:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    cmd = [sys.executable, __file__, "--worker", what, "--n", str(args.n)]
    cmd += ["--queries", str(args.queries), "--db", args.db, "--threads", str(args.threads)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker {what} ({pythonpath}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(args: argparse.Namespace, built: dict[str, Any], runs: dict[str, Any]) -> str:
    tv = runs["tantivy"]["search_fetch"]
    lines = [
        f"recall_read, n={args.n}, {args.queries} generic queries, limit 10, Rust backend; "
        f"{machine_info().get('cpu', '')}",
        f"bank built by this checkout: retain_many {built['retain_s']:.1f} s, "
        f"HNSW graph +{built['graph_s']:.1f} s (nan: a kept --store reused); "
        f"load average at the end {os.getloadavg()[0]:.1f}",
        "",
        "| checkout | recall p50 / p95 us | x tantivy p50 | filtered p50 / p95 us "
        f"| filtered / plain p50 | {args.threads} x Q serial s | {args.threads} threads s "
        "| speed-up |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for label, r in runs.items():
        if label == "tantivy":
            continue
        rc, fl = r["recall"], r["filtered"]
        lines.append(
            f"| {label} | {rc['p50']:.0f} / {rc['p95']:.0f} | {rc['p50'] / tv['p50']:.2f} "
            f"| {fl['p50']:.0f} / {fl['p95']:.0f} | {fl['p50'] / rc['p50']:.2f} "
            f"| {r['serial_s']:.2f} | {r['threads_s']:.2f} "
            f"| {r['serial_s'] / r['threads_s']:.2f} |"
        )
    lines.append(
        f"| tantivy search + stored fetch | {tv['p50']:.0f} / {tv['p95']:.0f} | 1.00 | | | | | |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=100_000, help="documents (default 100000)")
    p.add_argument("--queries", type=int, default=300, help="generic queries timed")
    p.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="PYTHONPATH",
        help="another checkout's python/ dir to time on the same store (repeatable)",
    )
    p.add_argument(
        "--threads", type=int, default=2, help="threads recalling on the bank at once (default 2)"
    )
    p.add_argument("--out", help="also write the report here")
    p.add_argument(
        "--rounds", type=int, default=1, help="time every checkout this many times, alternating"
    )
    p.add_argument(
        "--store",
        help="keep the built bank in this file and reuse it when it exists (it must hold "
        "the same --n)",
    )
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--db", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        if args.worker == "build":
            result = build(args.db, args.n)
        elif args.worker == "tantivy":
            result = measure_tantivy(args.n, args.queries)
        else:
            result = measure_memwire(args.db, args.n, args.queries, args.threads)
        print(json.dumps(result))
        return 0
    own = str(REPO / "python")
    with tempfile.TemporaryDirectory(prefix="memwire-recall-read-") as tmp:
        args.db = args.store or str(Path(tmp) / "bank.db")
        built: dict[str, Any] = {"retain_s": float("nan"), "graph_s": float("nan")}
        if not Path(args.db).exists():
            print(f"building the {args.n}-memory bank ...", file=sys.stderr)
            built = _worker(args, own, "build")
        runs: dict[str, Any] = {}
        for round_ in range(1, args.rounds + 1):
            for path in [*args.compare, own]:
                label = "this checkout" if path == own else path
                if args.rounds > 1:
                    label += f" (round {round_})"
                print(f"timing {label} ...", file=sys.stderr)
                runs[label] = _worker(args, path, "memwire")
        print("timing tantivy ...", file=sys.stderr)
        runs["tantivy"] = _worker(args, None, "tantivy")
    text = report(args, built, runs)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
