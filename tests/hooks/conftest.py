"""Fixtures of the hook tests: a private memwire home, the CLI as a subprocess, a real server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from hook_support import FIXTURES, Server, child_env, free_port


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
