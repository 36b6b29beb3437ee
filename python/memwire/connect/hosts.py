"""The agent hosts ``memwire connect`` knows: where their configs live and what goes in them.

Each format below was checked against the host's public documentation (URLs beside each host);
docs/hosts.md says what each host can and cannot do with memwire.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HOSTS", "HookSpec", "Host", "host_names"]


@dataclass(frozen=True)
class HookSpec:
    """One hook entry: the host's event name, memwire's event, and a timeout in seconds."""

    host_event: str
    event: str
    timeout: int


@dataclass(frozen=True)
class Host:
    name: str
    label: str
    dir_name: str  # under HOME, unless env_dir is set in the environment
    env_dir: str | None
    hooks_file: str  # relative to the host dir
    hooks_style: str  # "nested" (event -> [{matcher?, hooks: [...]}]), "flat" (Cursor)
    timeout_unit: str  # "s" or "ms" (or "" for none)
    hooks: tuple[HookSpec, ...]
    mcp_file: str  # relative to HOME when it starts with "~/", else to the host dir
    mcp_style: str  # "json" (mcpServers object) or "toml" ([mcp_servers.memwire])
    mcp_stdio_type: bool  # write "type": "stdio" in the MCP entry
    skills_dir: str  # relative to the host dir
    docs: tuple[str, ...]

    def root(self, home: Path) -> Path:
        if self.env_dir:
            value = os.environ.get(self.env_dir, "").strip()
            if value:
                return Path(value).expanduser()
        return home / self.dir_name

    def hooks_path(self, home: Path) -> Path:
        return self.root(home) / self.hooks_file

    def mcp_path(self, home: Path) -> Path:
        if self.mcp_file.startswith("~/"):
            return home / self.mcp_file[2:]
        return self.root(home) / self.mcp_file

    def skill_path(self, home: Path) -> Path:
        return self.root(home) / self.skills_dir / "memwire" / "SKILL.md"

    def present(self, home: Path) -> bool:
        return self.root(home).is_dir() or (
            self.mcp_file.startswith("~/") and self.mcp_path(home).is_file()
        )


HOSTS: dict[str, Host] = {
    # Hooks: https://docs.claude.com/en/docs/claude-code/hooks (settings.json "hooks": event ->
    # [{"matcher"?, "hooks": [{"type": "command", "command", "timeout" (seconds)}]}]; stdout of
    # UserPromptSubmit/SessionStart or hookSpecificOutput.additionalContext is added as context).
    # MCP: https://docs.claude.com/en/docs/claude-code/mcp (user scope: "mcpServers" in
    # ~/.claude.json, {"type": "stdio", "command", "args"}). Skills:
    # https://docs.claude.com/en/docs/claude-code/skills (~/.claude/skills/<name>/SKILL.md).
    "claude": Host(
        name="claude",
        label="Claude Code",
        dir_name=".claude",
        env_dir=None,
        hooks_file="settings.json",
        hooks_style="nested",
        timeout_unit="s",
        hooks=(
            HookSpec("SessionStart", "session-start", 10),
            HookSpec("UserPromptSubmit", "prompt", 5),
            HookSpec("Stop", "stop", 60),
            HookSpec("PreCompact", "pre-compact", 60),
            HookSpec("SessionEnd", "session-end", 60),
        ),
        mcp_file="~/.claude.json",
        mcp_style="json",
        mcp_stdio_type=True,
        skills_dir="skills",
        docs=(
            "https://docs.claude.com/en/docs/claude-code/hooks",
            "https://docs.claude.com/en/docs/claude-code/mcp",
        ),
    ),
    # Hooks: https://developers.openai.com/codex/hooks ($CODEX_HOME/hooks.json, same nested
    # shape as Claude Code; events SessionStart, UserPromptSubmit, PreCompact, Stop; plain
    # stdout or hookSpecificOutput.additionalContext becomes developer context; older releases
    # need `[features] codex_hooks = true`). MCP: https://developers.openai.com/codex/mcp
    # ([mcp_servers.<name>] command/args in $CODEX_HOME/config.toml).
    "codex": Host(
        name="codex",
        label="Codex",
        dir_name=".codex",
        env_dir="CODEX_HOME",
        hooks_file="hooks.json",
        hooks_style="nested",
        timeout_unit="s",
        hooks=(
            HookSpec("SessionStart", "session-start", 10),
            HookSpec("UserPromptSubmit", "prompt", 5),
            HookSpec("Stop", "stop", 60),
            HookSpec("PreCompact", "pre-compact", 60),
        ),
        mcp_file="config.toml",
        mcp_style="toml",
        mcp_stdio_type=False,
        skills_dir="skills",
        docs=(
            "https://developers.openai.com/codex/hooks",
            "https://developers.openai.com/codex/mcp",
        ),
    ),
    # Hooks: https://cursor.com/docs/agent/hooks (~/.cursor/hooks.json {"version": 1, "hooks":
    # {event: [{"command"}]}}; beforeSubmitPrompt may only allow or block, so nothing is
    # injected there: Cursor recalls through MCP). MCP: https://cursor.com/docs/context/mcp
    # (~/.cursor/mcp.json {"mcpServers": {name: {"command", "args"}}}).
    "cursor": Host(
        name="cursor",
        label="Cursor",
        dir_name=".cursor",
        env_dir=None,
        hooks_file="hooks.json",
        hooks_style="flat",
        timeout_unit="",
        hooks=(
            HookSpec("beforeSubmitPrompt", "prompt", 5),
            HookSpec("stop", "stop", 60),
        ),
        mcp_file="mcp.json",
        mcp_style="json",
        mcp_stdio_type=False,
        skills_dir="skills",
        docs=("https://cursor.com/docs/agent/hooks", "https://cursor.com/docs/context/mcp"),
    ),
    # Hooks: https://geminicli.com/docs/hooks/reference (settings.json "hooks": event ->
    # [{"matcher"?, "hooks": [{"type": "command", "command", "name", "timeout" (ms)}]}]; stdout
    # must be JSON; BeforeAgent/SessionStart take hookSpecificOutput.additionalContext).
    # MCP: https://geminicli.com/docs/tools/mcp-server ("mcpServers" in settings.json).
    "gemini": Host(
        name="gemini",
        label="Gemini CLI",
        dir_name=".gemini",
        env_dir=None,
        hooks_file="settings.json",
        hooks_style="nested",
        timeout_unit="ms",
        hooks=(
            HookSpec("SessionStart", "session-start", 10),
            HookSpec("BeforeAgent", "prompt", 5),
            HookSpec("AfterAgent", "stop", 60),
            HookSpec("PreCompress", "pre-compact", 60),
            HookSpec("SessionEnd", "session-end", 60),
        ),
        mcp_file="settings.json",
        mcp_style="json",
        mcp_stdio_type=False,
        skills_dir="skills",
        docs=(
            "https://geminicli.com/docs/hooks/reference",
            "https://geminicli.com/docs/tools/mcp-server",
        ),
    ),
}


def host_names() -> list[str]:
    return list(HOSTS)
