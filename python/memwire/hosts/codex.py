"""Codex.

Hooks: https://developers.openai.com/codex/hooks (``$CODEX_HOME/hooks.json``, the same nested
shape as Claude Code; events SessionStart, UserPromptSubmit, PreCompact, Stop; the JSON on
stdin carries ``session_id``, ``turn_id``, ``transcript_path``, ``cwd``, ``hook_event_name``;
plain stdout or ``hookSpecificOutput.additionalContext`` becomes developer context; older
releases need ``[features] codex_hooks = true``, which ``connect`` does not set). MCP:
https://developers.openai.com/codex/mcp (``[mcp_servers.<name>]`` command/args in
``$CODEX_HOME/config.toml``). Transcript: the rollout, JSON Lines of ``{"type":
"response_item", "payload": {"type": "message", "role", "content": [{"type": "input_text" |
"output_text", "text"}]}}``; other payload types (reasoning, tool calls) are not messages.
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
    name="codex",
    label="Codex",
    docs=(
        "https://developers.openai.com/codex/hooks",
        "https://developers.openai.com/codex/mcp",
    ),
    paths=Paths(
        dir_name=".codex",
        env_dir="CODEX_HOME",
        hooks_file="hooks.json",
        mcp_file="config.toml",
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
        ),
    ),
    mcp=McpFormat(style="toml", table="mcp_servers", stdio_type=False, project_dir=""),
    events={
        "SessionStart": "session-start",
        "UserPromptSubmit": "prompt",
        "Stop": "stop",
        "PreCompact": "pre-compact",
    },
    payload=PayloadFormat(
        session=("session_id", "thread_id"),
        cwd=("cwd",),
        prompt=("prompt",),
        transcript=("transcript_path",),
        event=("hook_event_name",),
        detect_keys=("turn_id",),
        detect_events=(),
        detect_any_event=False,
        detect_order=30,
    ),
    output=OutputFormat(
        style="additional-context",
        silent="",
        context_events={"prompt": "UserPromptSubmit", "session-start": "SessionStart"},
        fixed={},
    ),
    transcript=TranscriptFormat(
        envelopes=(Envelope(kinds=("response_item",), inner="payload", inner_kind="message"),),
        text_types=("input_text", "output_text"),
        wrappers=("environment_context", "user_instructions"),
        skip_prefixes=("# AGENTS.md instructions", "<permissions instructions>"),
    ),
    next_steps=(
        "restart Codex and trust memwire's hooks when it asks (it runs no hook it has not "
        "been told to trust)",
        "Codex releases before hooks were on by default also need '[features] codex_hooks = "
        "true' in config.toml, which connect does not set",
    ),
)
