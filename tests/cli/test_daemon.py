"""`memwire daemon start|stop|status`: a detached server that start proves is answering."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX daemon")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def memwire(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMWIRE_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "memwire", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_start_status_stop(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = str(free_port())
    status = memwire(home, "daemon", "status")
    assert status.returncode == 4 and "not running" in status.stdout

    started = memwire(home, "daemon", "start", "--port", port, "--json")
    try:
        assert started.returncode == 0, started.stderr
        info = json.loads(started.stdout)
        assert info["state"] == "serving" and info["url"].endswith(port)
        pid = info["pid"]
        assert (home / "server.pid").exists()

        import httpx

        assert httpx.get(f"http://127.0.0.1:{port}/health").text == "ok"
        status = memwire(home, "daemon", "status", "--json")
        assert status.returncode == 0 and json.loads(status.stdout)["state"] == "serving"
        again = memwire(home, "daemon", "start", "--port", port)
        assert again.returncode == 0 and "already serving" in again.stdout

        # alive but not answering: freeze the process
        os.kill(pid, signal.SIGSTOP)
        try:
            frozen = memwire(home, "daemon", "status")
            assert frozen.returncode == 5 and "alive" in frozen.stdout
        finally:
            os.kill(pid, signal.SIGCONT)

        stopped = memwire(home, "daemon", "stop")
        assert stopped.returncode == 0 and "stopped" in stopped.stdout
    finally:
        memwire(home, "daemon", "stop")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    status = memwire(home, "daemon", "status")
    assert status.returncode == 4
    assert not (home / "server.pid").exists()
    assert memwire(home, "daemon", "stop").returncode == 0  # idempotent
    assert "stopped; the store is closed" in (home / "server.log").read_text()


def test_stale_pid_file_is_not_running(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "server.pid").write_text(
        json.dumps({"pid": 2**22 + 12345, "host": "127.0.0.1", "port": 1})
    )
    status = memwire(home, "daemon", "status")
    assert status.returncode == 4 and "stale" in status.stdout


def test_start_reports_a_server_that_cannot_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
        started = memwire(home, "daemon", "start", "--port", port)
    assert started.returncode == 1
    assert "exited" in started.stderr
    assert not (home / "server.pid").exists()


def test_start_refuses_public_bind_without_token(tmp_path: Path) -> None:
    env_free = memwire(tmp_path, "daemon", "start", "--host", "0.0.0.0")
    assert env_free.returncode == 2 and "token" in env_free.stderr
