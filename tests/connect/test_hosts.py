"""The host registry (``memwire.hosts``): every host file declares what the registry needs, the
checker catches bad declarations, and ``connect`` and ``hooks`` take their host lists from the
registry alone (a host added there appears in both, with its own names, files and formats)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from memwire import hosts
from memwire.connect import connect, list_hosts
from memwire.hooks import events, transcript
from memwire.hooks.block import Entry
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

HOSTS_DIR = Path(hosts.__file__).resolve().parent
HERE = Path(__file__).resolve().parent
BASE = ["/opt/memwire/bin/memwire"]
BUILT_IN = ["claude", "codex", "cursor", "gemini"]

# A host none of the built-in ones resembles: its own directory, event names, payload keys,
# MCP key, output names and transcript envelope.
ZED = Host(
    name="zed",
    label="Zed Agent",
    docs=("https://example.com/zed/hooks",),
    paths=Paths(
        dir_name=".zed",
        env_dir="ZED_HOME",
        hooks_file="agent-hooks.json",
        mcp_file="context.json",
        skills_dir="agent-skills",
    ),
    hooks=HookFormat(
        table="agent_hooks",
        style="nested",
        timeout_unit="s",
        named=True,
        file_defaults={"schema": 2},
        specs=(HookSpec("BeforeAsk", "prompt", 7), HookSpec("AfterAnswer", "stop", 30)),
    ),
    mcp=McpFormat(style="json", table="context_servers", stdio_type=True, project_dir=""),
    events={"BeforeAsk": "prompt", "AfterAnswer": "stop", "Opened": "session-start"},
    payload=PayloadFormat(
        session=("zed_thread",),
        cwd=("zed_worktrees[0]",),
        prompt=("ask",),
        transcript=("zed_log",),
        event=("zed_event",),
        detect_keys=("zed_version",),
        detect_events=(),
        detect_any_event=False,
        detect_order=5,
    ),
    output=OutputFormat(
        style="additional-context",
        silent="{}",
        context_events={"prompt": "BeforeAsk", "session-start": "Opened"},
        fixed={},
    ),
    transcript=TranscriptFormat(
        envelopes=(Envelope(kinds=("zed_turn",), inner="body"),),
        assistant_roles=("zed",),
        wrappers=("zed-context",),
        skip_prefixes=("[zed boilerplate]",),
    ),
    next_steps=("restart Zed",),
)


def _module_names() -> list[str]:
    return sorted(p.stem for p in HOSTS_DIR.glob("*.py") if p.stem not in ("__init__", "base"))


# -- the built-in hosts ------------------------------------------------------------------------


def test_every_host_file_is_registered_under_its_own_name() -> None:
    assert _module_names() == sorted(BUILT_IN)
    assert list(hosts.HOSTS) == BUILT_IN  # the order `memwire connect` lists them in
    for name in _module_names():
        module = importlib.import_module(f"memwire.hosts.{name}")
        assert isinstance(module.HOST, Host), name
        assert module.HOST.name == name
        assert hosts.HOSTS[name] is module.HOST


def test_every_host_declares_everything_the_registry_requires() -> None:
    assert hosts.problems() == []
    for host in hosts.HOSTS.values():
        # No field of a host is left to a default: every fact is written in its own file.
        for group in (host.paths, host.hooks, host.mcp, host.payload, host.output):
            for field in dataclasses.fields(group):
                assert field.default is dataclasses.MISSING, (host.name, field.name)
        assert host.hooks.specs and host.events and host.docs


def test_host_facts_live_only_in_hosts() -> None:
    """connect/ and hooks/ hold mechanics; no host's names, files or fields appear there."""
    facts: set[str] = set()
    for host in hosts.HOSTS.values():
        facts.update({host.label, host.paths.dir_name, host.paths.hooks_file, host.mcp.table})
        facts.add(host.paths.mcp_file.removeprefix("~/"))
        facts.update(host.events)
        facts.update(host.payload.detect_keys + host.payload.detect_events)
        facts.update(k for k in host.payload.session + host.payload.cwd if k != "cwd")
        facts.update(host.transcript.skip_flags + host.transcript.wrappers)
        facts.update(host.transcript.text_types + host.transcript.skip_prefixes)
        facts.update(host.transcript.assistant_roles)
        facts.update(e.kinds[0] for e in host.transcript.envelopes)
        if host.paths.env_dir:
            facts.add(host.paths.env_dir)
    # Words that are memwire's own too (its event "stop", HookInput.session_id, prose).
    facts -= {"stop", "text", "user", "hooks", "session_id", "model"}
    assert len(facts) > 40  # the check has something to look for
    package = HOSTS_DIR.parent
    found = []
    for folder in ("connect", "hooks"):
        for path in sorted((package / folder).glob("*.py")):
            text = path.read_text(encoding="utf-8")
            found += [
                f"{folder}/{path.name}: {fact!r}"
                for fact in sorted(facts)
                if re.search(rf"(?<![\w.-]){re.escape(fact)}(?![\w-])", text)
            ]
    assert found == []


def test_the_golden_files_cover_every_host() -> None:
    connect_golden = json.loads((HERE / "golden.json").read_text(encoding="utf-8"))
    hooks_golden = json.loads((HERE.parent / "hooks" / "golden.json").read_text(encoding="utf-8"))
    assert [r["host"] for r in connect_golden["fresh"]["list"]] == hosts.host_names()
    written = [r["host"] for r in connect_golden["fresh"]["steps"][0]["reports"]]
    assert written == hosts.host_names()
    assert hooks_golden["hosts"] == [*hosts.host_names(), hosts.PLAIN]


# -- the checker -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        ({"name": "Zed!"}, "lower-case identifier"),
        ({"name": "plain"}, "lower-case identifier"),
        ({"docs": ()}, "docs"),
        ({"paths": dataclasses.replace(ZED.paths, hooks_file="/etc/hooks.json")}, "relative"),
        ({"paths": dataclasses.replace(ZED.paths, env_dir="zed home")}, "environment variable"),
        ({"hooks": dataclasses.replace(ZED.hooks, style="tree")}, "hooks.style"),
        ({"hooks": dataclasses.replace(ZED.hooks, style="flat")}, "command only"),
        ({"hooks": dataclasses.replace(ZED.hooks, specs=())}, "at least one event"),
        (
            {"hooks": dataclasses.replace(ZED.hooks, specs=(HookSpec("Gone", "prompt", 5),))},
            "missing from events",
        ),
        (
            {"hooks": dataclasses.replace(ZED.hooks, specs=(HookSpec("BeforeAsk", "ask", 5),))},
            "not a memwire event",
        ),
        ({"mcp": dataclasses.replace(ZED.mcp, style="yaml")}, "mcp.style"),
        ({"events": {**ZED.events, "Closed": "close"}}, "not a memwire event"),
        ({"events": {**ZED.events, "UserPromptSubmit": "stop"}}, "means 'prompt' for claude"),
        ({"events": {**ZED.events, "pre_compact": "stop"}}, "means 'pre-compact' for memwire"),
        ({"payload": dataclasses.replace(ZED.payload, session=())}, "payload.session"),
        ({"payload": dataclasses.replace(ZED.payload, detect_keys=())}, "nothing recognises"),
        ({"payload": dataclasses.replace(ZED.payload, detect_order=10)}, "detect_order"),
        (
            {"output": dataclasses.replace(ZED.output, context_events={"prompt": "Ask"})},
            "not one of its events",
        ),
        ({"output": dataclasses.replace(ZED.output, style="xml")}, "output.style"),
        (
            {"transcript": TranscriptFormat(assistant_roles=("human",))},
            "on the other side",
        ),
        ({"transcript": TranscriptFormat(user_roles=("User",))}, "lower-case"),
        ({"transcript": TranscriptFormat(wrappers=("<tag>",))}, "bare tag names"),
    ],
)
def test_the_checker_catches_a_bad_declaration(change: dict[str, object], complaint: str) -> None:
    assert hosts.problems({**hosts.HOSTS, "zed": ZED}) == []
    bad = dataclasses.replace(ZED, **change)  # type: ignore[arg-type]
    found = hosts.problems({**hosts.HOSTS, bad.name: bad})
    assert any(complaint in p for p in found), found


# -- a new host appears everywhere -------------------------------------------------------------


@pytest.fixture
def zed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """ZED registered; a private memwire home; returns a fake HOME."""
    monkeypatch.setitem(hosts.HOSTS, "zed", ZED)
    monkeypatch.delenv("ZED_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    for key in list(os.environ):
        if key.startswith("MEMWIRE_") and key != "MEMWIRE_BACKEND":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "memwire-home"))
    monkeypatch.setenv("MEMWIRE_URL", "off")
    from memwire.hooks import _log

    monkeypatch.setattr(_log, "_configured", False)
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_an_unregistered_host_is_unknown_everywhere(tmp_path: Path) -> None:
    # The other side of the next tests: without the registry entry nothing knows ZED.
    with pytest.raises(ValueError, match="unknown host"):
        connect(["zed"], home=tmp_path, base=BASE)
    assert "zed" not in [r.host for r in list_hosts(home=tmp_path)]
    assert events.canonical_event("BeforeAsk") is None
    assert events.detect_host(events.parse_input('{"zed_version": "1"}')) == hosts.PLAIN
    assert "zed" not in events.host_choices()


def test_connect_writes_a_registered_host(zed: Path) -> None:
    (report,) = connect(["zed"], home=zed, base=BASE, skill=True)
    assert report.state == "wired" and report.error == "" and report.label == "Zed Agent"
    assert report.hooks == {"BeforeAsk": True, "AfterAnswer": True}
    written = json.loads((zed / ".zed" / "agent-hooks.json").read_text())
    assert written == {
        "schema": 2,
        "agent_hooks": {
            "BeforeAsk": [
                {
                    "hooks": [
                        {
                            "name": "memwire-prompt",
                            "type": "command",
                            "command": f"{BASE[0]} hook prompt --host zed",
                            "timeout": 7,
                        }
                    ]
                }
            ],
            "AfterAnswer": [
                {
                    "hooks": [
                        {
                            "name": "memwire-stop",
                            "type": "command",
                            "command": f"{BASE[0]} hook stop --host zed",
                            "timeout": 30,
                        }
                    ]
                }
            ],
        },
    }
    mcp = json.loads((zed / ".zed" / "context.json").read_text())
    assert mcp == {
        "context_servers": {"memwire": {"type": "stdio", "command": BASE[0], "args": ["mcp"]}}
    }
    assert (zed / ".zed" / "agent-skills" / "memwire" / "SKILL.md").is_file()
    # listed after the built-in hosts, found when its directory exists, removed cleanly
    assert [r.host for r in list_hosts(home=zed)] == [*BUILT_IN, "zed"]
    assert [r.host for r in connect(None, home=zed, base=BASE)] == ["zed"]
    connect(["zed"], home=zed, uninstall=True)
    assert json.loads((zed / ".zed" / "agent-hooks.json").read_text()) == {"schema": 2}
    assert json.loads((zed / ".zed" / "context.json").read_text()) == {}


def test_the_cli_offers_a_registered_host(zed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from memwire.cli import build_parser, main

    assert main(["connect", "--list", "--json", "--home", str(zed)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["host"] for r in listed] == [*BUILT_IN, "zed"]
    args = build_parser().parse_args(["hook", "prompt", "--host", "zed"])
    assert args.host == "zed"


def test_the_hooks_understand_a_registered_host(
    zed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "zed" in events.host_choices()
    assert events.canonical_event("BeforeAsk") == events.canonical_event("before_ask") == "prompt"
    assert events.canonical_event("Opened") == "session-start"
    log = tmp_path / "zed.jsonl"
    log.write_text(
        "\n".join(
            json.dumps(line)
            for line in (
                {"kind": "x", "zed_turn": 1},
                {"type": "zed_turn", "body": {"role": "user", "content": "How do we deploy?"}},
                {"type": "zed_turn", "body": {"role": "user", "content": "[zed boilerplate] x"}},
                {
                    "type": "zed_turn",
                    "body": {
                        "role": "zed",
                        "content": "<zed-context>noise</zed-context>With ops/deploy.sh.",
                    },
                },
            )
        )
    )
    payload = {
        "zed_version": "0.200",
        "zed_thread": "t-9",
        "zed_worktrees": [str(tmp_path)],
        "zed_event": "BeforeAsk",
        "ask": "How do we deploy the web app?",
        "zed_log": str(log),
    }
    parsed = events.parse_input(json.dumps(payload))
    assert (parsed.session_id, parsed.cwd, parsed.prompt) == ("t-9", str(tmp_path), payload["ask"])
    assert (parsed.transcript_path, parsed.host_event) == (str(log), "BeforeAsk")
    assert events.detect_host(parsed) == "zed"
    (exchange,) = transcript.read_exchanges(log)
    assert exchange.text() == "User: How do we deploy?\n\nAssistant: With ops/deploy.sh."
    # whole runs, host guessed from the payload: the transcript is captured at stop, tagged
    # with the host; the prompt's block comes back under the host's own event name
    store = _Store()
    monkeypatch.setattr(events, "open_client", lambda url, db: store)
    stop = events.run_hook("stop", json.dumps({**payload, "zed_event": "AfterAnswer"}), budget=60)
    assert (stop.host, stop.retained, stop.output, stop.error) == ("zed", 1, "{}", "")
    (answered,) = store.retained  # the reply, with the prompt it answered as its context
    assert (answered["content"], answered["context"]) == (
        "Assistant: With ops/deploy.sh.",
        "How do we deploy?",
    )
    assert answered["tags"] == ["transcript", "zed", "session:t-9"]
    result = events.run_hook("prompt", json.dumps(payload), budget=60)
    assert result.host == "zed" and result.error == "" and store.queries == [payload["ask"]]
    out = json.loads(result.output)["hookSpecificOutput"]
    assert out["hookEventName"] == "BeforeAsk" and "ops/deploy.sh" in out["additionalContext"]
    assert events.format_output("zed", "stop", "block") == "{}"


class _Store:
    """A hook client that keeps what it is given (these tests are about hosts, not stores)."""

    kind = "local"

    def __init__(self) -> None:
        self.retained: list[dict[str, Any]] = []
        self.queries: list[str] = []

    def recall(
        self, bank: str, query: str, *, limit: int, budget: int, exclude_tags: Sequence[str]
    ) -> list[Entry]:
        self.queries.append(query)
        return [Entry("mem_1", "Deploys use ops/deploy.sh staging.", datetime(2026, 9, 20))]

    def recent(self, bank: str, *, limit: int, exclude_tags: Sequence[str]) -> list[Entry]:
        return []

    def retain(self, bank: str, item: Mapping[str, Any]) -> str:
        return self.retain_many(bank, [item])[0]

    def retain_many(self, bank: str, items: Sequence[Mapping[str, Any]]) -> list[str]:
        self.retained.extend(dict(i) for i in items)
        return [f"mem_{n}" for n in range(len(items))]

    def close(self) -> None:
        return None
