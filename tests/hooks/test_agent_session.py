"""A scripted agent session, end to end, the way a host runs memwire after ``memwire connect``:
SessionStart, a prompt, the model's ``memory_retain`` through the real MCP server (started with
the command and arguments connect wrote), Stop, and the next session's prompt, which must show
what the model saved. For the Claude Code and the Codex payload shapes.

Nothing names the bank: the hooks and the MCP server each find it with the bank rule from the
project directory (memwire.project), and this test checks they find the same one.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import tomllib
from hook_support import child_env

pytest.importorskip("mcp")
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memwire.connect import connect
from memwire.memory import Memory

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FACT = "The deploy key rotates every Friday: run ops/rotate-key.sh from the bastion host."
QUESTION = "How do I rotate the deploy key?"
SESSIONS = {
    "claude": ("claude-session-1", "claude-session-2"),
    "codex": ("019d036d-c7fa-72d2-b6fd-78878bfe34e4", "019d036d-c7fa-72d2-b6fd-78878bfe34e5"),
}


def _wired(host: str, home: Path) -> tuple[dict[str, str], list[str]]:
    """What connect wrote for ``host``: the hook command per memwire event, and the MCP
    server's command line."""
    if host == "claude":
        settings = json.loads((home / ".claude" / "settings.json").read_text())
        server = json.loads((home / ".claude.json").read_text())["mcpServers"]["memwire"]
    else:
        settings = json.loads((home / ".codex" / "hooks.json").read_text())
        config = tomllib.loads((home / ".codex" / "config.toml").read_text())
        server = config["mcp_servers"]["memwire"]
    hooks: dict[str, str] = {}
    for groups in settings["hooks"].values():
        for group in groups:
            for item in group["hooks"]:
                words = shlex.split(item["command"])
                hooks[words[words.index("hook") + 1]] = item["command"]
    return hooks, [server["command"], *server["args"]]


def _payload(host: str, event: str, session: str, cwd: Path, transcript: Path, **extra: Any) -> str:
    """The JSON the host sends at ``event`` (the recorded shapes of tests/hooks/fixtures)."""
    names = {
        "session-start": "SessionStart",
        "prompt": "UserPromptSubmit",
        "stop": "Stop",
    }
    data: dict[str, Any] = {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": str(cwd),
        "hook_event_name": names[event],
    }
    if host == "claude":
        data["permission_mode"] = "default"
        if event == "session-start":
            data["source"] = "startup"
    else:
        data["turn_id"] = session[:-1] + "0"
        data["model"] = "gpt-5-codex"
    data.update(extra)
    return json.dumps(data)


def _run_hook(command: str, stdin: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(
        shlex.split(command),
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    return done.stdout


def _context(stdout: str) -> str:
    if not stdout.strip():
        return ""
    text: str = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return text


def _model_retains(server: list[str], env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """The model calls memory_retain with no bank, through the MCP server the host starts."""
    params = StdioServerParameters(command=server[0], args=server[1:], env=env, cwd=str(cwd))

    async def main() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            result = await client.call_tool("memory_retain", {"content": FACT})
            assert not result.is_error, result.content
            found: dict[str, Any] = json.loads(result.content[0].text)
            return found

    result: dict[str, Any] = anyio.run(main)
    return result


@pytest.mark.parametrize("host", ["claude", "codex"])
def test_what_the_model_saves_is_injected_next_session(
    host: str, tmp_path: Path, repo: Path, home: Path
) -> None:
    user_home = tmp_path / "user-home"
    (user_home / f".{host}").mkdir(parents=True)
    env = child_env(home, HOME=str(user_home), CODEX_HOME=str(user_home / ".codex"))
    env.pop("MEMWIRE_URL", None)  # as on a user's machine: no server runs, the hooks open the store
    reports = connect([host], home=user_home, base=[sys.executable, "-m", "memwire"])
    assert [r.state for r in reports] == ["wired"]
    hooks, server = _wired(host, user_home)
    first, second = SESSIONS[host]
    rollout = tmp_path / "transcript.jsonl"
    fixture = "claude_transcript.jsonl" if host == "claude" else "codex_rollout.jsonl"
    rollout.write_text((FIXTURES / fixture).read_text())

    # session 1: start, a prompt with nothing to recall yet, the model saves a fact, stop
    start = _run_hook(
        hooks["session-start"], _payload(host, "session-start", first, repo, rollout), env, repo
    )
    assert "rotate-key" not in start
    asked = _payload(host, "prompt", first, repo, rollout, prompt="Set up the deploy key rotation.")
    assert FACT not in _context(_run_hook(hooks["prompt"], asked, env, repo))
    saved = _model_retains(server, env, repo)
    _run_hook(hooks["stop"], _payload(host, "stop", first, repo, rollout), env, repo)

    # the model's memory and the captured transcript are in the project's bank
    with Memory(home / "memory.db") as memory:
        assert memory.get(saved["id"]).bank == "acme/web"
        tags = [r.tags for r in memory.memories(bank="acme/web", limit=100)]
        assert any("transcript" in t for t in tags)
        assert memory.banks() == ["acme/web"]

    # session 2: the next prompt gets what the model saved in session 1
    asked = _payload(host, "prompt", second, repo, rollout, prompt=QUESTION)
    block = _context(_run_hook(hooks["prompt"], asked, env, repo))
    assert block.startswith('<memwire-recall bank="acme/web" source="prompt">')
    assert "ops/rotate-key.sh from the bastion host" in block
    assert saved["id"] in block
    # and a new session starts with it among the project's recent memories
    start = _run_hook(
        hooks["session-start"], _payload(host, "session-start", second, repo, rollout), env, repo
    )
    assert saved["id"] in _context(start)
