"""Recall on a TTL bank holding expired, not yet swept memories, against the same bank without
a TTL (issue 18, "Filters in the kernel"), for two checkouts (before/after) on one store file.

    MEMWIRE_SHARED=/work/shared python benchmarks/ttl_recall.py --n 60000 \\
        --compare /work/main/python

The bank is the shared generator's corpus (as benchmarks/recall_read.py builds it: this
checkout's code, Rust backend, default config, HNSW graph awaited, snapshot written) plus
``--expired`` memories created in 2001. Each checkout, in a fresh subprocess with its
background sweep switched off (so the expired memories stay unswept for the whole run), times
``Memory.recall(q, limit=10)`` over the generic queries after one untimed pass: first with
``ttl_days`` set (3650: only the 2001 memories are expired), then with it removed. Nothing
here asserts a speed; the report is printed (and written with ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_cache
from kernel_speed import _summary, machine_info
from recall_read import K, _queries, _timed
from recall_read import build as build_bank

REPO = corpus_cache.repo_root()
TTL_DAYS = 3650


def build(path: str, n: int, expired: int) -> dict[str, Any]:
    from memwire import Memory

    built = build_bank(path, n)
    with Memory(path, backend="rust") as mem:
        old = "2001-01-01T00:00:00Z"
        items = [{"content": f"expired note {i}", "created_at": old} for i in range(expired)]
        mem.retain_many(items)
    return built


def measure(path: str, n: int, count: int) -> dict[str, Any]:
    from memwire import Memory

    queries = _queries(n, count)
    mem = Memory(path, backend="rust")
    mem._snapshotter._sweep = None  # private: keep the expired memories unswept
    state = mem._bank("default")
    mem.recall(queries[0], limit=K)
    while state.index is not None and state.index.dense_graph_needed():
        time.sleep(0.1)

    def plain(q: str) -> object:
        return mem.recall(q, limit=K)

    out: dict[str, Any] = {}
    for label, ttl in (("ttl", TTL_DAYS), ("no_ttl", None)):
        mem.set_config("default", {"ttl_days": ttl})
        for q in queries:  # untimed pass
            plain(q)
        out[label] = _summary(_timed(plain, queries))
        if ttl is not None:
            out["expired_left"] = len(mem.sweep(dry_run=True))
    mem.close()
    return out


def _worker(args: argparse.Namespace, pythonpath: str, what: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=pythonpath)
    cmd = [sys.executable, __file__, "--worker", what, "--n", str(args.n)]
    cmd += ["--queries", str(args.queries), "--db", args.db, "--expired", str(args.expired)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"worker {what} ({pythonpath}) failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--n", type=int, default=60_000, help="corpus documents (default 60000)")
    p.add_argument("--expired", type=int, default=1, help="expired memories added (default 1)")
    p.add_argument("--queries", type=int, default=300, help="generic queries timed")
    p.add_argument("--compare", action="append", default=[], metavar="PYTHONPATH")
    p.add_argument("--out", help="also write the report here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--db", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker == "build":
        print(json.dumps(build(args.db, args.n, args.expired)))
        return 0
    if args.worker:
        print(json.dumps(measure(args.db, args.n, args.queries)))
        return 0
    own = str(REPO / "python")
    with tempfile.TemporaryDirectory(prefix="memwire-ttl-recall-") as tmp:
        args.db = str(Path(tmp) / "bank.db")
        print(f"building the {args.n}-memory bank ...", file=sys.stderr)
        built = _worker(args, own, "build")
        runs = {}
        for path in [*args.compare, own]:
            label = "this checkout" if path == own else path
            print(f"timing {label} ...", file=sys.stderr)
            runs[label] = _worker(args, path, "measure")
    lines = [
        f"ttl_recall, n={args.n} + {args.expired} expired unswept, {args.queries} generic "
        f"queries, limit 10, Rust backend; {machine_info().get('cpu', '')}",
        f"bank built by this checkout: retain_many {built['retain_s']:.1f} s, HNSW graph "
        f"+{built['graph_s']:.1f} s; load average at the end {os.getloadavg()[0]:.1f}",
        "",
        "| checkout | TTL bank p50 / p95 us | no TTL p50 / p95 us | TTL / no TTL p50 "
        "| expired left |",
        "| --- | --- | --- | --- | --- |",
    ]
    for label, r in runs.items():
        ttl, plain = r["ttl"], r["no_ttl"]
        lines.append(
            f"| {label} | {ttl['p50']:.0f} / {ttl['p95']:.0f} | {plain['p50']:.0f} / "
            f"{plain['p95']:.0f} | {ttl['p50'] / plain['p50']:.2f} | {r['expired_left']} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
