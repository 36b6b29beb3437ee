"""A newcomer's path through the README, run as written in a scratch HOME: serve (the first
command), the curl quick start, the web page and ``/docs``, the MCP quick start (its curl call,
``memwire connect`` into the scratch HOME, ``memwire daemon start``), then one scripted agent
session through what connect wired: the model's ``memory_retain`` via the MCP server, and the
next prompt's hook injecting it.

The README's first command is ``pip install . && python -m memwire serve``. The install is not
repeated here: ``make test`` (the second command, which CI runs) has just built this checkout
and installed it, not editable, into the test virtualenv this test runs in, so its
``python -m memwire`` and its ``memwire`` executable *are* a fresh install of this source.
Building it a second time into another virtualenv would add minutes of Rust and C++ and test
nothing more. The port 8888 of the README becomes a free port (CI machines are shared).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

pytestmark = pytest.mark.backend_chosen

README = Path(__file__).resolve().parent.parent / "README.md"
BIN = Path(sys.executable).parent  # the virtualenv's bin: where `memwire` was installed


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _bash_blocks(title: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", _section(title), re.S)


def _commands(block: str) -> list[str]:
    """The commands of a bash block (continuation lines joined)."""
    return [c.strip() for c in block.replace("\\\n", " ").splitlines() if c.strip()]


@pytest.fixture
def newcomer(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A scratch HOME with nothing in it, and a project checked out from github.com/acme/web."""
    home = tmp_path / "home"
    home.mkdir()
    project = home / "src" / "web"
    (project / ".git").mkdir(parents=True)
    (project / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = https://github.com/acme/web.git\n', encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWIRE_", "XDG_"))}
    if "MEMWIRE_BACKEND" in os.environ:
        env["MEMWIRE_BACKEND"] = os.environ["MEMWIRE_BACKEND"]
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([str(BIN), env.get("PATH", "/usr/bin:/bin")]),
        CODEX_HOME=str(home / ".codex"),
        MEMWIRE_HOOK_BUDGET_MS="600000",  # no wall-clock budget in tests
    )
    env["PROJECT"] = str(project)
    yield env


def _run(command: str, env: dict[str, str], cwd: str, stdin: str = "") -> str:
    done = subprocess.run(
        ["bash", "-c", command],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, (command, done.stdout, done.stderr)
    return done.stdout


def _json_values(text: str) -> list[Any]:
    """The JSON documents curl printed one after another (no newline between them)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return values


def _get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get("content-type", ""), response.read().decode()


def test_readme_path_from_serve_to_an_injected_memory(newcomer: dict[str, str]) -> None:
    env, project = newcomer, newcomer["PROJECT"]
    port = str(_free_port())
    first = _commands(_bash_blocks("Two commands")[0])
    assert first == ["pip install . && python -m memwire serve"]
    serve = first[0].split("&& ", 1)[1].replace("python", shlex.quote(sys.executable), 1)
    server = subprocess.Popen(
        ["bash", "-c", f"exec {serve} --port {port}"],
        env=env,
        cwd=env["HOME"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):
            try:
                if _get(url + "/health")[2] == "ok":
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the server of the README's first command did not answer")

        # the curl quick start, as written (on our port)
        block = _bash_blocks("Quick start: curl")[0].replace("8888", port)
        answers = _json_values(_run(block, env, env["HOME"]))
        assert answers[0]["id"].startswith("mem_")
        assert answers[1] == ["The API listens on port 8080"]
        status, kind, _ = _get(url + "/")
        assert status == 200 and kind.startswith("text/html")
        status, _, body = _get(url + "/docs")
        assert status == 200 and json.loads(body)["openapi"] == "/openapi.json"

        # the MCP quick start: connect and the daemon, then its curl call
        wire, daemon = _commands(_bash_blocks("Quick start: MCP")[0])
        assert wire == "memwire connect claude codex --skill"
        assert daemon == "memwire daemon start"
        out = _run(wire, env, project)
        assert "Claude Code: restart Claude Code" in out and "next:" in out
        # the server above already serves this HOME's store: the daemon says so, starts nothing
        out = _run(f"{daemon} --port {port}", env, project)
        assert "already served by pid" in out
        call = _bash_blocks("Quick start: MCP")[1].replace("8888", port)
        answer = json.loads(_run(call, env, env["HOME"]))
        hits = answer["result"]["structuredContent"]["memories"]
        assert hits[0]["content"] == "The API listens on port 8080"

        # one scripted session through what connect wired
        settings = json.loads((Path(env["HOME"]) / ".claude" / "settings.json").read_text())
        prompt_hook = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        entry = json.loads((Path(env["HOME"]) / ".claude.json").read_text())
        server_cmd = entry["mcpServers"]["memwire"]
        params = StdioServerParameters(
            command=server_cmd["command"], args=server_cmd["args"], env=env, cwd=project
        )

        async def model_retains() -> str:
            async with Client(params, mode="legacy") as client:
                result = await client.call_tool(
                    "memory_retain", {"content": "Releases are cut from the release/* branches."}
                )
                assert not result.is_error, result.content
                saved: str = json.loads(result.content[0].text)["id"]
                return saved

        saved = anyio.run(model_retains)
        payload = json.dumps(
            {
                "session_id": "newcomer-2",
                "cwd": project,
                "hook_event_name": "UserPromptSubmit",
                "prompt": "Which branches are releases cut from?",
            }
        )
        out = _run(prompt_hook, env, project, stdin=payload)
        block = json.loads(out)["hookSpecificOutput"]["additionalContext"]
        assert 'bank="acme/web"' in block and saved in block
    finally:
        server.terminate()
        server.wait(30)
