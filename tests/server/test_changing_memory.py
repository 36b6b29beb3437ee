"""Memory that changes over HTTP (issue 17): supersede, update, history, as_of, trash, restore,
purge, over a real server, on the SQLite store and on the PostgreSQL one (tests/postgres_support:
skipped without a server, failed when one is required). Every route's errors are 4xx with the
API's message and change nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from memwire.memory import Memory


@pytest.fixture(params=["sqlite", "postgres"])
def memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    """The served Memory (the server fixtures of conftest.py take this one)."""
    if request.param == "postgres":
        from postgres_support import make_store

        with Memory(store=make_store(tmp_path)) as mem:
            yield mem
        return
    with Memory(tmp_path / "memory.db") as mem:
        yield mem


def retain(client: httpx.Client, bank: str, content: str, **fields: object) -> str:
    r = client.post(f"/banks/{bank}/retain", json={"content": content, **fields})
    assert r.status_code == 200, r.text
    memory_id: str = r.json()["id"]
    return memory_id


def recall_ids(client: httpx.Client, bank: str, query: str, **fields: object) -> list[str]:
    body = {"query": query, "format": "full", "min_score": 0, **fields}
    r = client.post(f"/banks/{bank}/recall", json=body)
    assert r.status_code == 200, r.text
    return [hit["id"] for hit in r.json()]


def record(client: httpx.Client, bank: str, memory_id: str) -> dict[str, Any]:
    r = client.get(f"/banks/{bank}/memories/{memory_id}")
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def listed(client: httpx.Client, bank: str) -> list[str]:
    return [m["id"] for m in client.get(f"/banks/{bank}/memories").json()]


def test_retain_supersedes_and_history(client: httpx.Client) -> None:
    old = retain(client, "p", "the API listens on port 8080")
    new = retain(client, "p", "the API listens on port 9090", supersedes=[old])
    assert recall_ids(client, "p", "which port does the API listen on") == [new]
    assert listed(client, "p") == [new]
    was = record(client, "p", old)
    assert was["status"] == "superseded" and was["superseded_by"] == new
    assert was["archived_at"] is not None
    now = record(client, "p", new)
    assert now["status"] == "live" and now["superseded_by"] is None and now["archived_at"] is None
    for asked in (old, new):
        r = client.get(f"/banks/p/memories/{asked}/history")
        assert r.status_code == 200, r.text
        versions = r.json()["versions"]
        assert r.json()["id"] == asked
        assert [(v["id"], v["status"]) for v in versions] == [
            (old, "superseded"),
            (new, "live"),
        ]


def test_supersedes_refusals_write_nothing(client: httpx.Client) -> None:
    old = retain(client, "q", "the cache lives in redis")
    new = retain(client, "q", "the cache lives in memcached", supersedes=[old])
    cases = [
        ({"supersedes": [old]}, 409, "superseded"),  # not live any more
        ({"supersedes": ["mem_nope"]}, 404, "mem_nope"),
        ({"supersedes": "mem_nope"}, 400, "supersedes must be an array of strings"),
        ({"supersedes": [3]}, 400, "supersedes must be an array of strings"),
    ]
    for extra, status, needle in cases:
        r = client.post("/banks/q/retain", json={"content": "the cache is gone", **extra})
        assert r.status_code == status, (extra, r.text)
        assert needle in r.json()["error"]
    assert listed(client, "q") == [new]
    assert recall_ids(client, "q", "cache is gone") == [new]


def test_retain_many_items_supersede_in_one_transaction(client: httpx.Client) -> None:
    a = retain(client, "m", "standup is at nine")
    b = retain(client, "m", "retro is on fridays")
    r = client.post(
        "/banks/m/retain_many",
        json={
            "items": [
                {"content": "standup is at ten", "supersedes": [a]},
                {"content": "retro is on thursdays", "supersedes": [b]},
            ]
        },
    )
    assert r.status_code == 200, r.text
    ten, thursday = r.json()["ids"]
    assert sorted(listed(client, "m")) == sorted([ten, thursday])
    assert record(client, "m", a)["superseded_by"] == ten
    # One bad item (a superseded id) fails the whole batch: nothing of it is written.
    r = client.post(
        "/banks/m/retain_many",
        json={"items": ["a new fact", {"content": "standup is at eleven", "supersedes": [a]}]},
    )
    assert r.status_code == 409, r.text
    assert sorted(listed(client, "m")) == sorted([ten, thursday])
    r = client.post("/banks/m/retain_many", json={"items": [{"content": "x", "supersedes": 1}]})
    assert r.status_code == 400
    assert r.json()["error"] == "items[0]: supersedes must be an array of strings, got number"


def test_recall_as_of(client: httpx.Client) -> None:
    old = retain(client, "t", "the office wifi password rotates weekly")
    time.sleep(0.002)  # distinct instants, not a timing assertion: as_of compares them
    new = retain(client, "t", "the office wifi password rotates daily", supersedes=[old])
    was, now = record(client, "t", old), record(client, "t", new)
    assert was["retained_at"] < was["archived_at"] and was["retained_at"] < now["retained_at"]
    query = "office wifi password rotates"
    assert recall_ids(client, "t", query, as_of=was["retained_at"]) == [old]
    assert recall_ids(client, "t", query, as_of=now["retained_at"]) == [new]
    assert recall_ids(client, "t", query) == [new]
    assert recall_ids(client, "t", query, as_of="2000-01-01") == []
    assert recall_ids(client, "t", query, as_of="2999-01-01T00:00:00+00:00") == [new]
    for bad in ("last tuesday", 20240101, ["2024-01-01"]):
        r = client.post("/banks/t/recall", json={"query": query, "as_of": bad})
        assert r.status_code == 400, (bad, r.text)
        assert "as_of" in r.json()["error"]


def test_patch_tags_in_place_then_content_as_a_new_version(client: httpx.Client) -> None:
    first = retain(client, "u", "deploys run on fridays", tags=["ops"])
    r = client.patch(f"/banks/u/memories/{first}", json={"tags": ["Release", "ops"]})
    assert r.status_code == 200, r.text
    assert r.json()["id"] == first and r.json()["tags"] == ["release", "ops"]
    assert recall_ids(client, "u", "deploys", tags=["release"]) == [first]
    assert recall_ids(client, "u", "deploys", exclude_tags=["release"]) == []
    # The same tags again: nothing changes, same id.
    r = client.patch(f"/banks/u/memories/{first}", json={"tags": ["release", "ops"]})
    assert r.status_code == 200 and r.json()["id"] == first
    # New content: a new memory supersedes the old one, with its tags.
    r = client.patch(f"/banks/u/memories/{first}", json={"content": "deploys run on mondays"})
    assert r.status_code == 200, r.text
    second = r.json()["id"]
    assert second != first and r.json()["status"] == "live"
    assert r.json()["tags"] == ["release", "ops"]
    assert recall_ids(client, "u", "deploys run") == [second]
    assert record(client, "u", first)["superseded_by"] == second
    history = client.get(f"/banks/u/memories/{second}/history").json()["versions"]
    assert [v["id"] for v in history] == [first, second]
    # The old version is history: updating it is a conflict naming its status.
    r = client.patch(f"/banks/u/memories/{first}", json={"tags": ["x"]})
    assert r.status_code == 409 and "superseded" in r.json()["error"]
    assert record(client, "u", first)["tags"] == ["release", "ops"]


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({}, 400, ""),
        ({"id": "mem_other", "tags": ["a"]}, 400, "unknown field 'id' for update"),
        ({"tag": ["a"]}, 400, "unknown field 'tag' for update"),
        ({"tags": "ops"}, 400, "tags must be an array of strings"),
        ({"content": "   "}, 400, "content"),
        ([], 400, "must be a JSON object"),
    ],
)
def test_patch_refusals(
    client: httpx.Client, body: object, status: int, needle: str, memory: Memory
) -> None:
    target = retain(client, "v", "the linter runs in CI", tags=["ci"])
    r = client.patch(f"/banks/v/memories/{target}", json=body)
    assert r.status_code == status, r.text
    assert needle in r.json()["error"]
    assert memory.get(target, bank="v").tags == ("ci",)
    assert listed(client, "v") == [target]


def test_unknown_memory_is_404_on_every_route(client: httpx.Client) -> None:
    retain(client, "w", "something to make the bank")
    for method, path, body in [
        ("PATCH", "/banks/w/memories/mem_nope", {"tags": ["a"]}),
        ("GET", "/banks/w/memories/mem_nope/history", None),
        ("POST", "/banks/w/trash/mem_nope/restore", None),
        ("POST", "/banks/w/memories/mem_nope/purge", None),
        ("DELETE", "/banks/w/memories/mem_nope", None),
    ]:
        r = client.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
        assert "mem_nope" in r.json()["error"]


def test_forget_goes_to_the_trash_and_restore_brings_it_back(client: httpx.Client) -> None:
    keep = retain(client, "x", "the backup runs at midnight")
    gone = retain(client, "x", "the backup bucket is in eu-west-1")
    r = client.delete(f"/banks/x/memories/{gone}")
    assert r.status_code == 200
    assert r.json() == {"id": gone, "forgotten": True, "trashed": True}
    assert recall_ids(client, "x", "backup bucket") == [keep]
    assert listed(client, "x") == [keep]
    trashed = record(client, "x", gone)
    assert trashed["status"] == "trashed" and trashed["archived_at"] is not None
    r = client.get("/banks/x/trash")
    assert r.status_code == 200
    assert [(m["id"], m["status"]) for m in r.json()] == [(gone, "trashed")]
    # Forgetting it again: it is not live, and the message says where it is.
    r = client.delete(f"/banks/x/memories/{gone}")
    assert r.status_code == 404 and "trashed" in r.json()["error"]
    r = client.post(f"/banks/x/trash/{gone}/restore")
    assert r.status_code == 200, r.text
    assert r.json() == {"id": gone, "restored": True}
    assert sorted(recall_ids(client, "x", "backup bucket")) == sorted([keep, gone])
    assert record(client, "x", gone)["status"] == "live"
    assert client.get("/banks/x/trash").json() == []
    r = client.post(f"/banks/x/trash/{gone}/restore")
    assert r.status_code == 404
    r = client.post(f"/banks/x/trash/{keep}/restore", content=b'{"x": 1}')
    assert r.status_code == 400 and r.json()["error"] == "this route takes no request body"


def test_trash_pages_and_empties(client: httpx.Client) -> None:
    ids = [retain(client, "y", f"temporary note number {n}") for n in range(5)]
    for memory_id in ids:
        assert client.delete(f"/banks/y/memories/{memory_id}").json()["trashed"] is True
    whole = [m["id"] for m in client.get("/banks/y/trash").json()]
    assert sorted(whole) == sorted(ids)
    page = client.get("/banks/y/trash", params={"limit": 2, "offset": 1}).json()
    assert [m["id"] for m in page] == whole[1:3]
    for params, needle in [
        ({"limit": 0}, "limit must be between 1 and"),
        ({"page": 2}, "unknown query parameter 'page' for trash"),
    ]:
        r = client.get("/banks/y/trash", params=params)
        assert r.status_code == 400 and needle in r.json()["error"]
    # Only those trashed more than a day ago: none.
    r = client.post("/banks/y/trash/empty", json={"older_than_days": 1})
    assert r.status_code == 200 and r.json() == {"bank": "y", "purged": 0}
    for body, needle in [
        ({"older_than_days": "1"}, "older_than_days must be a number"),
        ({"days": 1}, "unknown field 'days' for empty_trash"),
    ]:
        r = client.post("/banks/y/trash/empty", json=body)
        assert r.status_code == 400 and needle in r.json()["error"]
    assert len(client.get("/banks/y/trash").json()) == 5
    r = client.post("/banks/y/trash/empty")  # no body: every trashed memory
    assert r.status_code == 200 and r.json() == {"bank": "y", "purged": 5}
    assert client.get("/banks/y/trash").json() == []
    for memory_id in ids:
        assert client.get(f"/banks/y/memories/{memory_id}").status_code == 404


def test_purge_in_any_state(client: httpx.Client) -> None:
    old = retain(client, "z", "the root password is hunter2-but-not-really")
    new = retain(client, "z", "the root password was rotated", supersedes=[old])
    trashed = retain(client, "z", "a note to throw away")
    client.delete(f"/banks/z/memories/{trashed}")
    for memory_id in (old, trashed):
        r = client.post(f"/banks/z/memories/{memory_id}/purge")
        assert r.status_code == 200, r.text
        assert r.json() == {"id": memory_id, "purged": True}
        assert client.get(f"/banks/z/memories/{memory_id}").status_code == 404
        assert client.get(f"/banks/z/memories/{memory_id}/history").status_code == 404
    # The purged version left the history; the live one stays.
    versions = client.get(f"/banks/z/memories/{new}/history").json()["versions"]
    assert [v["id"] for v in versions] == [new]
    assert client.get("/banks/z/trash").json() == []
    r = client.post(f"/banks/z/memories/{new}/purge", json={"really": True})
    assert r.status_code == 400
    assert client.post(f"/banks/z/memories/{new}/purge").status_code == 200
    assert recall_ids(client, "z", "root password") == []


def test_a_bank_without_a_trash_deletes_on_forget(client: httpx.Client) -> None:
    memory_id = retain(client, "nt", "a fact for a bank without trash")
    r = client.put("/banks/nt/config", json={"trash_days": 0})
    assert r.status_code == 200, r.text
    r = client.delete(f"/banks/nt/memories/{memory_id}")
    assert r.json() == {"id": memory_id, "forgotten": True, "trashed": False}
    assert client.get(f"/banks/nt/memories/{memory_id}").status_code == 404
    assert client.get("/banks/nt/trash").json() == []


@pytest.mark.parametrize("bank", ["acme/web", "acme%2Fweb", "owner/trash", "a/memories/b/c"])
def test_every_new_route_takes_a_bank_with_a_slash(client: httpx.Client, bank: str) -> None:
    name = bank.replace("%2F", "/")
    first = retain(client, bank, "builds are cached for a week", tags=["ci"])
    r = client.patch(f"/banks/{bank}/memories/{first}", json={"content": "builds cached a day"})
    assert r.status_code == 200, r.text
    second = r.json()["id"]
    assert r.json()["bank"] == name
    r = client.get(f"/banks/{bank}/memories/{second}/history")
    assert [v["id"] for v in r.json()["versions"]] == [first, second]
    assert client.delete(f"/banks/{bank}/memories/{second}").json()["trashed"] is True
    assert [m["id"] for m in client.get(f"/banks/{bank}/trash").json()] == [second]
    assert client.post(f"/banks/{bank}/trash/{second}/restore").status_code == 200
    assert recall_ids(client, bank, "builds cached") == [second]
    assert client.post(f"/banks/{bank}/memories/{first}/purge").status_code == 200
    assert client.post(f"/banks/{bank}/trash/empty").json() == {"bank": name, "purged": 0}
    # DELETE of the bank itself still deletes the bank, "owner/trash" too.
    assert client.delete(f"/banks/{bank}").json() == {"bank": name, "deleted": True}
    assert client.get(f"/banks/{bank}/stats").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "name"),
    [
        ("PATCH", "/banks/e/memories/{id}", "update"),
        ("GET", "/banks/e/memories/{id}/history", "history"),
        ("GET", "/banks/e/trash", "trash"),
        ("POST", "/banks/e/trash/{id}/restore", "restore"),
        ("POST", "/banks/e/memories/{id}/purge", "purge"),
        ("POST", "/banks/e/trash/empty", "empty_trash"),
    ],
)
def test_a_storage_failure_is_an_opaque_500(
    client: httpx.Client,
    memory: Memory,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    name: str,
) -> None:
    """No SQL, path or traceback reaches the client: the message is the same opaque one."""
    import sqlite3

    memory_id = retain(client, "e", "a memory to fail on")

    def broken(*args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError("no such table: /secret/path/memwire.db archive")

    monkeypatch.setattr(memory, name, broken)
    body = {"tags": ["x"]} if method == "PATCH" else None
    r = client.request(method, path.format(id=memory_id), json=body)
    assert r.status_code == 500 and r.json() == {"error": "internal error"}
    assert listed(client, "e") == [memory_id]
