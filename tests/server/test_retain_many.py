"""POST /banks/{bank}/retain_many and the memory_retain_many tool: one id per item, in order;
a bad item anywhere is a clear 400 and nothing is written."""

from __future__ import annotations

import sys
from typing import Any

import httpx
import pytest
from memwire.memory import Memory
from memwire.server import ops
from memwire.server.body import STEPWISE_MIN_BYTES
from memwire.server.mcp_server import call
from memwire.server.threads import BATCH_SWITCH_INTERVAL_S


def count(memory: Memory, bank: str = "b") -> int:
    return int(memory.stats(bank=bank)["count"]) if bank in memory.banks() else 0


def test_a_batch_is_stored_in_order(client: httpx.Client, memory: Memory) -> None:
    items: list[Any] = [
        "the deploy runs at nine",
        {"content": "alice owns the parser", "tags": ["team"], "context": "standup"},
        {"content": "v2 of the spec", "document_id": "spec", "created_at": "2024-05-01"},
        "the deploy runs at nine",  # a duplicate: the first one's id
    ]
    r = client.post("/banks/b/retain_many", json={"items": items})
    assert r.status_code == 200, r.text
    ids = r.json()["ids"]
    assert len(ids) == 4 and ids[3] == ids[0] and len(set(ids)) == 3
    assert memory.get(ids[1]).tags == ("team",) and memory.get(ids[1]).context == "standup"
    assert memory.get(ids[2]).document_id == "spec"
    assert memory.get(ids[2]).created_at.date().isoformat() == "2024-05-01"
    assert [h.id for h in memory.recall("parser owner", bank="b", limit=1)] == [ids[1]]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([], "items must hold 1 to 10,000 memories, got 0"),
        ("text", "items must be an array, got string"),
        (["ok", 5], "items[1]: each item must be a JSON object, got number"),
        (["ok", {"tags": ["x"]}], "items[1]: content is required"),
        (["ok", {"content": "x", "tags": "x"}], "items[1]: tags must be an array of strings"),
        (
            ["ok", {"content": "x", "colour": "red", "bank": "b"}],
            "items[1]: unknown field 'bank' for retain_many_item; the fields are content, "
            "context, created_at, document_id, supersedes, tags, update_mode",
        ),
        (["ok", "   "], "items[1]: content must not be blank"),
        (["ok", {"content": "x", "update_mode": "merge"}], "items[1]: update_mode must be"),
        (["ok", {"content": "x", "created_at": "yesterday"}], "items[1]: "),
    ],
)
def test_a_bad_item_writes_nothing(
    client: httpx.Client, memory: Memory, items: Any, message: str
) -> None:
    memory.retain("already here", bank="b")
    r = client.post("/banks/b/retain_many", json={"items": items})
    assert r.status_code == 400, r.text
    assert r.json()["error"].startswith(message), r.json()
    assert count(memory) == 1


def test_too_many_items_are_refused(client: httpx.Client, memory: Memory) -> None:
    r = client.post("/banks/b/retain_many", json={"items": ["x"] * 10_001})
    assert r.status_code == 400 and "1 to 10,000" in r.json()["error"]
    assert count(memory) == 0


def test_a_conflict_fails_the_whole_batch(client: httpx.Client, memory: Memory) -> None:
    memory.retain("v1", bank="b", document_id="doc")
    body = {"items": ["fresh", {"content": "v2", "document_id": "doc", "update_mode": "append"}]}
    r = client.post("/banks/b/retain_many", json=body)
    assert r.status_code == 409, r.text
    assert count(memory) == 1


def test_the_mcp_tool_answers_as_the_route(memory: Memory) -> None:
    result = call(memory, "memory_retain_many", {"items": ["a", {"content": "b"}]}, None)
    assert len(result["ids"]) == 2 and count(memory, "default") == 2
    with pytest.raises(Exception, match=r"items\[0\]: content must not be blank"):
        call(memory, "memory_retain_many", {"items": [" "]}, None)
    with pytest.raises(Exception, match=r"items\[1\]: unknown field 'colour' for retain_many"):
        call(memory, "memory_retain_many", {"items": ["c", {"content": "d", "colour": 1}]}, None)
    assert count(memory, "default") == 2


def test_a_large_batch_is_read_stepwise_with_the_same_answers(
    client: httpx.Client, memory: Memory
) -> None:
    # Bodies of 256 KiB and more are parsed on a worker thread, element by element
    # (memwire/server/body.py): the same items stored, the same refusals.
    items = [f"note {i}: " + "the staging deploy runs at nine " * 12 for i in range(800)]
    body = httpx.Request("POST", "/", json={"items": items}).content
    assert len(body) >= STEPWISE_MIN_BYTES
    r = client.post("/banks/b/retain_many", content=body)
    assert r.status_code == 200, r.text
    assert len(r.json()["ids"]) == 800 and count(memory) == 800
    broken = body[:-2] + b",]}"
    r = client.post("/banks/c/retain_many", content=broken)
    assert r.status_code == 400
    assert r.json()["error"].startswith("invalid JSON: Expecting value at position")
    assert count(memory, "c") == 0


def test_a_batch_runs_with_the_shorter_switch_interval(
    client: httpx.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # memwire.server.threads.batch_write: shorter while the write runs, restored after.
    seen: list[float] = []
    original = ops.retain_many

    def retain_many(memory: Memory, bank: str, body: object) -> dict[str, list[str]]:
        seen.append(sys.getswitchinterval())
        return original(memory, bank, body)

    monkeypatch.setattr(ops, "retain_many", retain_many)
    before = sys.getswitchinterval()
    r = client.post("/banks/b/retain_many", json={"items": ["a", "b"]})
    assert r.status_code == 200, r.text
    assert seen == [pytest.approx(min(before, BATCH_SWITCH_INTERVAL_S), abs=2e-6)]
    assert sys.getswitchinterval() == before
