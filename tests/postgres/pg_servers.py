"""memwire servers over one PostgreSQL database, as child processes (tests/postgres/)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
