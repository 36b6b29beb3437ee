"""Server footprint and speed through ``memwire serve``, beside memory-wire in the same run.

    python benchmarks/serve_bench.py [--n 10000] [--requests 2000] [--singles 1000]
        [--backend rust|python] [--peer ../shared/peers/memory-wire/memory-wire]

Starts ``python -m memwire serve`` as its own process on a free loopback port, as a user would,
and reads the server's resident set size from /proc (Linux). Measured, one keep-alive client
in this process (:class:`Client`, a plain socket; httpx, used here before, added 1-3 ms of its
own to every POST on this machine, which earlier runs counted as the server's):

- ``first_health_s``: from spawning the server to its first ``ok`` on ``/health`` (polled every
  2 ms), ``first_health_cpu_s`` the CPU time the server had used by then (steadier than the
  wall clock on a loaded machine), and the idle RSS of the empty server (the servers use
  compiled bytecode, as an installed package does: see ``main``);
- ``first_retain_ms``: the first POST /retain a fresh server answers (memwire builds its Memory
  for it: the kernel, numpy and the embedder load on first use unless ``serve --warm``);
- ``single_retains_per_s``: then ``--singles`` POST /retain of the corpus's documents, one at a
  time, into another bank; then the same from ``--clients`` clients at once (group commit
  shares their fsyncs). Until session 20 the first retain was one of the timed ones, so the
  rate also counted the server's first-use loading (~0.3 s), which a run of 100 singles
  mostly measured;
  ``fsync_floor_ms``: what one durable commit's I/O costs on this disk without SQLite
  (:func:`fsync_floor_ms`), and ``single_retain_ceiling_per_s`` the rate it allows one client
  that waits for each answer (memwire answers a retain only once its commit is on disk);
- ``batch_memories_per_s``: the ``--n`` documents through POST /retain_many, 1,000 per request;
- recall p50/p95/p99 over the corpus's queries on that bank (once the server's background work,
  the HNSW graph above all, is done: ``background_wait_s``; then a 50-query warm-up), and the
  same queries through ``Memory.recall`` in this process on the same store afterwards
  (``inprocess_recall_p50_ms``): the difference is what the server path adds;
- ``recall_clients_per_s``: recall throughput with one client, then with ``--recall-clients``
  clients at once (each its own thread and connection, every one running ``--requests``
  recalls), and their ratio (issue 18: >= 1.7x with 8 clients on 2 cores);
- ``recall_during_write_*``: recall p50/p99 while another client's POST /retain_many of
  ``--write-items`` documents runs, and that p99 over the quiet p50 (issue 18: < 10x).

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


class Client:
    """One keep-alive HTTP/1.1 connection over a plain socket: ``post`` sends a JSON request in
    one write (TCP_NODELAY) and returns the parsed answer, raising on any status but 200.

    As lean as a client can be, so that the timings are the server's: with httpx (used here
    before) the same recalls measured 1-3 ms more each, spent on the client's side."""

    def __init__(self, base: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(base)
        self.prefix = parts.path.rstrip("/").encode()
        self.host = f"{parts.hostname}:{parts.port}".encode()
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        data = json.dumps(body).encode()
        head = (
            b"POST "
            + self.prefix
            + path.encode()
            + b" HTTP/1.1\r\nHost: "
            + self.host
            + b"\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(data)).encode()
            + b"\r\n\r\n"
        )
        self.sock.sendall(head + data)
        status, answer = self._response()
        if status != b"200":
            raise RuntimeError(f"POST {path}: {status!r} {answer[:200]!r}")
        return json.loads(answer)

    def _response(self) -> tuple[bytes, bytes]:
        """The next response's status code and body (sized by its Content-Length)."""
        status = self.reader.readline().split(b" ", 2)
        length = 0
        while (line := self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return (status[1] if len(status) > 1 else b""), self.reader.read(length)

    def get(self, path: str) -> Any:
        """GET an absolute ``path`` (not under the prefix); its JSON answer, whatever status."""
        self.sock.sendall(
            b"GET " + path.encode() + b" HTTP/1.1\r\nHost: " + self.host + b"\r\n\r\n"
        )
        return json.loads(self._response()[1])

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def _in_threads(count: int, run: Any) -> float:
    """Run ``run(i)`` in ``count`` threads at once; the seconds until all finished."""
    import threading

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def fill_bytecode_cache(db: Path, env: dict[str, str]) -> None:
    """Start a server, have it retain and recall once, stop it: every module those need (the
    Memory's too: numpy, the kernel's wrapper) is then compiled in the cache the measured
    servers read, as an installed package's are (a first retain otherwise compiled numpy's
    modules, ~0.2 s that users never pay)."""
    process, port, _ = start_server(db, env)
    client = Client(f"http://127.0.0.1:{port}/banks")
    client.post("/warm/retain", {"content": "warm-up"})
    client.post("/warm/recall", {"query": "warm-up"})
    client.close()
    stop(process)


def first_retain_ms(client: Client) -> float:
    """Milliseconds of the first retain a fresh server answers (into a bank of its own)."""
    started = time.perf_counter()
    client.post("/first/retain", {"content": "the first memory this server stores"})
    return round(1000 * (time.perf_counter() - started), 1)


def single_retains(client: Client, path: str, texts: list[str]) -> float:
    started = time.perf_counter()
    for text in texts:
        client.post(path, {"content": text})
    return len(texts) / (time.perf_counter() - started)


def concurrent_retains(base: str, texts: list[str], clients: int) -> float:
    """Single retains from ``clients`` keep-alive clients at once (each its own thread and
    connection): the total rate, which group commit raises."""
    chunks = [texts[i::clients] for i in range(clients)]

    def run(i: int) -> None:
        client = Client(base)
        for text in chunks[i]:
            client.post("/concurrent/retain", {"content": text})
        client.close()

    return len(texts) / _in_threads(clients, run)


def concurrent_recalls(base: str, path: str, queries: list[str], count: int, clients: int) -> float:
    """Recalls per second from ``clients`` keep-alive clients at once, each running ``count``
    recalls (client ``i`` starts at query ``i * count``, so they do not move in step)."""

    def run(i: int) -> None:
        client = Client(base)
        for j in range(count):
            client.post(path, {"query": queries[(i * count + j) % len(queries)]})
        client.close()

    return clients * count / _in_threads(clients, run)


def wait_background(client: Client, timeout: float = 900.0) -> float:
    """Seconds until the server's background thread has nothing left to do (the HNSW graph
    of a large bank is built there after the first recall; until it is installed the dense
    stream searches exactly, and recall timings would measure the build)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        report = client.get("/health?details=1")
        if report.get("background") != "working" and not report.get("pending"):
            return time.perf_counter() - started
        time.sleep(0.5)
    raise RuntimeError("the server's background work did not finish")


def recalls_during_write(
    base: str, queries: list[str], texts: list[str], quiet_p50_ms: float
) -> dict[str, float]:
    """Recall latency (p50/p99, ms) on the bench bank while another client's one POST
    /retain_many of ``texts`` (into another bank) runs, and p99 over the quiet p50 (issue 18:
    < 10x)."""
    import threading

    done = threading.Event()

    def write() -> None:
        writer = Client(base)
        writer.post("/mixed/retain_many", {"items": texts})
        writer.close()
        done.set()

    reader = Client(base)
    thread = threading.Thread(target=write)
    thread.start()
    timings: list[float] = []
    i = 0
    while not done.is_set():
        t0 = time.perf_counter()
        reader.post("/bench/recall", {"query": queries[i % len(queries)]})
        timings.append(time.perf_counter() - t0)
        i += 1
    thread.join()
    reader.close()
    found = percentiles(timings, "recall_during_write")
    found["recalls_during_write"] = len(timings)
    found["recall_during_write_p99_vs_p50"] = round(
        found["recall_during_write_p99_ms"] / quiet_p50_ms, 2
    )
    return found


def time_recalls(
    client: Client, path: str, queries: list[str], count: int, extra: dict[str, Any]
) -> list[float]:
    for q in queries[:50]:  # warm-up: loads the bank's index, fills caches
        client.post(path, {"query": q, **extra})
    timings: list[float] = []
    for i in range(count):
        body = {"query": queries[i % len(queries)], **extra}
        t0 = time.perf_counter()
        client.post(path, body)
        timings.append(time.perf_counter() - t0)
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


def _default_peer() -> Path:
    """``shared/peers/memory-wire/memory-wire`` beside the checkout, or beside any folder above
    it (a worktree under ``wt/`` finds the same ``shared/`` as the main checkout)."""
    tail = Path("shared") / "peers" / "memory-wire" / "memory-wire"
    for folder in HERE.parents:
        if (folder / tail).exists():
            return folder / tail
    return HERE.parent.parent / tail


DEFAULT_PEER = _default_peer()


def fsync_floor_ms(folder: Path, pages: int = 9, rounds: int = 200) -> float:
    """Median ms of one durable commit's I/O on this disk, without SQLite: ``pages`` 4 KiB
    writes (about what one single retain adds to the WAL) and one ``fdatasync``, into a
    preallocated file in ``folder`` (as SQLite overwrites its WAL once it has grown). A
    client that waits for each answer cannot retain durably faster than 1000 / this per
    second, whatever the server does around it."""
    path = folder / "fsync-floor"
    page = b"x" * 4096
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, b"\0" * len(page) * pages * (rounds + 1))
        os.fsync(fd)
        timings = []
        for r in range(rounds):
            t0 = time.perf_counter()
            for i in range(pages):
                os.pwrite(fd, page, (r * pages + i) * len(page))
            os.fdatasync(fd)
            timings.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
        path.unlink()
    return round(statistics.median(timings) * 1000, 3)


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
    ap.add_argument(
        "--recall-clients", type=int, default=8, help="clients of the concurrent recall phase"
    )
    ap.add_argument(
        "--write-items",
        type=int,
        default=10_000,
        help="items of the retain_many that runs during the last recall phase",
    )
    args = ap.parse_args()

    from memwire import Memory

    env = dict(os.environ)
    # The servers read and write compiled bytecode as an installed package does (pip compiles
    # at install): with PYTHONDONTWRITEBYTECODE set (this project's environment) memwire's own
    # modules would be compiled from source at every start. The cache goes to a temporary
    # folder (never into the source tree); one start is run first to fill it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pycache = tempfile.TemporaryDirectory(prefix="mw-pycache-")
    env["PYTHONPYCACHEPREFIX"] = pycache.name
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
        fill_bytecode_cache(Path(tmp) / "warm-up.db", env)
        results["fsync_floor_ms"] = fsync_floor_ms(Path(tmp))
        results["single_retain_ceiling_per_s"] = round(1000 / results["fsync_floor_ms"], 1)
        process, port, results["first_health_s"] = start_server(db, env)
        results["first_health_cpu_s"] = round(cpu_seconds(process.pid), 3)
        time.sleep(args.idle_seconds)
        results["idle_rss_empty_mib"] = round(rss_mib(process.pid), 1)
        base = f"http://127.0.0.1:{port}/banks"
        client = Client(base)
        results["first_retain_ms"] = first_retain_ms(client)
        results["single_retains_per_s"] = round(
            single_retains(client, "/singles/retain", singles), 1
        )
        results[f"single_retains_{args.clients}_clients_per_s"] = round(
            concurrent_retains(base, [f"c {t}" for t in singles], args.clients), 1
        )
        started = time.perf_counter()
        for start in range(0, len(texts), 1000):
            client.post("/bench/retain_many", {"items": texts[start : start + 1000]})
        results["batch_memories_per_s"] = round(len(texts) / (time.perf_counter() - started))
        results["rss_after_batches_mib"] = round(rss_mib(process.pid), 1)
        client.post("/bench/recall", {"query": queries[0]})  # loads the index: starts the graph
        results["background_wait_s"] = round(wait_background(client), 1)
        timings = time_recalls(client, "/bench/recall", queries, args.requests, {})
        results.update(percentiles(timings, "recall"))
        client.close()
        one = concurrent_recalls(base, "/bench/recall", queries, args.requests, 1)
        many = concurrent_recalls(
            base, "/bench/recall", queries, args.requests, args.recall_clients
        )
        results["recall_1_client_per_s"] = round(one, 1)
        results[f"recall_{args.recall_clients}_clients_per_s"] = round(many, 1)
        results["recall_clients_speedup"] = round(many / one, 2)
        mixed = [f"m {t}" for t in texts[: args.write_items]]
        results.update(recalls_during_write(base, queries, mixed, results["recall_p50_ms"]))
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
            client = Client(base)
            peer["first_retain_ms"] = first_retain_ms(client)
            peer["single_retains_per_s"] = round(
                single_retains(client, "/singles/retain", singles), 1
            )
            peer[f"single_retains_{args.clients}_clients_per_s"] = round(
                concurrent_retains(base, [f"c {t}" for t in singles], args.clients), 1
            )
            if args.peer_recall:
                single_retains(client, "/bench/retain", texts)
                timings = time_recalls(
                    client, "/bench/recall", queries, args.requests, {"format": "full"}
                )
                peer.update(percentiles(timings, "recall"))
            client.close()
            peer["rss_mib"] = round(rss_mib(process.pid), 1)
            stop(process)
            results["memory_wire"] = peer
            results["single_retains_vs_memory_wire"] = round(
                results["single_retains_per_s"] / peer["single_retains_per_s"], 2
            )
    pycache.cleanup()
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
