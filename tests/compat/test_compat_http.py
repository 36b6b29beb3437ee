"""memwire's /mw routes answer a memory-wire client as memory-wire 0.7.0 does.

The expected answers were recorded from the real binary by record_peer.py (committed in
fixtures/); here the same requests go to a real memwire server over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from compat_scenario import STEPS, play
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread
from record_peer import FIXTURE, send_with


@pytest.fixture
def mw(tmp_path: Path) -> Iterator[tuple[Memory, httpx.Client]]:
    with (
        Memory(tmp_path / "memory.db") as memory,
        serve_in_thread(memory) as url,
        httpx.Client(base_url=url + "/mw", timeout=30) as client,
    ):
        yield memory, client


def test_the_recording_is_of_this_scenario() -> None:
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert recorded["peer"] == "memory-wire 0.7.0"
    assert [(s["request"]["method"], s["request"]["path"]) for s in recorded["steps"]] == [
        (step.method, step.path) for step in STEPS
    ]


def test_mw_routes_answer_as_memory_wire_did(mw: tuple[Memory, httpx.Client]) -> None:
    _, client = mw
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))["steps"]
    got = play(send_with(client))
    for want, have in zip(expected, got, strict=True):
        assert have == want, f"{want['request']} ({want['note']})"


def test_memory_wire_config_acts_through_memwire_keys(mw: tuple[Memory, httpx.Client]) -> None:
    memory, client = mw
    long = "river " * 200
    assert (
        client.post("/banks/c/retain", json={"content": long, "tags": ["Mixed"]}).status_code == 200
    )
    full = client.post("/banks/c/recall", json={"query": "river"}).json()
    memory.set_config("c", {"fusion_weights": [1, 0, 0]})  # a memwire-only key
    r = client.put("/banks/c/config", json={"recallMaxTokens": 5, "retainTags": ["Team"], "x": 1})
    assert r.status_code == 200 and r.json() == {
        "recallMaxTokens": 5,
        "retainTags": ["Team"],
        "x": 1,
    }
    native = memory.get_config("c")
    assert native["recall_max_tokens"] == 5 and native["retain_tags"] == ["team"]
    assert native["fusion_weights"] == [1.0, 0.0, 0.0]  # left as it was
    assert native["memory_wire"] == {"recallMaxTokens": 5, "retainTags": ["Team"], "x": 1}
    cut = client.post("/banks/c/recall", json={"query": "river"}).json()
    assert len(cut) == 1 and len(cut[0]) < len(full[0])  # the budget acts
    # tags are stored lowercased, retainTags' too, and a filter matches in any case
    (stored,) = memory.memories(bank="c")
    assert stored.tags == ("mixed",)
    mid = client.post("/banks/c/retain", json={"content": "tagged by config"}).json()["id"]
    assert memory.get(mid).tags == ("team",)
    assert client.post("/banks/c/recall", json={"query": "tagged", "tags": ["TEAM"]}).json() == [
        "tagged by config"
    ]
    # PUT replaces: the keys it leaves out stop acting
    assert client.put("/banks/c/config", json={}).json() == {}
    native = memory.get_config("c")
    assert "recall_max_tokens" not in native and "retain_tags" not in native
    assert native["fusion_weights"] == [1.0, 0.0, 0.0]
    # a value memwire could not act on is refused, naming the key the client sent
    for body, key in (
        ({"recallMaxTokens": "x"}, "recallMaxTokens"),
        ({"ttl_days": "x"}, "ttl_days"),
    ):
        r = client.put("/banks/c/config", json=body)
        assert (
            r.status_code == 400
            and key in r.text
            and r.headers["content-type"].startswith("text/plain")
        )
    assert client.get("/banks/c/config").json() == {}


def test_a_natively_configured_bank_shows_memory_wire_names(
    mw: tuple[Memory, httpx.Client],
) -> None:
    memory, client = mw
    memory.set_config("n", {"recall_max_tokens": 300, "retain_tags": ["a"], "ttl_days": 7})
    assert client.get("/banks/n/config").json() == {
        "recallMaxTokens": 300,
        "retainTags": ["a"],
        "ttl_days": 7,
    }


def test_memories_page_oldest_first_across_memwire_pages(
    mw: tuple[Memory, httpx.Client], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, client = mw
    import memwire.memory.api as api

    monkeypatch.setattr(api, "MAX_LIST_LIMIT", 3)  # several memwire pages per memory-wire page
    days = [f"2024-01-{d:02d}" for d in range(1, 11)]
    ids = memory.retain_many(
        [{"content": f"note {n}", "created_at": day} for n, day in enumerate(days)], bank="p"
    )
    r = client.get("/banks/p/memories", params={"limit": 7, "offset": 2})
    assert r.headers["x-total-count"] == "10"
    assert [m["id"] for m in r.json()] == ids[2:9]
    assert r.json()[0]["created_at"] == "2024-01-03T00:00:00.000Z"
    assert [m["id"] for m in client.get("/banks/p/memories?offset=8").json()] == ids[8:]
    assert client.get("/banks/p/memories?offset=20").json() == []
