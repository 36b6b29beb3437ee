"""Server footprint and HTTP recall latency: idle RSS (empty store, 10k memories) and p50/p95.

    python benchmarks/serve_bench.py [--n 10000] [--requests 2000] [--backend rust|python]

Starts ``python -m memwire serve`` as its own process on a free loopback port, as a user would,
and reads the server's resident set size from /proc (Linux). Latency is measured from a client
in this process with one keep-alive connection (httpx), over the benchmark corpus's queries
(benchmarks/corpus_cache.py), after a warm-up. Nothing here asserts: it prints numbers to
write down in docs/serving.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _corpus(n: int) -> Any:
    spec = importlib.util.spec_from_file_location("corpus_cache", HERE / "corpus_cache.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_cache"] = module
    spec.loader.exec_module(module)
    return module.load_corpus(n)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def start_server(db: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    import httpx

    port = free_port()
    command = [sys.executable, "-m", "memwire", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).text == "ok":
                return process, port
        except httpx.HTTPError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError("the server did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="memories in the store")
    ap.add_argument("--requests", type=int, default=2000, help="recall requests to time")
    ap.add_argument("--backend", choices=["rust", "python"], default=None)
    ap.add_argument("--idle-seconds", type=float, default=2.0, help="settle time before RSS")
    args = ap.parse_args()

    import httpx
    from memwire import Memory

    env = dict(os.environ)
    if args.backend:
        env["MEMWIRE_BACKEND"] = args.backend
        os.environ["MEMWIRE_BACKEND"] = args.backend
    corpus = _corpus(args.n)
    results: dict[str, Any] = {"n": args.n, "requests": args.requests}
    with tempfile.TemporaryDirectory() as tmp:
        empty_db = Path(tmp) / "empty.db"
        process, port = start_server(empty_db, env)
        time.sleep(args.idle_seconds)
        results["idle_rss_empty_mib"] = round(rss_mib(process.pid), 1)
        stop(process)

        full_db = Path(tmp) / "full.db"
        started = time.perf_counter()
        with Memory(full_db) as memory:
            memory.retain_many(corpus.texts[: args.n], bank="bench")
            results["backend"] = memory.backend
        results["load_seconds"] = round(time.perf_counter() - started, 2)

        process, port = start_server(full_db, env)
        time.sleep(args.idle_seconds)
        results["idle_rss_10k_cold_mib"] = round(rss_mib(process.pid), 1)
        queries = [q.text for q in corpus.queries] or ["memory"]
        url = f"http://127.0.0.1:{port}/banks/bench/recall"
        timings: list[float] = []
        with httpx.Client() as client:
            for q in queries[:50]:  # warm-up: loads the bank's index, fills caches
                client.post(url, json={"query": q}).raise_for_status()
            time.sleep(args.idle_seconds)
            results["idle_rss_10k_warm_mib"] = round(rss_mib(process.pid), 1)
            for i in range(args.requests):
                body = {"query": queries[i % len(queries)]}
                t0 = time.perf_counter()
                r = client.post(url, json=body)
                timings.append(time.perf_counter() - t0)
                r.raise_for_status()
        results["rss_after_load_mib"] = round(rss_mib(process.pid), 1)
        stop(process)
    timings.sort()
    results["recall_p50_ms"] = round(statistics.median(timings) * 1000, 3)
    results["recall_p95_ms"] = round(timings[int(len(timings) * 0.95) - 1] * 1000, 3)
    results["recall_p99_ms"] = round(timings[int(len(timings) * 0.99) - 1] * 1000, 3)
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
