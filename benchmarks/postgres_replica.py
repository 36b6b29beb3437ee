"""Retain and recall through a replica on PostgreSQL against the SQLite default, in one run.

    python benchmarks/postgres_replica.py --url postgresql://... [--n 100000] [--backend rust]

For each store (a SQLite file in a temp dir; a fresh schema of the PostgreSQL database at --url,
dropped afterwards) with the same N synthetic memories:

1. bulk load: ``retain_many`` of N memories (batches of 10,000, one transaction each);
2. retain: 300 single ``retain`` calls into the loaded bank (median and p95 of the latency);
3. recall on the writer: 300 queries (median, p95), the index already built;
4. recall on a second replica (a second ``Memory`` on the same store, as a second server is):
   its first recall (loads the index: rows, no snapshot), then 300 queries, each right after a
   retain by the first ``Memory`` (the replica reads the head, replays one change, answers).

Wall clock, one run: indicative numbers for docs/BENCHMARKS.md, not a timed test. The database
is whatever --url points at (a local one shares the CPU with memwire).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
sys.path.insert(0, str(PYTHON_DIR))

from memwire import Memory  # noqa: E402
from memwire.store import Store  # noqa: E402

WORDS = [
    "deploy",
    "staging",
    "database",
    "port",
    "cache",
    "queue",
    "worker",
    "retry",
    "token",
    "schema",
    "index",
    "backup",
    "replica",
    "lunch",
    "meeting",
    "friday",
    "release",
    "train",
    "pager",
    "rota",
    "runbook",
    "incident",
    "latency",
    "budget",
    "vector",
    "search",
    "memory",
    "agent",
    "host",
    "laptop",
    "runner",
    "server",
    "cluster",
    "region",
    "zone",
    "network",
    "firewall",
]


def corpus(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return [f"note {i}: " + " ".join(rng.choices(WORDS, k=12)) for i in range(n)]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1e3:.2f} ms, p95 {pct(values, 0.95) * 1e3:.2f} ms"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def run(name: str, open_store: Callable[[], Store], n: int, backend: str) -> None:
    texts = corpus(n)
    rng = random.Random(11)
    queries = [" ".join(rng.choices(WORDS, k=3)) for _ in range(300)]
    with Memory(store=open_store(), backend=backend) as writer:
        load = timed(lambda: writer.retain_many(texts, bank="b"))
        print(f"{name}: bulk load {n:,}: {load:.1f} s ({n / load:,.0f}/s)", flush=True)
        first = timed(lambda: writer.recall("deploy staging", bank="b"))
        print(f"{name}: first recall on the writer (index build): {first:.2f} s", flush=True)
        retains = [
            timed(lambda i=i: writer.retain(f"fresh note {i} about replicas", bank="b"))
            for i in range(300)
        ]
        print(f"{name}: retain: {ms(retains)}", flush=True)
        recalls = [timed(lambda q=q: writer.recall(q, bank="b")) for q in queries]
        print(f"{name}: recall on the writer: {ms(recalls)}", flush=True)
        with Memory(store=open_store(), backend=backend) as replica:
            load2 = timed(lambda: replica.recall("deploy staging", bank="b"))
            print(f"{name}: replica first recall (loads the index): {load2:.2f} s", flush=True)
            after: list[float] = []
            for i, q in enumerate(queries):
                writer.retain(f"another note {i} written elsewhere", bank="b")
                after.append(timed(lambda q=q: replica.recall(q, bank="b")))
            print(f"{name}: replica recall right after a write elsewhere: {ms(after)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="a PostgreSQL database to use")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--backend", default="rust", choices=["rust", "python"])
    args = parser.parse_args()

    import psycopg
    from memwire.store.postgres import PostgresStore
    from memwire.store.sqlite import SQLiteStore

    with tempfile.TemporaryDirectory() as tmp:
        run("sqlite", lambda: SQLiteStore(Path(tmp) / "bench.db"), args.n, args.backend)
    schema = f"mwbench_{int(time.time())}"
    try:
        run("postgres", lambda: PostgresStore(args.url, schema=schema), args.n, args.backend)
    finally:
        with psycopg.connect(args.url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
