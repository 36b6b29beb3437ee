"""Gemini CLI.

Hooks: https://geminicli.com/docs/hooks/reference (``~/.gemini/settings.json`` "hooks": event
-> [{"matcher"?, "hooks": [{"type": "command", "command", "name", "timeout" (ms)}]}]; the JSON
on stdin carries ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``; stdout
must be JSON; BeforeAgent / SessionStart take ``hookSpecificOutput.additionalContext``). MCP:
https://geminicli.com/docs/tools/mcp-server ("mcpServers" in the same settings.json).
Transcript: a JSON document ``{"messages": [{"type": "user" | "gemini", "content"}]}`` or
messages with ``role`` ``user`` / ``model`` and ``parts``.
"""

from __future__ import annotations

from memwire.hosts.base import (
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
    name="gemini",
    label="Gemini CLI",
    docs=(
        "https://geminicli.com/docs/hooks/reference",
        "https://geminicli.com/docs/tools/mcp-server",
    ),
    paths=Paths(
        dir_name=".gemini",
        env_dir=None,
        hooks_file="settings.json",
        mcp_file="settings.json",
        skills_dir="skills",
    ),
    hooks=HookFormat(
        table="hooks",
        style="nested",
        timeout_unit="ms",
        named=True,
        file_defaults={},
        specs=(
            HookSpec("SessionStart", "session-start", 10),
            HookSpec("BeforeAgent", "prompt", 5),
            HookSpec("AfterAgent", "stop", 60),
            HookSpec("PreCompress", "pre-compact", 60),
            HookSpec("SessionEnd", "session-end", 60),
        ),
    ),
    mcp=McpFormat(style="json", table="mcpServers", stdio_type=False, project_dir=""),
    events={
        "SessionStart": "session-start",
        "BeforeAgent": "prompt",
        "AfterAgent": "stop",
        "PreCompress": "pre-compact",
        "SessionEnd": "session-end",
    },
    payload=PayloadFormat(
        session=("session_id",),
        cwd=("cwd",),
        prompt=("prompt",),
        transcript=("transcript_path",),
        event=("hook_event_name",),
        # SessionStart / SessionEnd are Claude Code's names too; these are Gemini's own.
        detect_keys=(),
        detect_events=("BeforeAgent", "AfterAgent", "PreCompress", "BeforeModel", "AfterModel"),
        detect_any_event=False,
        detect_order=20,
    ),
    output=OutputFormat(
        style="additional-context",
        silent="{}",  # stdout must be JSON
        context_events={"prompt": "BeforeAgent", "session-start": "SessionStart"},
        fixed={},
    ),
    transcript=TranscriptFormat(
        assistant_roles=("model", "gemini"),
        content_keys=("content", "parts"),
        document_keys=("messages",),
    ),
    next_steps=("restart Gemini CLI; '/mcp' lists the memwire server",),
)
