"""`python -m memwire serve` as a process: starts, serves, stops cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from memwire.memory import Memory

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(
    db: Path, port: int, *extra: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    command = [
        sys.executable,
        "-m",
        "memwire",
        "serve",
        "--port",
        str(port),
        "--db",
        str(db),
        *extra,
    ]
    return subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env or dict(os.environ),
    )


def wait_healthy(process: subprocess.Popen[str], port: int, timeout: float = 60) -> None:
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


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_gracefully_and_closes_the_store(tmp_path: Path, sig: int) -> None:
    db = tmp_path / "memory.db"
    port = free_port()
    process = start(db, port)
    try:
        wait_healthy(process, port)
        r = httpx.post(f"http://127.0.0.1:{port}/banks/a/retain", json={"content": "kept"})
        memory_id = r.json()["id"]
        process.send_signal(sig)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert out == ""  # the server writes nothing on stdout
    assert "stopped" in err and "Traceback" not in err
    with Memory(db) as memory:
        assert memory.get(memory_id, bank="a").content == "kept"


def test_python_m_memwire_serve_uses_the_default_store(tmp_path: Path) -> None:
    env = dict(os.environ, MEMWIRE_HOME=str(tmp_path / "home"))
    port = free_port()
    command = [sys.executable, "-m", "memwire", "serve", "--port", str(port)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        wait_healthy(process, port)
        httpx.post(f"http://127.0.0.1:{port}/banks/a/retain", json={"content": "hello"})
        process.terminate()
        process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert (tmp_path / "home" / "memory.db").exists()


def test_port_in_use_fails_with_exit_1(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        process = start(tmp_path / "m.db", port)
        _out, err = process.communicate(timeout=60)
    assert process.returncode == 1
    assert "could not listen" in err
