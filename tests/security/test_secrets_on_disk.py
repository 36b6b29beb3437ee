"""No secret reaches disk through any door: the generated battery (secret_battery.py) goes in
through the library, HTTP, MCP, the hook spool and rejected log, the prompt hook's session
state, transcript capture (secrets straddling a chunk boundary) and export; then every file
under the test's directory (store, WAL, SHM, spool, session state, logs, export) is read as
bytes and searched for every secret. Each door runs on both kernels."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest
from backends import require
from memwire.errors import InvalidInputError
from memwire.memory import Memory
from memwire.redact import redact
from memwire.server.testing import serve_in_thread
from secret_battery import Secret, battery

BATTERY = battery()
# Identifiers are checked without the phone rule (ids are digit groups), so a phone number in a
# tag is kept; every other kind is refused. A bare value (a password without its key name) is
# recognisable by nobody, so the identifiers tried are the self-identifying secrets (tokens
# with a vendor prefix, cards, keys...) and every secret in its setting (a document id).
IDENTIFIER_SECRETS = [s for s in BATTERY if s.kind != "phone" and redact(s.secret) != s.secret]
DOCUMENT_IDS = [s.text for s in BATTERY if s.kind != "phone" and "\n" not in s.text]


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    return require(request.param)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "home"
    for key in list(os.environ):
        if key.startswith("MEMWIRE_") and key != "MEMWIRE_BACKEND":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMWIRE_HOME", str(path))
    monkeypatch.setenv("MEMWIRE_URL", "off")
    from memwire.hooks import _log

    monkeypatch.setattr(_log, "_configured", False)
    yield path


def leaks(root: Path) -> list[str]:
    """``file: secret name`` for every battery secret found in any file under ``root``."""
    found = []
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, "nothing was written: the test would prove nothing"
    for path in files:
        data = path.read_bytes()
        for s in BATTERY:
            if s.secret.encode() in data:
                found.append(f"{path.relative_to(root)}: {s.name}")
    return found


def test_the_battery_is_redacted_with_the_right_labels() -> None:
    assert len(BATTERY) >= 60
    for s in BATTERY:
        out = redact(s.text)
        assert s.secret not in out, s.name
        assert f"[REDACTED:{s.kind}]" in out, (s.name, out)
        assert redact(out) == out, s.name  # placeholders are never redacted again


def test_labels_are_not_confused() -> None:
    assert redact("postgres://app:pw1234@db.example.com/x") == (
        "postgres://app:[REDACTED:url_credentials]@db.example.com/x"
    )
    assert redact("SSN 123-45-6789") == "SSN [REDACTED:ssn]"
    assert "email" not in redact("mongodb+srv://u:Secr3t@cluster0.example.net/db")


@pytest.mark.parametrize(
    "text",
    [
        "The password reset flow is broken since v2",
        "the password is stored hashed with argon2",
        "max_tokens=4096 and tokens: 512",
        "set token = get_token(cfg); api_key = os.environ['KEY']",
        "author: Jane, keyboard: mechanical, ratio: 0.5",
        "Use Basic authentication for the proxy",
        "See postgres://localhost:5432/db for the docs",
        "order 123456789012345 shipped",
        "call at 2024-05-01 09:30",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def _library(db: Path, backend: str) -> None:
    with Memory(db, backend=backend) as memory:
        for s in BATTERY:
            memory.retain(s.text, context=f"from {s.text}", bank="default")
        assert len(IDENTIFIER_SECRETS) >= 35 and len(DOCUMENT_IDS) >= 50
        for s in IDENTIFIER_SECRETS:
            with pytest.raises(InvalidInputError):
                memory.retain("x", tags=[s.secret], bank="default")
        for text in DOCUMENT_IDS:
            with pytest.raises(InvalidInputError):
                memory.retain("x", document_id=text, bank="default")
        hits = memory.recall("password token key", bank="default", limit=100)
        assert hits and all(s.secret not in h.content for h in hits for s in BATTERY)
        memory.export(db.parent / "export.jsonl")


def test_library_and_export(home: Path, backend: str) -> None:
    _library(home / "memory.db", backend)
    assert leaks(home) == []


def test_identifier_refusal_names_the_kind(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as memory:
        key = "AKIA" + "Q" * 16
        with pytest.raises(InvalidInputError, match=r"tag looks like .*aws_access_key"):
            memory.retain("x", tags=[key])
        with pytest.raises(InvalidInputError, match="document_id looks like"):
            memory.retain("x", document_id=f"doc-{key}")
        assert memory.banks() == []  # refused before anything was written


def test_http(home: Path, backend: str) -> None:
    with (
        Memory(home / "memory.db", backend=backend) as memory,
        serve_in_thread(memory) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        for s in BATTERY:
            r = http.post("/banks/default/retain", json={"content": s.text, "context": s.text})
            assert r.status_code == 200, r.text
        for s in IDENTIFIER_SECRETS[:10]:
            r = http.post("/banks/default/retain", json={"content": "x", "tags": [s.secret]})
            assert r.status_code == 400, r.text
            assert s.secret not in r.text
    assert leaks(home) == []


def test_mcp(home: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mcp")
    monkeypatch.setenv("MEMWIRE_BACKEND", backend)  # the MCP endpoint loads the chosen kernel
    from mcp import Client

    with Memory(home / "memory.db", backend=backend) as memory, serve_in_thread(memory) as url:

        async def main() -> None:
            async with Client(f"{url}/mcp") as client:
                for s in BATTERY:
                    r = await client.call_tool(
                        "memory_retain", {"content": s.text, "context": s.text}
                    )
                    assert not r.is_error, r.content
                r = await client.call_tool(
                    "memory_retain", {"content": "x", "document_id": BATTERY[0].secret}
                )
                assert r.is_error

        anyio.run(main)
    assert leaks(home) == []


def _transcript(path: Path, secrets: list[Secret]) -> None:
    """A Claude transcript whose exchanges put each secret across the 4,000-character cut."""
    lines = []
    for n, s in enumerate(secrets):
        # The chunker cuts at a space in the second half of the window: a run of words ends
        # just before the secret so the secret's head is in one chunk and its tail in the next.
        filler = ("word " * 800)[: 4000 - 12 - len(s.text) // 2].rstrip() + " "
        user = {"role": "user", "content": f"{filler}{s.text} and more words after it"}
        reply = {"role": "assistant", "content": [{"type": "text", "text": "noted"}]}
        stamp = f"2026-09-20T10:{n // 60:02d}:{n % 60:02d}.000Z"
        lines.append(json.dumps({"type": "user", "message": user, "timestamp": stamp}))
        lines.append(json.dumps({"type": "assistant", "message": reply, "timestamp": stamp}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_hooks_prompt_transcript_spool_and_rejected(
    home: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_BACKEND", backend)
    from memwire.hooks import spool
    from memwire.hooks.events import run_hook, spool_rejected

    db = home / "memory.db"
    transcript = home.parent / "transcript.jsonl"
    _transcript(transcript, BATTERY)
    for s in BATTERY[:20]:
        data = {"session_id": "s1", "cwd": str(home.parent), "prompt": s.text}
        run_hook("prompt", json.dumps(data), host="claude", db=str(db), budget=60)
    data = {"session_id": "s1", "cwd": str(home.parent), "transcript_path": str(transcript)}
    result = run_hook("stop", json.dumps(data), host="claude", db=str(db), budget=120)
    assert not result.error, result
    assert result.retained + result.spooled >= len(BATTERY)
    items = [{"content": s.text, "context": s.text} for s in BATTERY]
    items += [{"content": "x", "document_id": text} for text in DOCUMENT_IDS]
    items += [{"content": "x", "tags": [s.secret]} for s in IDENTIFIER_SECRETS]
    spool.append("default", items, reason=f"down: {BATTERY[0].text}")
    spool_rejected("default", items, f"refused {BATTERY[1].text}")
    state = (home / "hooks" / "sessions" / "s1.json").read_text(encoding="utf-8")
    assert "last_prompt" in state
    assert leaks(home) == []  # the transcript (the host's file, outside home) holds them all
    # Each reply is a memory whose context holds the user's message before it; that message was
    # cut in two (redacted whole first), the cut within a few words of its secret's placeholder.
    with Memory(db, backend=backend) as memory:
        rows = memory.memories(bank="default", limit=1000)
    replies = [r for r in rows if r.content == "Assistant: noted" and r.context]
    assert len(replies) == len(BATTERY)
    halves = [r.context.split("\n") for r in replies if r.context]
    near = [lines[1] for lines in halves if len(lines) > 2 and "[REDACTED:" in lines[1][:200]]
    assert len(near) >= len(BATTERY) // 2
