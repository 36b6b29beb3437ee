"""Fixtures of the hook tests: a private memwire home, the CLI as a subprocess, a real server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import memwire
import pytest

# Children import the very memwire this test process imported (the installed package in
# CI, the source tree in an editable install), never the source tree behind its back.
PYTHON_DIR = Path(memwire.__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def child_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")) if p
    )
    env["MEMWIRE_HOME"] = str(home)
    env["MEMWIRE_BACKEND"] = os.environ.get("MEMWIRE_BACKEND", "python")
    env.update(extra)
    return env


def payload(name: str, **values: str) -> str:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{" + key + "}", json.dumps(value)[1:-1])
    return text


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private memwire home for this test; in-process use (no server probing)."""
    path = tmp_path / "memwire-home"
    path.mkdir()
    for key in list(os.environ):
        if key.startswith("MEMWIRE_") and key != "MEMWIRE_BACKEND":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMWIRE_HOME", str(path))
    monkeypatch.setenv("MEMWIRE_URL", "off")
    from memwire.hooks import _log

    monkeypatch.setattr(_log, "_configured", False)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A directory that looks like a clone of github.com/acme/web (git metadata only)."""
    root = tmp_path / "web"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "config").write_text(
        '[core]\n\tbare = false\n[remote "origin"]\n\turl = git@github.com:acme/web.git\n'
        "\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        encoding="utf-8",
    )
    return root


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    target = tmp_path / "transcript.jsonl"
    target.write_text((FIXTURES / "claude_transcript.jsonl").read_text(encoding="utf-8"))
    return target


def run_hook_cli(
    args: list[str], stdin: str, env: dict[str, str], timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memwire", "hook", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


class Server:
    def __init__(self, url: str, process: subprocess.Popen[bytes], db: Path) -> None:
        self.url = url
        self.process = process
        self.db = db

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=5) as response:
            return json.loads(response.read())

    def post(self, path: str, body: Any) -> Any:
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.loads(response.read())


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """The real memwire server on a free loopback port, on its own store file."""
    pytest.importorskip("uvicorn")
    port = free_port()
    db = tmp_path / "server.db"
    env = child_env(tmp_path / "server-home")
    process = subprocess.Popen(
        [sys.executable, "-m", "memwire", "serve", "--port", str(port), "--db", str(db)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            # /health answers before the server has built its Memory (issue 18); /banks
            # answers once it has, so the hooks' time budgets meet a ready server.
            with urllib.request.urlopen(url + "/banks", timeout=30) as response:
                if response.status == 200:
                    break
        except OSError:
            time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("the server did not start")
    try:
        yield Server(url, process, db)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
