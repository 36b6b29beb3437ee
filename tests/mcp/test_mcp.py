"""The MCP server through the official MCP client: stdio (`memwire mcp`) and streamable HTTP."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread

TOOLS = {
    # name: (read_only, destructive)
    "memory_retain": (False, False),
    "memory_retain_conversation": (False, False),
    "memory_retain_many": (False, False),
    "memory_recall": (True, False),
    "memory_reflect": (True, False),
    "memory_get": (True, False),
    "memory_forget": (False, True),
    "memory_bank_config_get": (True, False),
    "memory_update": (False, False),
    "memory_history": (True, False),
    "memory_trash": (True, False),
    "memory_restore": (False, False),
    "memory_purge": (False, True),
}
MODES = ["auto", "legacy"]  # the 2026 per-request era and the initialize handshake


def stdio(db: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "memwire", "mcp", "--db", str(db), *extra],
        env={k: v for k, v in os.environ.items() if k != "MEMWIRE_BANK"},
        # Outside any repository, a call without a bank uses "default" (the bank rule).
        cwd=str(db.parent),
    )


async def exercise(client: Client) -> dict[str, Any]:
    """initialize (done by the client), list tools, retain then recall, and every other tool."""
    listed = await client.list_tools()
    tools = {t.name: t for t in listed.tools}
    assert set(tools) == set(TOOLS)
    for name, (read_only, destructive) in TOOLS.items():
        tool = tools[name]
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is read_only
        assert tool.annotations.destructive_hint is destructive
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert "bank" in tool.input_schema["properties"]
    assert tools["memory_retain"].input_schema["required"] == ["content"]
    assert tools["memory_recall"].input_schema["required"] == ["query"]

    r = await client.call_tool(
        "memory_retain", {"content": "the deploy key rotates monthly", "tags": ["ops"]}
    )
    assert not r.is_error, r.content
    memory_id = r.structured_content["id"]
    r = await client.call_tool("memory_recall", {"query": "when does the deploy key rotate"})
    assert not r.is_error
    hits = r.structured_content["memories"]
    assert hits[0]["id"] == memory_id and hits[0]["tags"] == ["ops"]
    assert hits[0]["context"] is None  # retained without one
    r = await client.call_tool("memory_reflect", {"query": "deploy key"})
    assert memory_id in r.content[0].text
    r = await client.call_tool("memory_get", {"id": memory_id})
    assert r.structured_content["content"] == "the deploy key rotates monthly"
    r = await client.call_tool("memory_bank_config_get", {})
    assert not r.is_error and r.structured_content == {}
    r = await client.call_tool("memory_forget", {"id": memory_id})
    assert r.structured_content == {"id": memory_id, "forgotten": True, "trashed": True}
    turns = [
        {"speaker": "Ana", "text": "the staging database moved to the new cluster"},
        {"speaker": "Ben", "text": "ok, noted"},
    ]
    r = await client.call_tool("memory_retain_conversation", {"turns": turns, "bank": "chat"})
    assert not r.is_error, r.content
    ids = r.structured_content["ids"]
    assert len(ids) == 2
    r = await client.call_tool("memory_get", {"id": ids[1], "bank": "chat"})
    assert r.structured_content["content"] == "Ben: ok, noted"
    assert r.structured_content["context"] == turns[0]["text"]
    # recall shows each memory's context, in what the model reads as in the structured result
    r = await client.call_tool("memory_recall", {"query": "ok noted", "bank": "chat"})
    assert not r.is_error, r.content
    for shown in (r.structured_content, json.loads(r.content[0].text)):
        contexts = {h["id"]: h["context"] for h in shown["memories"]}
        assert contexts[ids[1]] == turns[0]["text"], contexts
    return {"id": memory_id}


async def errors(client: Client) -> None:
    """Tool errors are MCP tool errors with the HTTP surface's message, never a crash."""
    r = await client.call_tool("memory_retain", {"content": "   "})
    assert r.is_error and r.content[0].text == "content must not be blank"
    r = await client.call_tool("memory_recall", {"query": "x", "limit": 0})
    assert r.is_error and r.content[0].text == "limit must be between 1 and 100, got 0"
    r = await client.call_tool("memory_get", {"id": "mem_nope"})
    assert r.is_error and r.content[0].text == "no memory 'mem_nope' in bank 'default'"
    r = await client.call_tool("memory_forget", {"id": "mem_nope"})
    assert r.is_error and "no memory" in r.content[0].text
    r = await client.call_tool("memory_bank_config_get", {"bank": "never"})
    assert r.is_error and r.content[0].text == "no bank 'never'"
    r = await client.call_tool("memory_recall", {"query": "x", "bank": ""})
    assert r.is_error and "bank" in r.content[0].text
    r = await client.call_tool(
        "memory_retain_conversation",
        {"turns": [{"speaker": "Ana", "text": "fine"}, {"speaker": "Ben"}], "bank": "bad"},
    )
    assert r.is_error and r.content[0].text == "turns[1]: text must be a non-empty string"
    r = await client.call_tool("memory_bank_config_get", {"bank": "bad"})
    assert r.is_error and r.content[0].text == "no bank 'bad'"  # nothing was written
    # still serving after the errors
    r = await client.call_tool("memory_recall", {"query": "anything"})
    assert not r.is_error


@pytest.mark.parametrize("mode", MODES)
def test_stdio_roundtrip(tmp_path: Path, mode: str) -> None:
    db = tmp_path / "memory.db"

    async def main() -> None:
        async with Client(stdio(db), mode=mode) as client:
            assert client.server_info is not None and client.server_info.name == "memwire"
            await exercise(client)
            await errors(client)

    anyio.run(main)


def test_stdio_pinned_bank(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"

    async def main() -> None:
        async with Client(stdio(db, "--bank", "proj"), mode="legacy") as client:
            r = await client.call_tool("memory_retain", {"content": "pinned"})
            assert not r.is_error
            r = await client.call_tool("memory_retain", {"content": "x", "bank": "proj"})
            assert not r.is_error
            r = await client.call_tool("memory_recall", {"query": "pinned", "bank": "other"})
            assert r.is_error
            assert r.content[0].text == (
                "this MCP endpoint is pinned to bank 'proj'; it cannot use bank 'other'"
            )

    anyio.run(main)
    with Memory(db) as memory:
        assert memory.banks() == ["proj"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Memory]]:
    with Memory(tmp_path / "memory.db") as memory, serve_in_thread(memory) as url:
        yield url, memory


@pytest.mark.parametrize("mode", MODES)
def test_streamable_http_roundtrip(served: tuple[str, Memory], mode: str) -> None:
    url, _ = served

    async def main() -> None:
        async with Client(f"{url}/mcp", mode=mode) as client:
            await exercise(client)
            await errors(client)

    anyio.run(main)


@pytest.mark.parametrize("mode", MODES)
def test_streamable_http_pins_the_bank_in_the_url(served: tuple[str, Memory], mode: str) -> None:
    url, memory = served

    async def main() -> None:
        async with Client(f"{url}/mcp/team-a", mode=mode) as client:
            r = await client.call_tool("memory_retain", {"content": "team a fact"})
            assert not r.is_error
            r = await client.call_tool("memory_recall", {"query": "fact", "bank": "team-b"})
            assert r.is_error and "pinned to bank 'team-a'" in r.content[0].text

    anyio.run(main)
    assert memory.banks() == ["team-a"]


def test_tool_error_matches_http_error(served: tuple[str, Memory]) -> None:
    import httpx

    url, _ = served
    http = httpx.post(f"{url}/banks/default/recall", json={"query": "x", "budget": "9"})
    assert http.status_code == 400

    async def main() -> str:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            r = await client.call_tool("memory_recall", {"query": "x", "budget": "9"})
            assert r.is_error
            return str(r.content[0].text)

    assert anyio.run(main) == http.json()["error"]


def test_plain_server_does_not_import_the_mcp_sdk(tmp_path: Path) -> None:
    """Idle memory: the SDK loads only when someone speaks MCP."""
    import subprocess

    code = (
        "import sys\n"
        "from memwire.memory import Memory\n"
        "from memwire.server.testing import serve_in_thread\n"
        "import httpx\n"
        f"with Memory({str(tmp_path / 'm.db')!r}) as m, serve_in_thread(m) as url:\n"
        "    assert httpx.get(url + '/health').text == 'ok'\n"
        "    httpx.post(url + '/banks/a/retain', json={'content': 'x'})\n"
        "    print('mcp' in sys.modules, 'mcp_types' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False False"


CONFLICT = (
    "document 'spec' already has a memory in bank 'default'; "
    "use update_mode='replace' to replace it"
)


def test_unknown_tool_is_a_tool_error_never_another_tool(served: tuple[str, Memory]) -> None:
    url, memory = served
    memory.retain("exists", bank="default")

    async def main() -> None:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            for name in ("memory_nope", "memory_bank_config_gett", "", "memory_retain "):
                r = await client.call_tool(name, {"content": "sneaky", "id": "x"})
                assert r.is_error, name
                text = r.content[0].text
                assert text.startswith(f"unknown tool {name!r}; the tools are "), text
                assert "memory_retain" in text
            r = await client.call_tool("memory_bank_config_get", {})  # still serving
            assert not r.is_error

    anyio.run(main)
    assert [m.content for m in memory.memories(bank="default")] == ["exists"]


def test_call_dispatches_only_known_tools(tmp_path: Path) -> None:
    from memwire.errors import InvalidInputError
    from memwire.server import mcp_server
    from memwire.server.mcp_server import call

    assert [t.name for t in mcp_server.TOOLS] == [s.name for s in mcp_server.SPECS]
    assert {t.name for t in mcp_server.TOOLS} == set(TOOLS)
    with Memory(tmp_path / "m.db") as memory:
        memory.retain("x", bank="b")
        for name in ("memory_bank_config", "config_get", "MEMORY_RETAIN", "tools/list"):
            with pytest.raises(InvalidInputError, match="unknown tool"):
                call(memory, name, {"content": "y", "bank": "b"}, None)
        assert memory.stats(bank="b")["count"] == 1
        assert call(memory, "memory_bank_config_get", {"bank": "b"}, None) == {}


def test_an_undeclared_argument_is_a_tool_error(tmp_path: Path) -> None:
    # Every inputSchema says additionalProperties: false; a misspelt argument (here the
    # memory-wire spelling `max_results`) must not be silently dropped.
    from memwire.errors import InvalidInputError
    from memwire.server.mcp_server import call

    with Memory(tmp_path / "m.db") as memory:
        memory.retain("the api listens on port 8080", bank="b")
        with pytest.raises(
            InvalidInputError, match=r"memory_recall takes no argument 'max_results'"
        ):
            call(memory, "memory_recall", {"query": "port", "max_results": 3, "bank": "b"}, None)
        with pytest.raises(InvalidInputError, match="memory_retain takes no argument 'tag'"):
            call(memory, "memory_retain", {"content": "other", "tag": "x", "bank": "b"}, None)
        assert memory.stats(bank="b")["count"] == 1
        hits = call(memory, "memory_recall", {"query": "port", "limit": 3, "bank": "b"}, None)
        assert len(hits["memories"]) == 1


def test_nothing_relevant_finds_nothing_over_mcp_by_default(served: tuple[str, Memory]) -> None:
    url, memory = served
    memory.retain("the staging database runs on port 5433")
    memory.retain("deploys go out every tuesday after standup")
    query = "what is the capital of France"

    async def main() -> None:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            r = await client.call_tool("memory_recall", {"query": query})
            assert not r.is_error and r.structured_content["memories"] == []
            r = await client.call_tool("memory_recall", {"query": query, "min_score": 0})
            assert r.structured_content["memories"]
            r = await client.call_tool("memory_reflect", {"query": query})
            assert r.content[0].text.startswith("No memories")

    anyio.run(main)


def test_min_score_over_mcp(served: tuple[str, Memory]) -> None:
    url, memory = served
    strong = memory.retain("red apples grow in the orchard by the river")
    weak = memory.retain("apples are sold at the market")
    query = "red apples orchard river"
    scores = [h.score for h in memory.recall(query, min_score=0)]
    assert len(scores) == 2 and scores[0] > scores[1]
    floor = (scores[0] + scores[1]) / 2

    async def main() -> None:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            r = await client.call_tool("memory_recall", {"query": query, "min_score": floor})
            assert not r.is_error
            assert [h["id"] for h in r.structured_content["memories"]] == [strong]
            r = await client.call_tool("memory_recall", {"query": query, "min_score": 0})
            assert len(r.structured_content["memories"]) == 2
            r = await client.call_tool("memory_reflect", {"query": query, "min_score": floor})
            assert strong in r.content[0].text and weak not in r.content[0].text
            r = await client.call_tool("memory_reflect", {"query": query, "min_score": 1})
            assert r.content[0].text.startswith("No memories")
            r = await client.call_tool("memory_recall", {"query": query, "min_score": -1})
            assert r.is_error
            assert r.content[0].text == "min_score must be a finite number >= 0, got -1"
            r = await client.call_tool("memory_reflect", {"query": query, "min_score": "high"})
            assert r.is_error and r.content[0].text == "min_score must be a number, got string"

    anyio.run(main)


def test_conflict_is_a_tool_error_with_the_message(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"

    async def main() -> None:
        async with Client(stdio(db), mode="legacy") as client:
            r = await client.call_tool(
                "memory_retain", {"content": "revision one", "document_id": "spec"}
            )
            assert not r.is_error
            r = await client.call_tool(
                "memory_retain",
                {"content": "revision two", "document_id": "spec", "update_mode": "append"},
            )
            assert r.is_error and r.content[0].text == CONFLICT

    anyio.run(main)
    with Memory(db) as memory:
        assert [m.content for m in memory.memories()] == ["revision one"]


def test_conflict_over_http_mcp_matches_the_http_route(served: tuple[str, Memory]) -> None:
    import httpx

    url, memory = served
    memory.retain("revision one", document_id="spec")
    body = {"content": "revision two", "document_id": "spec", "update_mode": "append"}
    http = httpx.post(f"{url}/banks/default/retain", json=body)
    assert http.status_code == 409

    async def main() -> str:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            r = await client.call_tool("memory_retain", body)
            assert r.is_error
            return str(r.content[0].text)

    assert anyio.run(main) == http.json()["error"] == CONFLICT


def test_stdio_opens_the_store_of_the_environment(tmp_path: Path) -> None:
    """``memwire mcp`` without --db follows the store setting ($MEMWIRE_STORE here)."""
    configured = tmp_path / "configured.db"
    home = tmp_path / "home"
    home.mkdir()
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memwire", "mcp"],
        env={
            **{k: v for k, v in os.environ.items() if k != "MEMWIRE_BANK"},
            "MEMWIRE_HOME": str(home),
            "MEMWIRE_STORE": f"sqlite:{configured}",
        },
        cwd=str(tmp_path),
    )

    async def main() -> None:
        async with Client(params, mode="legacy") as client:
            r = await client.call_tool("memory_retain", {"content": "where the setting says"})
            assert not r.is_error

    anyio.run(main)
    with Memory(configured) as memory:
        found = [r.content for b in memory.banks() for r in memory.memories(bank=b)]
        assert found == ["where the setting says"]
    assert not (home / "memory.db").exists()


def test_every_memory_served_over_mcp_carries_its_date(served: tuple[str, Memory]) -> None:
    """What the model reads (the tool result's text), not only the structured content."""
    url, memory = served
    old = memory.retain("the billing API listens on port 8080", created_at="2025-05-17")
    new = memory.retain("the billing API moved to port 9090", created_at="2026-02-03T10:00:00Z")
    query = "billing API port"

    async def main() -> None:
        async with Client(f"{url}/mcp", mode="legacy") as client:
            r = await client.call_tool("memory_recall", {"query": query})
            assert not r.is_error
            shown = json.loads(r.content[0].text)["memories"]
            assert {h["id"]: h["created_at"][:10] for h in shown} == {
                old: "2025-05-17",
                new: "2026-02-03",
            }
            r = await client.call_tool("memory_reflect", {"query": query})
            text = r.content[0].text
            assert f"[{old}] (2025-05-17) the billing API listens" in text
            assert f"[{new}] (2026-02-03) the billing API moved" in text

    anyio.run(main)


def test_memwire_mcp_tunes_the_heap_before_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``memwire mcp`` is a long-running process like ``memwire serve``: it fixes the mmap
    threshold (memwire._heap) before it serves, so freed large blocks go back to the system."""
    from memwire import _heap
    from memwire.__main__ import main as cli
    from memwire.server import mcp_server

    calls: list[str] = []
    monkeypatch.setattr(_heap, "tune_for_server", lambda: calls.append("tune") or True)

    def serve(db: str | None, **kwargs: Any) -> None:
        calls.append(f"serve {Path(db or '').name} {kwargs['bank']}")

    monkeypatch.setattr(mcp_server, "run_stdio", serve)
    assert cli(["mcp", "--db", str(tmp_path / "m.db"), "--bank", "b"]) == 0
    assert calls == ["tune", "serve m.db b"]
