"""``memwire connect`` against temporary HOME directories: missing, existing and malformed
configs; idempotence, backups, --list, --uninstall, --skill, foreign entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import memwire
import pytest

# Children import the very memwire this test process imported (the installed package in
# CI, the source tree in an editable install), never the source tree behind its back.
PYTHON_DIR = Path(memwire.__file__).resolve().parent.parent

from memwire.connect import connect, list_hosts  # noqa: E402
from memwire.connect._files import toml_parse  # noqa: E402

BASE = ["/opt/memwire/bin/memwire"]


@pytest.fixture(autouse=True)
def _no_codex_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWIRE_", "CODEX_HOME"))}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p
    )
    env["HOME"] = str(home)
    env["MEMWIRE_HOME"] = str(home / ".memwire")
    return subprocess.run(
        [sys.executable, "-m", "memwire", "connect", "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


def _backups(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*.memwire-backup-*"))


def _snapshot(home: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file()
    }


def test_missing_configs_are_created(tmp_path: Path) -> None:
    reports = connect(["claude", "codex", "cursor", "gemini"], home=tmp_path, base=BASE)
    assert [r.state for r in reports] == ["wired"] * 4 and not any(r.error for r in reports)
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    hook = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]
    assert hook == {
        "type": "command",
        "command": f"{BASE[0]} hook prompt --host claude",
        "timeout": 5,
    }
    assert json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["memwire"] == {
        "type": "stdio",
        "command": BASE[0],
        "args": ["mcp"],
    }
    codex = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    assert set(codex["hooks"]) == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact"}
    parsed = toml_parse((tmp_path / ".codex" / "config.toml").read_text())
    assert parsed == {"mcp_servers": {"memwire": {"command": BASE[0], "args": ["mcp"]}}}
    cursor = json.loads((tmp_path / ".cursor" / "hooks.json").read_text())
    assert cursor["version"] == 1
    assert cursor["hooks"]["beforeSubmitPrompt"] == [
        {"command": f"{BASE[0]} hook prompt --host cursor"}
    ]
    assert json.loads((tmp_path / ".cursor" / "mcp.json").read_text())["mcpServers"]["memwire"]
    gemini = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert gemini["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"] == 5000
    assert gemini["mcpServers"]["memwire"]["args"] == ["mcp"]
    assert _backups(tmp_path) == []  # nothing existed, so nothing to back up


def test_existing_configs_keep_their_entries_and_are_backed_up(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    original = {
        "theme": "dark",
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint"}]}],
        },
    }
    (claude / "settings.json").write_text(json.dumps(original))
    (tmp_path / ".claude.json").write_text(
        json.dumps({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}})
    )
    codex = tmp_path / ".codex"
    codex.mkdir()
    (codex / "config.toml").write_text('model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs"\n')
    (report,) = connect(["claude"], home=tmp_path, base=BASE)
    assert report.state == "wired" and len(report.backups) == 2
    settings = json.loads((claude / "settings.json").read_text())
    assert settings["theme"] == "dark"
    assert settings["hooks"]["PreToolUse"] == original["hooks"]["PreToolUse"]
    assert settings["hooks"]["Stop"][0] == original["hooks"]["Stop"][0]
    assert len(settings["hooks"]["Stop"]) == 2
    state = json.loads((tmp_path / ".claude.json").read_text())
    assert state["numStartups"] == 3 and set(state["mcpServers"]) == {"other", "memwire"}
    backup = next(p for p in _backups(claude))
    assert json.loads(backup.read_text()) == original
    (report,) = connect(["codex"], home=tmp_path, base=BASE)
    parsed = toml_parse((codex / "config.toml").read_text())
    assert parsed is not None
    assert parsed["model"] == "o3" and set(parsed["mcp_servers"]) == {"docs", "memwire"}


def test_idempotent(tmp_path: Path) -> None:
    connect(["claude", "codex", "cursor", "gemini"], home=tmp_path, base=BASE, skill=True)
    before = _snapshot(tmp_path)
    reports = connect(["claude", "codex", "cursor", "gemini"], home=tmp_path, base=BASE, skill=True)
    assert all(r.changed == [] and r.backups == [] for r in reports)
    assert _snapshot(tmp_path) == before


def test_a_new_executable_path_replaces_our_entries_only(tmp_path: Path) -> None:
    connect(["claude"], home=tmp_path, base=BASE)
    connect(["claude"], home=tmp_path, base=["/usr/bin/python3", "-m", "memwire"])
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    commands = [h["command"] for g in settings["hooks"]["UserPromptSubmit"] for h in g["hooks"]]
    assert commands == ["/usr/bin/python3 -m memwire hook prompt --host claude"]
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["memwire"]
    assert server["command"] == "/usr/bin/python3" and server["args"] == ["-m", "memwire", "mcp"]


@pytest.mark.parametrize(
    ("host", "relative", "content"),
    [
        ("claude", ".claude/settings.json", '{"hooks": {'),
        ("claude", ".claude.json", "[1, 2]"),
        ("claude", ".claude/settings.json", '{"hooks": []}'),
        ("codex", ".codex/config.toml", "model = \n[broken"),
        ("codex", ".codex/hooks.json", "{not json}"),
        ("cursor", ".cursor/mcp.json", '{"mcpServers": "nope"}'),
        ("gemini", ".gemini/settings.json", "// comment\n{}"),
    ],
)
def test_malformed_config_is_refused_untouched(
    tmp_path: Path, host: str, relative: str, content: str
) -> None:
    target = tmp_path / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)
    before = _snapshot(tmp_path)
    done = _cli(tmp_path, host)
    assert done.returncode == 1
    assert "nothing was changed" in done.stdout
    assert _snapshot(tmp_path) == before


def test_foreign_memwire_mcp_entry_is_left_alone(tmp_path: Path) -> None:
    cursor = tmp_path / ".cursor"
    cursor.mkdir()
    foreign = {"mcpServers": {"memwire": {"url": "https://memory.example.com/mcp"}}}
    (cursor / "mcp.json").write_text(json.dumps(foreign))
    (report,) = connect(["cursor"], home=tmp_path, base=BASE)
    assert report.mcp == "foreign" and report.state == "partial"
    assert json.loads((cursor / "mcp.json").read_text()) == foreign
    connect(["cursor"], home=tmp_path, uninstall=True)
    assert json.loads((cursor / "mcp.json").read_text()) == foreign
    codex = tmp_path / ".codex"
    codex.mkdir()
    text = '[mcp_servers.memwire]\nurl = "https://memory.example.com/mcp"\n'
    (codex / "config.toml").write_text(text)
    (report,) = connect(["codex"], home=tmp_path, base=BASE)
    assert report.mcp == "foreign" and (codex / "config.toml").read_text() == text


def test_list_reports_and_never_writes(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    connect(["claude"], home=tmp_path, base=BASE)
    settings = tmp_path / ".claude" / "settings.json"
    data = json.loads(settings.read_text())
    del data["hooks"]["Stop"]
    settings.write_text(json.dumps(data))
    before = _snapshot(tmp_path)
    states = {r.host: r.state for r in list_hosts(home=tmp_path)}
    assert states == {
        "claude": "partial",
        "codex": "present",
        "cursor": "absent",
        "gemini": "absent",
    }
    done = _cli(tmp_path, "--list", "--json")
    assert done.returncode == 0
    assert {r["host"]: r["state"] for r in json.loads(done.stdout)} == states
    assert _snapshot(tmp_path) == before


def test_no_host_named_wires_the_hosts_found(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    done = _cli(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".codex" / "hooks.json").exists()
    assert not (tmp_path / ".claude").exists() and not (tmp_path / ".cursor").exists()
    assert _cli(tmp_path, "nosuchhost").returncode == 2


def test_uninstall_removes_only_ours(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    (claude / "settings.json").write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}})
    )
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "o3"\n')
    connect(["claude", "codex"], home=tmp_path, base=BASE, skill=True)
    assert (claude / "skills" / "memwire" / "SKILL.md").is_file()
    reports = connect(["claude", "codex"], home=tmp_path, uninstall=True)
    assert [r.state for r in reports] == ["present", "present"]
    settings = json.loads((claude / "settings.json").read_text())
    assert settings == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }
    assert json.loads((tmp_path / ".claude.json").read_text()) == {}
    assert (tmp_path / ".codex" / "config.toml").read_text() == 'model = "o3"\n'
    assert not (claude / "skills" / "memwire").exists()
    # uninstalling what is not there creates nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    connect(["claude", "cursor"], home=empty, uninstall=True)
    assert list(empty.rglob("*")) == []


def test_skill_file_is_packaged_and_copied(tmp_path: Path) -> None:
    import memwire

    shipped = Path(memwire.__file__).parent / "skill" / "SKILL.md"
    text = shipped.read_text()
    assert text.startswith("---\nname: memwire\ndescription: ")
    for heading in ("## When to retain", "## When to recall", "## Budget", "## Errors that matter"):
        assert heading in text
    done = _cli(tmp_path, "claude", "--skill")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".claude" / "skills" / "memwire" / "SKILL.md").read_text() == text


def test_codex_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    custom = tmp_path / "custom-codex"
    monkeypatch.setenv("CODEX_HOME", str(custom))
    connect(["codex"], home=tmp_path, base=BASE)
    assert (custom / "hooks.json").is_file() and not (tmp_path / ".codex").exists()


def test_cli_prints_next_steps_and_says_removed_on_uninstall(tmp_path: Path) -> None:
    wired = _cli(tmp_path, "claude", "codex", "--skill")
    assert wired.returncode == 0, wired.stderr
    assert "next:" in wired.stdout
    assert "Claude Code: restart Claude Code" in wired.stdout
    assert "Codex: restart Codex and trust memwire's hooks" in wired.stdout
    assert "memwire doctor" in wired.stdout
    again = _cli(tmp_path, "claude", "--uninstall")
    assert again.returncode == 0, again.stderr
    assert "wrote" not in again.stdout and "next:" not in again.stdout
    settings = tmp_path / ".claude" / "settings.json"
    assert f"removed memwire's entries from {settings}" in again.stdout
    skill = tmp_path / ".claude" / "skills" / "memwire" / "SKILL.md"
    assert f"removed {skill}" in again.stdout and not skill.exists()


def test_pins_go_into_every_hook_and_the_mcp_entry(tmp_path: Path) -> None:
    db = tmp_path / "stores" / "work.db"
    reports = connect(["claude", "codex"], home=tmp_path, base=BASE, bank="team/shared", db=str(db))
    assert [r.state for r in reports] == ["wired", "wired"]
    pins = ["--bank", "team/shared", "--db", str(db.resolve())]
    settings = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    for groups in settings["hooks"].values():
        command = groups[0]["hooks"][0]["command"]
        assert command.endswith(" --bank team/shared --db " + str(db.resolve())), command
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["memwire"]
    assert server["args"] == ["mcp", *pins]
    config = toml_parse((tmp_path / ".codex" / "config.toml").read_text())
    assert config is not None and config["mcp_servers"]["memwire"]["args"] == ["mcp", *pins]
    # unpinned again: the same entries are replaced, not added
    connect(["claude"], home=tmp_path, base=BASE)
    server = json.loads((tmp_path / ".claude.json").read_text())["mcpServers"]["memwire"]
    assert server["args"] == ["mcp"]
    hooks = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]
    assert all(len(groups) == 1 for groups in hooks.values())
    assert "--bank" not in json.dumps(hooks)
