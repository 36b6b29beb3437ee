"""Cursor.

Hooks: https://cursor.com/docs/agent/hooks (``~/.cursor/hooks.json`` ``{"version": 1, "hooks":
{event: [{"command"}]}}``; the JSON on stdin carries ``conversation_id``, ``generation_id``,
``hook_event_name``, ``workspace_roots``, ``transcript_path``; ``beforeSubmitPrompt`` may
only allow or block, so nothing is injected there: Cursor recalls through MCP and the skill).
MCP: https://cursor.com/docs/context/mcp (``~/.cursor/mcp.json`` ``{"mcpServers": {name:
{"command", "args"}}}``). Transcript: JSON Lines of role/content messages, the generic shape.
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
    name="cursor",
    label="Cursor",
    docs=("https://cursor.com/docs/agent/hooks", "https://cursor.com/docs/context/mcp"),
    paths=Paths(
        dir_name=".cursor",
        env_dir=None,
        hooks_file="hooks.json",
        mcp_file="mcp.json",
        skills_dir="skills",
    ),
    hooks=HookFormat(
        table="hooks",
        style="flat",
        timeout_unit="",
        named=False,
        file_defaults={"version": 1},
        specs=(
            HookSpec("beforeSubmitPrompt", "prompt", 5),
            HookSpec("stop", "stop", 60),
        ),
    ),
    mcp=McpFormat(
        style="json",
        table="mcpServers",
        stdio_type=False,
        # A user-level server is not started in the workspace; Cursor expands this in args.
        project_dir="${workspaceFolder}",
    ),
    events={
        "sessionStart": "session-start",
        "beforeSubmitPrompt": "prompt",
        "stop": "stop",
        "preCompact": "pre-compact",
        "sessionEnd": "session-end",
    },
    payload=PayloadFormat(
        session=("conversation_id",),
        cwd=("workspace_roots[0]",),
        prompt=("prompt",),
        transcript=("transcript_path",),
        event=("hook_event_name",),
        detect_keys=("conversation_id", "cursor_version", "workspace_roots"),
        detect_events=(),
        detect_any_event=False,
        detect_order=10,
    ),
    output=OutputFormat(
        style="additional-context",
        silent="{}",
        context_events={},
        # beforeSubmitPrompt answers allow / block only.
        fixed={"prompt": '{"continue": true}'},
    ),
    transcript=TranscriptFormat(),
    next_steps=(
        "restart Cursor; its prompt hook cannot add context, so recall happens through the MCP "
        "tools (enable the memwire server in Settings > MCP if it is off)",
    ),
)
