"""Recall through ``memwire serve`` (issue 18): latency with one keep-alive client, and the
throughput of several clients at once against one.

``setup_cache`` builds one store per (backend, size) as :mod:`.memory` does (the corpus, default
bank config with the dense stream on, the HNSW graph awaited, closed with its snapshot). Each
benchmark process starts ``python -m memwire serve`` on its store as a user would (its own
process on a free loopback port, that backend's kernel, stopped when the process exits), waits
for its background work and sends every generic query once before timing. The client is
``benchmarks/serve_bench.py``'s plain keep-alive socket client, which costs next to nothing
beside the server.

- ``ServeRecall.time_recall``: one ``POST /banks/default/recall`` (limit 10) per sample.
- ``ServeBurst.time_recall_burst``: 64 recalls per sample, split over ``clients`` clients at
  once (each its own thread and connection): 1 against 8 clients is the speed-up issue 18 asks
  to be >= 1.7x on 2 cores.
- ``ServeRecall.track_clients_speedup``: that ratio measured in one go (256 recalls from one
  client, then the same from 8), so a run records it beside the latencies.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import _common as c
from .memory import _build

STORES = Path(tempfile.gettempdir()) / "memwire-asv-serve"
BURST = 64
SPEEDUP_RECALLS = 256
SPEEDUP_CLIENTS = 8
PARAMS = [c.BACKENDS, c.SIZES]
PARAM_NAMES = ["backend", "n"]
BURST_PARAMS = [c.BACKENDS, c.SIZES, [1, SPEEDUP_CLIENTS]]
BURST_PARAM_NAMES = ["backend", "n", "clients"]


serve_bench = c.load_bench_module("serve_bench")


def _stores(_benchmark: object) -> dict[tuple[str, int], str]:
    """The classes' shared ``setup_cache`` (one function, so asv builds the stores once)."""
    shutil.rmtree(STORES, ignore_errors=True)
    out: dict[tuple[str, int], str] = {}
    for n in c.SIZES:
        for backend in c.available_backends():
            path = STORES / f"{backend}-{n}.db"
            path.parent.mkdir(parents=True, exist_ok=True)
            _build(path, backend, n)
            out[backend, n] = str(path)
    return out


_stores.timeout = 3600  # type: ignore[attr-defined]


class _Server:
    """``memwire serve`` on one store, warmed up; one keep-alive client for latency samples."""

    def __init__(self, path: str, backend: str, n: int) -> None:
        env = dict(os.environ, MEMWIRE_BACKEND=backend)
        self.process, port, _ = serve_bench.start_server(Path(path), env)
        atexit.register(serve_bench.stop, self.process)
        self.base = f"http://127.0.0.1:{port}/banks"
        self.client = serve_bench.Client(self.base)
        serve_bench.wait_background(self.client)
        self.queries = [q.text for q in c.corpus(n).queries_of("generic")]
        for query in self.queries:
            self.recall(self.client, query)
        self._stream: Iterator[str] = itertools.cycle(self.queries)

    @staticmethod
    def recall(client: Any, query: str) -> None:
        client.post("/default/recall", {"query": query, "limit": c.K})

    def next_query(self) -> str:
        return next(self._stream)

    def recalls_per_s(self, total: int, clients: int) -> float:
        """``total`` recalls split over ``clients`` keep-alive clients at once: recalls/s."""
        per_client = total // clients

        def run(i: int) -> None:
            client = serve_bench.Client(self.base)
            for j in range(per_client):
                self.recall(client, self.queries[(i * per_client + j) % len(self.queries)])
            client.close()

        return per_client * clients / serve_bench._in_threads(clients, run)


_servers: dict[tuple[str, int], _Server] = {}


def _server(cache: dict[tuple[str, int], str], backend: str, n: int) -> _Server:
    c.kernel(backend)  # skip cleanly when the backend is not importable
    if (backend, n) not in cache:
        raise NotImplementedError(f"no store for {(backend, n)}")
    if (backend, n) not in _servers:
        _servers[backend, n] = _Server(cache[backend, n], backend, n)
    return _servers[backend, n]


class ServeRecall:
    """One recall through HTTP per sample; the clients' speed-up as a tracked number."""

    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 600
    number = 1
    repeat = (20, 300, 4.0)
    warmup_time = 0.05

    setup_cache = _stores

    def setup(self, cache: dict[tuple[str, int], str], backend: str, n: int) -> None:
        self.server = _server(cache, backend, n)

    def time_recall(self, cache: Any, backend: str, n: int) -> None:
        self.server.recall(self.server.client, self.server.next_query())

    def track_clients_speedup(self, cache: Any, backend: str, n: int) -> float:
        one = self.server.recalls_per_s(SPEEDUP_RECALLS, 1)
        many = self.server.recalls_per_s(SPEEDUP_RECALLS, SPEEDUP_CLIENTS)
        return many / one

    track_clients_speedup.unit = "x"  # type: ignore[attr-defined]


class ServeBurst:
    """64 recalls per sample from 1 or 8 clients at once."""

    params = BURST_PARAMS
    param_names = BURST_PARAM_NAMES
    timeout = 900
    number = 1
    repeat = (5, 40, 10.0)
    warmup_time = 0.0

    setup_cache = _stores

    def setup(self, cache: dict[tuple[str, int], str], backend: str, n: int, clients: int) -> None:
        self.server = _server(cache, backend, n)

    def time_recall_burst(self, cache: Any, backend: str, n: int, clients: int) -> None:
        self.server.recalls_per_s(BURST, clients)
