"""What the hooks make of each host, pinned: event names, payload fields, host detection, the
stdout each host gets for each event, transcripts of every shape, and whole in-process runs.

``golden.json`` was written by the code before the host facts moved into ``memwire.hosts``
(commit a2ab80f). After an intended change, regenerate it with
``python tests/hooks/test_hook_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden.json"
FIXTURES = HERE / "fixtures"
EVENT_NAMES = [
    "session-start",
    "prompt",
    "stop",
    "pre-compact",
    "session-end",
    "SessionStart",
    "sessionStart",
    "UserPromptSubmit",
    "user_prompt_submit",
    "User-Prompt-Submit",
    "BeforeAgent",
    "beforeSubmitPrompt",
    "Stop",
    "AfterAgent",
    "PreCompact",
    "preCompact",
    "PRE_COMPACT",
    "PreCompress",
    "SessionEnd",
    "sessionEnd",
    "  prompt  ",
    "Notification",
    "BeforeModel",
    "afterFileEdit",
    "",
    "status",
]
# Payloads beyond the recorded fixtures: mixed and missing keys decide the field precedence.
PAYLOADS: dict[str, Any] = {
    "empty": {},
    "camel": {"sessionId": "s-camel", "transcriptPath": "/t/camel.json", "message": "hi"},
    "thread": {"thread_id": "t-1", "user_prompt": "up", "cwd": "/w"},
    "conv_and_thread": {"conversation_id": "c-1", "thread_id": "t-1"},
    "session_and_conv": {"session_id": " s-1 ", "conversation_id": "c-1"},
    "thread_and_camel": {"thread_id": "t-1", "sessionId": "s-2"},
    "roots_only": {"workspace_roots": ["/r1", "/r2"], "prompt": "p"},
    "roots_not_str": {"workspace_roots": [7], "cwd": ""},
    "cwd_beats_roots": {"cwd": "/c", "workspace_roots": ["/r"]},
    "prompt_order": {"prompt": "", "user_prompt": "", "message": "m"},
    "prompt_not_str": {"prompt": 5, "user_prompt": "u"},
    "transcript_order": {"transcript_path": "/a", "transcriptPath": "/b"},
    "cursor_version": {"cursor_version": "1.7", "hook_event_name": "stop"},
    "turn_and_gemini": {"turn_id": "x", "hook_event_name": "AfterAgent"},
    "turn_and_conv": {"turn_id": "x", "conversation_id": "c"},
    "gemini_model": {"hook_event_name": "BeforeModel"},
    "codex_no_event": {"turn_id": "x"},
    "claude_other_event": {"hook_event_name": "Notification", "message": "needs input"},
    "list": [1, 2],
    "not_json": "not json {",
}
TRANSCRIPTS: dict[str, Any] = {
    "gemini_document": {
        "sessionId": "g",
        "messages": [
            {"type": "user", "content": "hello there", "timestamp": "2026-09-23T12:00:00Z"},
            {"type": "gemini", "content": [{"text": "hi!"}]},
        ],
    },
    "gemini_parts": [
        {"role": "user", "parts": [{"text": "what is the staging cluster?"}]},
        {"role": "model", "parts": [{"text": "eu-west-1"}, {"functionCall": {"name": "x"}}]},
    ],
    "history_key": {"history": [{"role": "human", "text": "q"}, {"role": "ai", "text": "a"}]},
    "conversation_key": {
        "conversation": [{"role": "user", "message": "m1"}, {"role": "bot", "message": "m2"}]
    },
    "turns_key": {"turns": [{"role": "USER", "content": "t1"}, {"role": "Agent", "content": "t2"}]},
    "items_key": {"items": [{"role": "user", "content": {"type": "text", "text": "dict content"}}]},
    "single_object": {"role": "user", "content": "one message"},
    "cursor_jsonl": [
        {"role": "user", "content": [{"type": "text", "text": "Fix the bug in main.ts"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed the null check."}]},
        {"role": "tool", "content": "ignored"},
        {"role": "assistant", "content": [{"type": "tool_use", "text": "not kept"}]},
    ],
    "claude_flags": [
        {"type": "user", "isMeta": True, "message": {"role": "user", "content": "meta"}},
        {"type": "user", "isSidechain": True, "message": {"role": "user", "content": "side"}},
        {"type": "user", "isCompactSummary": True, "message": {"role": "user", "content": "s"}},
        {
            "type": "user",
            "message": {"role": "user", "content": "Caveat: The messages below were made"},
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "<command-name>/clear</command-name><command-message>clear"
                "</command-message><command-args></command-args>real question",
            },
        },
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": "<local-command-stdout>out</local-command-stdout>"
                "<local-command-stderr>err</local-command-stderr>"
                "<user-prompt-submit-hook>h</user-prompt-submit-hook>"
                "<session-start-hook>s</session-start-hook>"
                "<system-reminder>r</system-reminder>kept",
            },
        },
        {"type": "assistant", "message": "a plain string message"},
        {"type": "assistant", "message": {"role": "assistant", "content": "answer"}},
        {"type": "summary", "summary": "ignored"},
    ],
    "codex_skips": [
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /r"}],
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "<permissions instructions>x"},
                    {"type": "input_text", "text": "<user_instructions>u</user_instructions>go"},
                ],
            },
        },
        {"type": "response_item", "payload": {"type": "reasoning", "role": "assistant"}},
        {"type": "response_item", "payload": "not a dict", "role": "assistant", "text": "odd"},
        {
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
            },
            "timestamp": "2026-09-22T08:00:04.000Z",
        },
        {"type": "event_msg", "payload": {"type": "token_count"}},
    ],
    "role_beats_type": [
        {"role": None, "type": "user", "content": "dropped: role is not a string"},
        {"type": "user", "content": "kept by type"},
        {"role": "assistant", "type": "user", "content": "role wins"},
    ],
    "assistant_first": [
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "q"},
    ],
    "open_wrapper": [{"role": "user", "content": "before <environment_context> never closed"}],
    "recall_block": [
        {
            "role": "user",
            "content": '<memwire-recall bank="b">\n- [2026-01-01] x\n</memwire-recall>question',
        }
    ],
}
_ID = re.compile(r"mem_[0-9A-Za-z]+")


def _write_transcript(path: Path, value: Any) -> None:
    if isinstance(value, list) and path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(v) + "\n" for v in value), encoding="utf-8")
    else:
        path.write_text(json.dumps(value), encoding="utf-8")


def _fixture_payloads() -> dict[str, str]:
    out = {}
    for path in sorted(FIXTURES.glob("*.json")):
        text = path.read_text(encoding="utf-8")
        out[path.stem] = text.replace("{cwd}", "/repo").replace("{transcript}", "/t.jsonl")
    for name, value in PAYLOADS.items():
        out[name] = value if isinstance(value, str) else json.dumps(value)
    return out


def _exchanges(path: Path) -> list[dict[str, Any]]:
    from memwire.hooks.transcript import read_exchanges, turn_chunks

    out = []
    exchanges = read_exchanges(path)
    turns = turn_chunks(exchanges, limit=60)
    for exchange in exchanges:
        record = asdict(exchange)
        record["turns"] = [asdict(t) for t in turns if t.exchange == exchange.index]
        out.append(record)
    return out


@contextmanager
def _private_home(root: Path) -> Iterator[Path]:
    """A memwire home of its own, in-process store, no server probing."""
    from memwire.hooks import _log

    saved = {k: v for k, v in os.environ.items() if k.startswith("MEMWIRE_")}
    for key in saved:
        if key != "MEMWIRE_BACKEND":
            del os.environ[key]
    home = root / "memwire-home"
    home.mkdir()
    os.environ["MEMWIRE_HOME"] = str(home)
    os.environ["MEMWIRE_URL"] = "off"
    was = _log._configured
    _log._configured = False
    try:
        yield home
    finally:
        _log._configured = was
        for key in [k for k in os.environ if k.startswith("MEMWIRE_")]:
            del os.environ[key]
        os.environ.update(saved)


def _runs(root: Path) -> dict[str, Any]:
    """Every host x event through ``run_hook`` in-process, on a seeded store."""
    from memwire.hooks.events import EVENTS, host_choices, run_hook
    from memwire.memory import Memory

    repo = root / "web"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text(
        '[remote "origin"]\n\turl = git@github.com:acme/web.git\n', encoding="utf-8"
    )
    out: dict[str, Any] = {}
    with _private_home(root) as home:
        with Memory(home / "memory.db") as memory:
            memory.retain(
                "The web app deploys to staging with ops/deploy.sh staging (needs the VPN).",
                bank="acme/web",
                created_at="2026-09-20",
            )
            memory.retain(
                "Production deploys need a tagged release.",
                bank="acme/web",
                created_at="2026-08-02",
            )
        for host in (*host_choices(), None):
            for event in EVENTS:
                transcript = root / f"{host}-{event}.jsonl"
                shutil.copy(FIXTURES / "claude_transcript.jsonl", transcript)
                data = {
                    "session_id": f"{host}-{event}",
                    "cwd": str(repo),
                    "transcript_path": str(transcript),
                    "hook_event_name": "UserPromptSubmit" if host is None else "",
                    "prompt": "How do we deploy the web app to staging?",
                }
                result = run_hook(event, json.dumps(data), host=host, budget=120)
                record = asdict(result)
                record["output"] = _ID.sub("mem_<id>", record["output"])
                record["ids"] = len(record["ids"])
                out[f"{host}/{event}"] = record
    return out


def compute(root: Path) -> dict[str, Any]:
    from memwire.hooks.events import (
        EVENTS,
        canonical_event,
        detect_host,
        format_output,
        host_choices,
    )
    from memwire.hooks.events import parse_input as parse

    out: dict[str, Any] = {"hosts": list(host_choices()), "events": list(EVENTS)}
    out["canonical"] = {name: canonical_event(name) for name in EVENT_NAMES}
    parsed: dict[str, Any] = {}
    for name, text in _fixture_payloads().items():
        payload = parse(text)
        record = asdict(payload)
        del record["raw"]
        if record["cwd"] == os.getcwd():
            record["cwd"] = "<cwd>"
        record["host"] = detect_host(payload)
        parsed[name] = record
    out["parse"] = parsed
    block = '<memwire-recall bank="b" source="prompt">\nx & "y"\n</memwire-recall>'
    out["output"] = {
        f"{host}/{event}/{'block' if b else 'empty'}": format_output(host, event, b)
        for host in host_choices()
        for event in EVENTS
        for b in ("", block)
    }
    transcripts: dict[str, Any] = {}
    for path in sorted(FIXTURES.glob("*.jsonl")):
        transcripts[path.name] = _exchanges(path)
    scratch = root / "transcripts"
    scratch.mkdir()
    for name, value in TRANSCRIPTS.items():
        for suffix in (".jsonl", ".json"):
            path = scratch / f"{name}{suffix}"
            _write_transcript(path, value)
            transcripts[path.name] = _exchanges(path)
    plain = scratch / "notes.txt"
    plain.write_text(
        "just some notes\n<system-reminder>x</system-reminder>\nmore", encoding="utf-8"
    )
    transcripts["notes.txt"] = _exchanges(plain)
    out["transcripts"] = transcripts
    out["runs"] = _runs(root)
    return out


@pytest.fixture
def expected() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return value


def test_hooks_answer_every_host_as_they_always_did(
    tmp_path: Path, expected: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    actual = compute(tmp_path)
    assert actual.keys() == expected.keys()
    for section in expected:
        if isinstance(expected[section], dict):
            for key in expected[section]:
                assert actual[section].get(key) == expected[section][key], f"{section}: {key}"
        assert actual[section] == expected[section], section


if __name__ == "__main__":  # pragma: no cover - regenerates the golden file
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        data = compute(Path(scratch))
    GOLDEN.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN}")
