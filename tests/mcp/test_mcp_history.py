"""Memory that changes over MCP (issue 17): update, history, trash, restore, purge,
``supersedes`` and ``as_of``, through the official client over stdio and streamable HTTP."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

pytest.importorskip("mcp")
from mcp import Client
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread
from test_mcp import stdio

NEW_TOOLS = ("memory_update", "memory_history", "memory_trash", "memory_restore", "memory_purge")


async def call(client: Client, name: str, arguments: dict[str, Any]) -> Any:
    r = await client.call_tool(name, arguments)
    assert not r.is_error, (name, r.content)
    # The text content is the structured result as JSON: what a model reads, dates in-band.
    assert json.loads(r.content[0].text) == r.structured_content
    return r.structured_content


async def refused(client: Client, name: str, arguments: dict[str, Any]) -> str:
    r = await client.call_tool(name, arguments)
    assert r.is_error, (name, r.content)
    return str(r.content[0].text)


async def exercise(client: Client) -> None:
    listed = {t.name: t for t in (await client.list_tools()).tools}
    assert set(NEW_TOOLS) <= set(listed)
    assert "irreversible" in (listed["memory_purge"].description or "").lower()
    assert "supersedes" in listed["memory_retain"].input_schema["properties"]
    assert "as_of" in listed["memory_recall"].input_schema["properties"]
    assert listed["memory_update"].input_schema["required"] == ["id"]

    old = (await call(client, "memory_retain", {"content": "the API runs on port 8080"}))["id"]
    time.sleep(0.002)  # distinct instants for as_of, not a timing assertion
    new = (
        await call(
            client,
            "memory_retain",
            {"content": "the API runs on port 9090", "supersedes": [old], "tags": ["api"]},
        )
    )["id"]
    hits = (await call(client, "memory_recall", {"query": "API port", "min_score": 0}))["memories"]
    assert [h["id"] for h in hits] == [new] and hits[0]["created_at"]
    was = await call(client, "memory_get", {"id": old})
    assert was["status"] == "superseded" and was["superseded_by"] == new
    then = await call(
        client, "memory_recall", {"query": "API port", "min_score": 0, "as_of": was["retained_at"]}
    )
    assert [h["id"] for h in then["memories"]] == [old]
    assert "as_of" in await refused(client, "memory_recall", {"query": "x", "as_of": "soon"})

    # history: every version with its status and dates, in the text a model reads too
    history = await call(client, "memory_history", {"id": new})
    assert [(v["id"], v["status"]) for v in history["versions"]] == [
        (old, "superseded"),
        (new, "live"),
    ]
    assert history["versions"][0]["archived_at"] and history["versions"][1]["created_at"]

    # update: tags in place, then content as a new version
    same = await call(client, "memory_update", {"id": new, "tags": ["api", "ports"]})
    assert same["id"] == new and same["tags"] == ["api", "ports"]
    newest = await call(client, "memory_update", {"id": new, "content": "the API runs on 7070"})
    assert newest["id"] != new and newest["status"] == "live"
    message = await refused(client, "memory_update", {"id": old, "tags": ["x"]})
    assert "superseded" in message
    assert await refused(client, "memory_update", {"id": new, "nope": 1})

    # forget -> trash -> restore -> purge
    gone = await call(client, "memory_forget", {"id": newest["id"]})
    assert gone["trashed"] is True
    trash = await call(client, "memory_trash", {})
    assert [m["id"] for m in trash["memories"]] == [newest["id"]]
    assert trash["memories"][0]["status"] == "trashed" and trash["memories"][0]["archived_at"]
    page = await call(client, "memory_trash", {"limit": 1, "offset": 1})
    assert page == {"memories": []}
    restored = await call(client, "memory_restore", {"id": newest["id"]})
    assert restored == {"id": newest["id"], "restored": True}
    hits = (await call(client, "memory_recall", {"query": "API runs", "min_score": 0}))["memories"]
    assert [h["id"] for h in hits] == [newest["id"]]
    assert "mem_nope" in await refused(client, "memory_restore", {"id": "mem_nope"})
    purged = await call(client, "memory_purge", {"id": old})
    assert purged == {"id": old, "purged": True}
    assert "mem_" in await refused(client, "memory_get", {"id": old})
    assert "mem_" in await refused(client, "memory_purge", {"id": old})


def test_stdio(tmp_path: Path) -> None:
    async def main() -> None:
        async with Client(stdio(tmp_path / "memory.db"), mode="legacy") as client:
            await exercise(client)

    anyio.run(main)


def test_streamable_http_and_the_same_errors_as_http(tmp_path: Path) -> None:
    with Memory(tmp_path / "memory.db") as memory, serve_in_thread(memory) as url:

        async def main() -> None:
            async with Client(f"{url}/mcp", mode="auto") as client:
                await exercise(client)
                first = memory.retain("a fact", bank="default")
                memory.forget(first, bank="default")
                http = httpx.patch(f"{url}/banks/default/memories/{first}", json={"tags": ["a"]})
                assert http.status_code == 409
                mcp = await refused(client, "memory_update", {"id": first, "tags": ["a"]})
                assert mcp == http.json()["error"]

        anyio.run(main)


def test_hints_say_which_tools_a_repeat_changes() -> None:
    from memwire.server.mcp_server import TOOLS

    hints = {t.name: t.annotations for t in TOOLS}
    for name in ("memory_update", "memory_restore", "memory_purge"):
        annotations = hints[name]
        assert annotations is not None and annotations.idempotent_hint is False, name
    purge = hints["memory_purge"]
    assert purge is not None and purge.destructive_hint is True
