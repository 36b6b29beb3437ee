"""Server footprint and speed through ``memwire serve``, beside memory-wire in the same run.

    python benchmarks/serve_bench.py [--n 10000] [--requests 2000] [--singles 1000]
        [--backend rust|python] [--peer ../shared/peers/memory-wire/memory-wire]

Starts ``python -m memwire serve`` as its own process on a free loopback port, as a user would,
and reads the server's resident set size from /proc (Linux). Measured, one keep-alive client
(httpx) in this process:

- ``first_health_s``: from spawning the server to its first ``ok`` on ``/health`` (polled every
  2 ms), ``first_health_cpu_s`` the CPU time the server had used by then (steadier than the
  wall clock on a loaded machine), and the idle RSS of the empty server;
- ``single_retains_per_s``: ``--singles`` POST /retain of the corpus's documents, one at a time;
  then the same from ``--clients`` clients at once (group commit shares their fsyncs);
- ``batch_memories_per_s``: the ``--n`` documents through POST /retain_many, 1,000 per request;
- recall p50/p95/p99 over the corpus's queries on that bank (after a 50-query warm-up), and the
  same queries through ``Memory.recall`` in this process on the same store afterwards
  (``inprocess_recall_p50_ms``): the difference is what the server path adds.

When the memory-wire binary is present (``--peer``, default ../shared/peers/memory-wire/; a
tool to measure against, never vendored), the same start, single-retain and recall phases run
against it in the same run (its recall on the bank its single retains filled is not comparable
in size, so its recall is measured after --n retains only with ``--peer-recall``). Nothing here
asserts: it prints numbers to write down in docs/BENCHMARKS.md.
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


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux): unlike the wall clock, it hardly
    moves with the machine's load, so it compares start-ups measured on a busy machine."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _health_ok(port: int) -> bool:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().read() == b"ok"
    except OSError:
        return False
    finally:
        conn.close()


def spawn(
    command: list[str], port: int, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], float]:
    """Start a server; the process and its seconds to the first ``ok`` on /health."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if _health_ok(port):
            return process, time.perf_counter() - started
        if process.poll() is not None:
            break
        time.sleep(0.002)
    process.kill()
    raise RuntimeError(f"the server did not start: {command[0]}")


def start_server(db: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int, float]:
    port = free_port()
    command = [sys.executable, "-m", "memwire", "serve", "--db", str(db), "--port", str(port)]
    process, seconds = spawn(command, port, env)
    return process, port, seconds


def start_peer(
    binary: Path, db: Path, env: dict[str, str]
) -> tuple[subprocess.Popen[bytes], int, float]:
    port = free_port()
    home = tempfile.mkdtemp(prefix="mw-peer-")
    command = [str(binary), "serve", "--addr", f"127.0.0.1:{port}", "--db", str(db)]
    process, seconds = spawn(command, port, {**env, "XDG_DATA_HOME": home})
    return process, port, seconds


def single_retains(client: Any, url: str, texts: list[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        client.post(url, json={"content": text}).raise_for_status()
    return len(texts) / (time.perf_counter() - started)


def concurrent_retains(base: str, texts: list[str], clients: int) -> float:
    """Single retains from ``clients`` keep-alive clients at once (each its own thread and
    connection): the total rate, which group commit raises."""
    import threading

    import httpx

    chunks = [texts[i::clients] for i in range(clients)]

    def run(chunk: list[str]) -> None:
        with httpx.Client(timeout=120) as client:
            for text in chunk:
                client.post(f"{base}/concurrent/retain", json={"content": text}).raise_for_status()

    threads = [threading.Thread(target=run, args=(chunk,)) for chunk in chunks]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(texts) / (time.perf_counter() - started)


def time_recalls(
    client: Any, url: str, queries: list[str], count: int, extra: dict[str, Any]
) -> list[float]:
    for q in queries[:50]:  # warm-up: loads the bank's index, fills caches
        client.post(url, json={"query": q, **extra}).raise_for_status()
    timings: list[float] = []
    for i in range(count):
        body = {"query": queries[i % len(queries)], **extra}
        t0 = time.perf_counter()
        r = client.post(url, json=body)
        timings.append(time.perf_counter() - t0)
        r.raise_for_status()
    return timings


def percentiles(timings: list[float], prefix: str) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        f"{prefix}_p50_ms": round(statistics.median(ordered) * 1000, 3),
        f"{prefix}_p95_ms": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
        f"{prefix}_p99_ms": round(ordered[int(len(ordered) * 0.99) - 1] * 1000, 3),
    }


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()


DEFAULT_PEER = HERE.parent.parent / "shared" / "peers" / "memory-wire" / "memory-wire"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="memories in the recall bank")
    ap.add_argument("--requests", type=int, default=2000, help="recall requests to time")
    ap.add_argument("--singles", type=int, default=1000, help="single retains to time")
    ap.add_argument("--clients", type=int, default=8, help="clients of the concurrent phase")
    ap.add_argument("--backend", choices=["rust", "python"], default=None)
    ap.add_argument("--idle-seconds", type=float, default=2.0, help="settle time before RSS")
    ap.add_argument("--peer", type=Path, default=DEFAULT_PEER, help="memory-wire binary")
    ap.add_argument("--peer-recall", action="store_true", help="also fill memory-wire with --n")
    args = ap.parse_args()

    import httpx
    from memwire import Memory

    env = dict(os.environ)
    if args.backend:
        env["MEMWIRE_BACKEND"] = args.backend
        os.environ["MEMWIRE_BACKEND"] = args.backend
    corpus = _corpus(args.n)
    texts = list(corpus.texts[: args.n])
    queries = [q.text for q in corpus.queries] or ["memory"]
    singles = texts[: args.singles]
    results: dict[str, Any] = {"n": args.n, "requests": args.requests, "singles": len(singles)}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memwire.db"
        process, port, results["first_health_s"] = start_server(db, env)
        results["first_health_cpu_s"] = round(cpu_seconds(process.pid), 3)
        time.sleep(args.idle_seconds)
        results["idle_rss_empty_mib"] = round(rss_mib(process.pid), 1)
        base = f"http://127.0.0.1:{port}/banks"
        with httpx.Client(timeout=120) as client:
            results["single_retains_per_s"] = round(
                single_retains(client, f"{base}/singles/retain", singles), 1
            )
            results[f"single_retains_{args.clients}_clients_per_s"] = round(
                concurrent_retains(base, [f"c {t}" for t in singles], args.clients), 1
            )
            started = time.perf_counter()
            for start in range(0, len(texts), 1000):
                batch = {"items": texts[start : start + 1000]}
                client.post(f"{base}/bench/retain_many", json=batch).raise_for_status()
            results["batch_memories_per_s"] = round(len(texts) / (time.perf_counter() - started))
            results["rss_after_batches_mib"] = round(rss_mib(process.pid), 1)
            timings = time_recalls(client, f"{base}/bench/recall", queries, args.requests, {})
            results.update(percentiles(timings, "recall"))
        results["rss_after_recalls_mib"] = round(rss_mib(process.pid), 1)
        stop(process)
        with Memory(db) as memory:
            results["backend"] = memory.backend
            for q in queries[:50]:
                memory.recall(q, bank="bench")
            local = []
            for i in range(args.requests):
                t0 = time.perf_counter()
                memory.recall(queries[i % len(queries)], bank="bench")
                local.append(time.perf_counter() - t0)
        results.update(percentiles(local, "inprocess_recall"))
        results["server_adds_p50_ms"] = round(
            results["recall_p50_ms"] - results["inprocess_recall_p50_ms"], 3
        )

        if args.peer.exists():
            peer: dict[str, Any] = {}
            process, port, peer["first_health_s"] = start_peer(
                args.peer, Path(tmp) / "peer.db", env
            )
            time.sleep(args.idle_seconds)
            peer["idle_rss_empty_mib"] = round(rss_mib(process.pid), 1)
            base = f"http://127.0.0.1:{port}/banks"
            with httpx.Client(timeout=120) as client:
                peer["single_retains_per_s"] = round(
                    single_retains(client, f"{base}/singles/retain", singles), 1
                )
                peer[f"single_retains_{args.clients}_clients_per_s"] = round(
                    concurrent_retains(base, [f"c {t}" for t in singles], args.clients), 1
                )
                if args.peer_recall:
                    single_retains(client, f"{base}/bench/retain", texts)
                    timings = time_recalls(
                        client, f"{base}/bench/recall", queries, args.requests, {"format": "full"}
                    )
                    peer.update(percentiles(timings, "recall"))
            peer["rss_mib"] = round(rss_mib(process.pid), 1)
            stop(process)
            results["memory_wire"] = peer
            results["single_retains_vs_memory_wire"] = round(
                results["single_retains_per_s"] / peer["single_retains_per_s"], 2
            )
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
