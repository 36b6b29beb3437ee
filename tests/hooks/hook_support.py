"""Helpers of the hook tests (the fixtures are in conftest.py): a private memwire home for
child processes, the hook CLI as a subprocess, payload fixtures, a real server's client."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import memwire

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
    # No wall-clock budget in tests: a loaded machine must not turn a slow hook into an empty
    # answer (tests of the budget itself set it to 1 ms).
    env["MEMWIRE_HOOK_BUDGET_MS"] = "600000"
    env.update(extra)
    return env


def payload(name: str, **values: str) -> str:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    for key, value in values.items():
        text = text.replace("{" + key + "}", json.dumps(value)[1:-1])
    return text


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
