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


def memwire(home: Path, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    if "MEMWIRE_BACKEND" in os.environ:
        env["MEMWIRE_BACKEND"] = os.environ["MEMWIRE_BACKEND"]
    env.update(MEMWIRE_HOME=str(home), **extra)
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
    assert "exited" in started.stderr and "is the port in use?" in started.stderr
    assert "serving" not in started.stdout
    assert not (home / "server.pid").exists()


def test_start_refuses_public_bind_without_token(tmp_path: Path) -> None:
    env_free = memwire(tmp_path, "daemon", "start", "--host", "0.0.0.0")
    assert env_free.returncode == 2 and "token" in env_free.stderr


def _stop(*homes: Path) -> None:
    for home in homes:
        memwire(home, "daemon", "stop")


def test_start_never_takes_another_server_for_its_own(tmp_path: Path) -> None:
    """Another home's daemon on the port asked for, and this home's daemon on another port:
    start fails and says which server is there, instead of claiming to serve."""
    first, second = tmp_path / "first", tmp_path / "second"
    port, other_port = str(free_port()), str(free_port())
    started = memwire(first, "daemon", "start", "--port", port, "--json")
    try:
        assert started.returncode == 0, started.stderr
        pid = json.loads(started.stdout)["pid"]
        taken = memwire(second, "daemon", "start", "--port", port)
        assert taken.returncode == 1 and taken.stdout == ""
        assert f"another memwire server (pid {pid}) already answers" in taken.stderr
        assert not (second / "server.pid").exists()
        elsewhere = memwire(first, "daemon", "start", "--port", other_port)
        assert elsewhere.returncode == 1 and "already serving" not in elsewhere.stdout
        assert f"daemon (pid {pid}) already serves" in elsewhere.stderr
        assert "another address" in elsewhere.stderr
        other_store = memwire(
            first, "daemon", "start", "--port", port, "--db", str(tmp_path / "x.db")
        )
        assert other_store.returncode == 1 and "another store" in other_store.stderr
    finally:
        _stop(first, second)


def test_status_and_doctor_show_a_token_the_hooks_do_not_send(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = str(free_port())
    token = "a-long-enough-test-token-0123456789"
    started = memwire(home, "daemon", "start", "--port", port, MEMWIRE_TOKEN=token)
    try:
        assert started.returncode == 0, started.stderr
        status = memwire(home, "daemon", "status")
        assert status.returncode == 5
        assert "answers the hooks 401" in status.stdout and "MEMWIRE_TOKEN" in status.stdout
        doctor = memwire(home, "doctor")
        assert doctor.returncode == 5 and "[FAIL] server for hooks" in doctor.stdout
        fine = memwire(home, "daemon", "status", "--json", MEMWIRE_TOKEN=token)
        assert fine.returncode == 0, fine.stdout
        views = json.loads(fine.stdout)["hooks"]
        assert [v["status"] for v in views] == ["ok", "ok"]
        wrong = memwire(home, "daemon", "status", MEMWIRE_TOKEN=token[::-1])
        assert wrong.returncode == 5 and "does not accept" in wrong.stdout
    finally:
        _stop(home)


def test_status_says_when_the_daemon_serves_another_store(tmp_path: Path) -> None:
    home = tmp_path / "home"
    port = str(free_port())
    started = memwire(home, "daemon", "start", "--port", port, "--db", str(tmp_path / "other.db"))
    try:
        assert started.returncode == 0, started.stderr
        status = memwire(home, "daemon", "status")
        assert status.returncode == 0
        assert "serves another store than the hooks'" in status.stdout
        assert str(home / "memory.db") in status.stdout
    finally:
        _stop(home)


def test_doctor_on_a_fresh_home_says_the_store_will_be_created(tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWIRE_", "XDG_"))}
    if "MEMWIRE_BACKEND" in os.environ:
        env["MEMWIRE_BACKEND"] = os.environ["MEMWIRE_BACKEND"]
    env["HOME"] = str(fresh)
    done = subprocess.run(
        [sys.executable, "-m", "memwire", "doctor", "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and "FAIL" not in done.stdout, done.stdout
    assert "will be created" in done.stdout
    assert str(fresh / ".local" / "share" / "memwire" / "memory.db") in done.stdout
    assert not (fresh / ".local").exists()  # doctor only looks
