"""Claude Code.

Hooks: https://docs.claude.com/en/docs/claude-code/hooks (``~/.claude/settings.json`` "hooks":
event -> [{"matcher"?, "hooks": [{"type": "command", "command", "timeout" (seconds)}]}]; the
JSON on stdin carries ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``;
``hookSpecificOutput.additionalContext`` of UserPromptSubmit / SessionStart is added as
context). MCP: https://docs.claude.com/en/docs/claude-code/mcp (user scope: "mcpServers" in
``~/.claude.json``, ``{"type": "stdio", "command", "args"}``). Skills:
https://docs.claude.com/en/docs/claude-code/skills (``~/.claude/skills/<name>/SKILL.md``).
Transcript: JSON Lines of ``{"type": "user"|"assistant", "message": {"role", "content": str |
[{"type": "text", "text"}, ...]}, "timestamp"}``; tool calls, tool results and thinking blocks
are other part types and are skipped.
"""

from __future__ import annotations

from memwire.hosts.base import (
    Envelope,
    HookFormat,
    HookSpec,
    Host,
    McpFormat,
    OutputFormat,
    Paths,
    PayloadFormat,
    TranscriptFormat,
)

__all__ = ["HOST"]

HOST = Host(
    name="claude",
    label="Claude Code",
    docs=(
        "https://docs.claude.com/en/docs/claude-code/hooks",
        "https://docs.claude.com/en/docs/claude-code/mcp",
    ),
    paths=Paths(
        dir_name=".claude",
        env_dir=None,
        hooks_file="settings.json",
        mcp_file="~/.claude.json",
        skills_dir="skills",
    ),
    hooks=HookFormat(
        table="hooks",
        style="nested",
        timeout_unit="s",
        named=False,
        file_defaults={},
        specs=(
            HookSpec("SessionStart", "session-start", 10),
            HookSpec("UserPromptSubmit", "prompt", 5),
            HookSpec("Stop", "stop", 60),
            HookSpec("PreCompact", "pre-compact", 60),
            HookSpec("SessionEnd", "session-end", 60),
        ),
    ),
    mcp=McpFormat(style="json", table="mcpServers", stdio_type=True, project_dir=""),
    events={
        "SessionStart": "session-start",
        "UserPromptSubmit": "prompt",
        "Stop": "stop",
        "PreCompact": "pre-compact",
        "SessionEnd": "session-end",
    },
    payload=PayloadFormat(
        session=("session_id",),
        cwd=("cwd",),
        prompt=("prompt",),
        transcript=("transcript_path",),
        event=("hook_event_name",),
        # Its payload has nothing of its own: any event name the others do not claim.
        detect_keys=(),
        detect_events=(),
        detect_any_event=True,
        detect_order=100,
    ),
    output=OutputFormat(
        style="additional-context",
        silent="",
        context_events={"prompt": "UserPromptSubmit", "session-start": "SessionStart"},
        fixed={},
    ),
    transcript=TranscriptFormat(
        envelopes=(Envelope(kinds=("user", "assistant"), inner="message"),),
        skip_flags=("isMeta", "isSidechain", "isCompactSummary"),
        text_types=("text",),
        wrappers=(
            "system-reminder",
            "local-command-stdout",
            "local-command-stderr",
            "command-message",
            "command-name",
            "command-args",
            "user-prompt-submit-hook",
            "session-start-hook",
        ),
        skip_prefixes=("Caveat: The messages",),
    ),
    next_steps=(
        "restart Claude Code (it reads hooks and MCP servers at start); '/hooks' and '/mcp' "
        "list what it loaded",
    ),
)
