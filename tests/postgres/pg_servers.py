"""memwire servers over one PostgreSQL database, as child processes (tests/postgres/)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import httpx
from postgres_support import connect, fresh_schema, postgres_url


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def schema_url(url: str, schema: str) -> str:
    """``url`` with its connections' search_path set to ``schema`` (libpq's ``options``)."""
    return f"{url}{'&' if '?' in url else '?'}options=-csearch_path%3D{schema}"


def scratch_url() -> str:
    """The URL of a new, empty schema of the test database (created here)."""
    schema = fresh_schema()
    with connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    return schema_url(postgres_url(), schema)


def child_env(**extra: str) -> dict[str, str]:
    """The children pick their own kernel (tests/conftest.py poisons MEMWIRE_BACKEND)."""
    env = {k: v for k, v in os.environ.items() if k != "MEMWIRE_BACKEND"}
    env.update(extra)
    return env


def start_server(store_url: str, port: int, *, via_env: bool = True) -> subprocess.Popen[str]:
    """``memwire serve`` on ``store_url``: through ``MEMWIRE_STORE`` (the URL holds a password,
    which a command line would show to every user of the machine) or ``--store``."""
    command = [sys.executable, "-m", "memwire", "serve", "--port", str(port)]
    env = child_env(MEMWIRE_STORE=store_url) if via_env else child_env()
    if not via_env:
        command += ["--store", store_url]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def wait_healthy(process: subprocess.Popen[str], port: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"server exited early: {process.communicate()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).text == "ok":
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    process.kill()
    raise AssertionError("server did not answer /health")


def stop(process: subprocess.Popen[str]) -> str:
    """Stop a server (SIGTERM, then SIGKILL); its stderr."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
    _, err = process.communicate()
    return err


@contextmanager
def servers(store_url: str, count: int) -> Iterator[list[int]]:
    """``count`` servers on one store, the last started with ``--store``; their ports."""
    ports = [free_port() for _ in range(count)]
    processes = [
        start_server(store_url, port, via_env=n < count - 1) for n, port in enumerate(ports)
    ]
    try:
        for process, port in zip(processes, ports, strict=True):
            wait_healthy(process, port)
        yield ports
    finally:
        for process in processes:
            stop(process)


class Proxy:
    """A TCP relay in front of the database that the test can cut and restore: the database
    seen as unreachable (connections dropped, new ones refused) without stopping the server
    that other tests share."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.resume()

    def url(self, url: str) -> str:
        """``url`` pointed at the proxy instead of the database."""
        parts = urlsplit(url)
        host = f"{parts.username}:{parts.password}@127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=host))

    def resume(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        """Close the listener and every relayed connection."""
        with self._lock:
            listener, self._listener = self._listener, None
            sockets, self._sockets = self._sockets, []
        for s in ([listener] if listener else []) + sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)


def proxied(url: str) -> Proxy:
    parts = urlsplit(url)
    return Proxy((parts.hostname or "127.0.0.1", parts.port or 5432))
