"""Every route of the HTTP server, over real HTTP, with its success and error answers."""

from __future__ import annotations

import httpx
import pytest
from memwire.memory import Memory


def retain(client: httpx.Client, bank: str, content: str, **fields: object) -> str:
    r = client.post(f"/banks/{bank}/retain", json={"content": content, **fields})
    assert r.status_code == 200, r.text
    memory_id = r.json()["id"]
    assert isinstance(memory_id, str)
    return memory_id


def test_health_is_plain_ok(client: httpx.Client) -> None:
    r = client.get("/health")
    assert r.status_code == 200
    assert r.text == "ok"
    assert r.headers["content-type"].startswith("text/plain")


def test_retain_then_recall_strings_and_full(client: httpx.Client) -> None:
    cat = retain(client, "pets", "the cat sleeps on the warm windowsill", tags=["cat"])
    retain(client, "pets", "the dog barks at the mail carrier", tags=["dog"])
    r = client.post("/banks/pets/recall", json={"query": "where does the cat sleep"})
    assert r.status_code == 200
    assert r.json()[0] == "the cat sleeps on the warm windowsill"
    assert all(isinstance(s, str) for s in r.json())

    r = client.post("/banks/pets/recall", json={"query": "cat", "format": "full"})
    hit = r.json()[0]
    assert set(hit) == {"id", "score", "created_at", "content", "context", "tags"}
    assert hit["id"] == cat and hit["tags"] == ["cat"] and isinstance(hit["score"], float)
    assert hit["context"] is None  # retained without one
    note = retain(client, "vet", "the cat hides from the vet", context="at the clinic")
    r = client.post("/banks/vet/recall", json={"query": "cat", "format": "full"})
    assert [(h["id"], h["context"]) for h in r.json()] == [(note, "at the clinic")]


def test_recall_filters_limit_and_budget(client: httpx.Client) -> None:
    for n in range(5):
        retain(client, "b", f"note number {n} about apples", tags=["even" if n % 2 else "odd"])
    r = client.post("/banks/b/recall", json={"query": "apples", "limit": 2})
    assert len(r.json()) == 2
    r = client.post("/banks/b/recall", json={"query": "apples", "tags": ["even"], "format": "full"})
    assert {tuple(h["tags"]) for h in r.json()} == {("even",)}
    r = client.post("/banks/b/recall", json={"query": "apples", "exclude_tags": ["even"]})
    assert len(r.json()) == 3
    r = client.post("/banks/b/recall", json={"query": "apples", "budget": 1000, "limit": None})
    assert r.status_code == 200


def test_retain_fields_and_document_upsert(client: httpx.Client) -> None:
    first = retain(
        client,
        "d",
        "draft one",
        document_id="doc-1",
        context="from a test",
        created_at="2024-05-01",
    )
    second = retain(client, "d", "draft two", document_id="doc-1", update_mode="replace")
    assert first != second
    # The previous revision is history now (issue 17): superseded by the new one.
    previous = client.get(f"/banks/d/memories/{first}").json()
    assert previous["status"] == "superseded" and previous["superseded_by"] == second
    assert [m["id"] for m in client.get("/banks/d/memories").json()] == [second]
    record = client.get(f"/banks/d/memories/{second}").json()
    assert record["content"] == "draft two"
    r = client.post(
        "/banks/d/retain", json={"content": "x", "document_id": "doc-1", "update_mode": "append"}
    )
    assert r.status_code == 409, r.text
    assert "already has a memory" in r.json()["error"]


def test_retain_same_content_returns_same_id(client: httpx.Client) -> None:
    assert retain(client, "a", "identical") == retain(client, "a", "identical")


def test_reflect_cites_ids(client: httpx.Client) -> None:
    memory_id = retain(client, "r", "we chose SQLite for the embedded store")
    r = client.post("/banks/r/reflect", json={"query": "which store did we choose"})
    assert r.status_code == 200
    assert memory_id in r.json()["text"]


def test_config_get_put(client: httpx.Client) -> None:
    assert client.get("/banks/c/config").status_code == 404  # no such bank yet
    r = client.put("/banks/c/config", json={"recall_max_tokens": 500, "custom": {"k": [1]}})
    assert r.status_code == 400  # an unknown key is refused by name, and nothing is written
    assert r.json()["error"].startswith("unknown config key 'custom'; the keys are")
    assert client.get("/banks/c/config").status_code == 404
    r = client.put("/banks/c/config", json={"recall_max_tokens": 500, "ttl_days": 9})
    assert r.status_code == 200
    assert r.json() == {"recall_max_tokens": 500, "ttl_days": 9}
    r = client.put("/banks/c/config", json={"ttl_days": None, "custom": None})
    assert r.json() == {"recall_max_tokens": 500}
    assert client.get("/banks/c/config").json() == {"recall_max_tokens": 500}
    r = client.put("/banks/c/config", json={"recall_max_tokens": "lots"})
    assert r.status_code == 400 and "recall_max_tokens" in r.json()["error"]
    assert client.put("/banks/c/config", json=[1, 2]).status_code == 400


def test_memories_paging_get_forget(client: httpx.Client) -> None:
    ids = [retain(client, "m", f"memory {n}", created_at=f"2024-01-0{n + 1}") for n in range(3)]
    page = client.get("/banks/m/memories").json()
    assert [m["id"] for m in page] == ids[::-1]  # newest created_at first
    page = client.get("/banks/m/memories", params={"limit": 1, "offset": 1}).json()
    assert [m["id"] for m in page] == [ids[1]]
    record = client.get(f"/banks/m/memories/{ids[0]}").json()
    assert record["id"] == ids[0] and record["content"] == "memory 0"
    assert record["created_at"].startswith("2024-01-01")
    r = client.delete(f"/banks/m/memories/{ids[0]}")
    assert r.status_code == 200
    assert r.json() == {"id": ids[0], "forgotten": True, "trashed": True}
    assert client.delete(f"/banks/m/memories/{ids[0]}").status_code == 404
    assert client.get(f"/banks/m/memories/{ids[0]}").json()["status"] == "trashed"
    assert [m["id"] for m in client.get("/banks/m/memories").json()] == ids[:0:-1]
    # the memory exists, but not in this bank
    assert client.get(f"/banks/other/memories/{ids[1]}").status_code == 404


def test_stats_banks_and_delete_bank(client: httpx.Client) -> None:
    retain(client, "s1", "one", tags=["t"])
    retain(client, "s2", "two")
    stats = client.get("/banks/s1/stats").json()
    assert stats["count"] == 1 and stats["tags"] == {"t": 1}
    assert client.get("/banks").json() == ["s1", "s2"]
    r = client.delete("/banks/s1")
    assert r.status_code == 200
    assert client.get("/banks").json() == ["s2"]
    assert client.delete("/banks/s1").status_code == 404
    assert client.get("/banks/s1/stats").status_code == 404


def test_empty_banks_answer_200_with_empty_results(client: httpx.Client) -> None:
    assert client.get("/banks").json() == []
    assert client.post("/banks/nobody/recall", json={"query": "x"}).json() == []
    assert client.get("/banks/nobody/memories").json() == []
    # a bank whose memories were all forgotten
    memory_id = retain(client, "e", "soon gone")
    client.delete(f"/banks/e/memories/{memory_id}")
    assert client.post("/banks/e/recall", json={"query": "gone"}).json() == []
    assert client.get("/banks/e/memories").json() == []
    assert client.get("/banks/e/stats").json()["count"] == 0
    assert "No memories" in client.post("/banks/e/reflect", json={"query": "x"}).json()["text"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        (b"{not json", "invalid JSON"),
        (b"", "empty"),
        (b"[1, 2]", "JSON object"),
        (b'"text"', "JSON object"),
        (b'{"content": NaN}', "NaN"),
        (b"\xff\xfe", "UTF-8"),
        (b'{"content": 5}', "content must be a string"),
        (b'{"content": null}', "content is required"),
        (b"{}", "content is required"),
        (b'{"content": "   "}', "blank"),
        (b'{"content": "x", "tags": "a"}', "tags must be an array"),
        (b'{"content": "x", "tags": [1]}', "tags must be an array of strings"),
        (b'{"content": "x", "context": 1}', "context must be a string"),
        (b'{"content": "x", "created_at": "yesterday"}', "created_at"),
        (b'{"content": "x", "update_mode": "merge"}', "update_mode"),
    ],
)
def test_retain_400(client: httpx.Client, body: bytes, needle: str) -> None:
    r = client.post("/banks/a/retain", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({}, "query is required"),
        ({"query": 3}, "query must be a string"),
        ({"query": "x", "limit": True}, "limit must be an integer"),
        ({"query": "x", "limit": 0}, "limit must be between 1 and 100"),
        ({"query": "x", "limit": 101}, "limit must be between 1 and 100"),
        ({"query": "x", "limit": 2.5}, "limit must be an integer"),
        ({"query": "x", "budget": "9"}, "budget must be an integer"),
        ({"query": "x", "budget": 0}, "budget must be between"),
        ({"query": "x", "format": "xml"}, "format must be one of"),
        ({"query": "x", "exclude_tags": {"a": 1}}, "exclude_tags must be an array"),
    ],
)
def test_recall_400(client: httpx.Client, body: dict[str, object], needle: str) -> None:
    r = client.post("/banks/a/recall", json=body)
    assert r.status_code == 400, r.text
    assert needle in r.json()["error"]


@pytest.mark.parametrize("bank", ["%20", "%01bad", "x" * 200])
def test_invalid_bank_is_400(client: httpx.Client, bank: str) -> None:
    for method, path, body in [
        ("POST", "retain", {"content": "x"}),
        ("POST", "recall", {"query": "x"}),
        ("GET", "stats", None),
        ("GET", "memories", None),
        ("GET", "config", None),
    ]:
        r = client.request(method, f"/banks/{bank}/{path}", json=body)
        assert r.status_code == 400, (path, r.text)
        assert "bank" in r.json()["error"]


def test_bad_query_params_are_400(client: httpx.Client) -> None:
    for params in ({"limit": "ten"}, {"limit": "0"}, {"offset": "-1"}, {"limit": "5000"}):
        r = client.get("/banks/a/memories", params=params)
        assert r.status_code == 400, params
        assert "must be" in r.json()["error"]


def test_unknown_route_and_method(client: httpx.Client) -> None:
    r = client.get("/nope")
    assert r.status_code == 404 and r.json() == {"error": "no such route"}
    r = client.get("/banks/a/retain")
    assert r.status_code == 405 and "error" in r.json()


def test_oversized_body_is_413(client: httpx.Client) -> None:
    big = b'{"content": "' + b"x" * (5 * 1024 * 1024) + b'"}'
    r = client.post("/banks/a/retain", content=big, headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "larger" in r.json()["error"]

    def chunks() -> object:
        for _ in range(6):
            yield b"x" * (1024 * 1024)

    r = client.post("/banks/a/retain", content=chunks())  # chunked: no Content-Length
    assert r.status_code == 413


def test_content_too_long_for_the_api_is_400(client: httpx.Client) -> None:
    r = client.post("/banks/a/retain", json={"content": "x" * 200_000})
    assert r.status_code == 400 and "too long" in r.json()["error"]


def test_500_is_opaque(
    client: httpx.Client, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    def broken(*args: object, **kwargs: object) -> object:
        raise sqlite3.OperationalError("no such table: memories; /home/secret/memory.db")

    monkeypatch.setattr(memory, "recall", broken)
    r = client.post("/banks/a/recall", json={"query": "x"})
    assert r.status_code == 500
    assert r.json() == {"error": "internal error"}
    assert "secret" not in r.text and "Traceback" not in r.text and "sqlite" not in r.text


def test_storage_error_is_opaque(
    client: httpx.Client, memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memwire.errors import StorageError

    def broken(*args: object, **kwargs: object) -> object:
        raise StorageError("disk I/O error at /var/lib/x")

    monkeypatch.setattr(memory, "stats", broken)
    r = client.get("/banks/a/stats")
    assert r.status_code == 500 and r.json() == {"error": "internal error"}


def test_lone_surrogate_never_breaks_a_response(client: httpx.Client) -> None:
    body = b'{"content": "\\ud800"}'
    r = client.post("/banks/a/retain", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400
    r = client.put(
        "/banks/a/config", content=b'{"\\ud800": 1}', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400


def test_openapi_document_lists_every_route(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    expected = {
        "/health": {"get"},
        "/banks": {"get"},
        "/banks/{bank}": {"delete"},
        "/banks/{bank}/retain": {"post"},
        "/banks/{bank}/conversation": {"post"},
        "/banks/{bank}/retain_many": {"post"},
        "/banks/{bank}/recall": {"post"},
        "/banks/{bank}/reflect": {"post"},
        "/banks/{bank}/config": {"get", "put"},
        "/banks/{bank}/memories": {"get"},
        "/banks/{bank}/memories/{memory_id}": {"get", "delete", "patch"},
        "/banks/{bank}/memories/{memory_id}/history": {"get"},
        "/banks/{bank}/memories/{memory_id}/purge": {"post"},
        "/banks/{bank}/trash": {"get"},
        "/banks/{bank}/trash/empty": {"post"},
        "/banks/{bank}/trash/{memory_id}/restore": {"post"},
        "/banks/{bank}/stats": {"get"},
    }
    assert {p: set(ops) for p, ops in doc["paths"].items()} == expected


@pytest.mark.parametrize("path_bank", ["acme%2Fweb", "acme/web"])
def test_bank_names_with_a_slash(client: httpx.Client, path_bank: str) -> None:
    """Hooks name banks after a repository (owner/repo); every route must carry them."""
    r = client.post(f"/banks/{path_bank}/retain", json={"content": "deploys run on fridays"})
    assert r.status_code == 200, r.text
    memory_id = r.json()["id"]
    r = client.post(f"/banks/{path_bank}/recall", json={"query": "when do deploys run"})
    assert r.json() == ["deploys run on fridays"]
    assert client.get(f"/banks/{path_bank}/memories/{memory_id}").json()["id"] == memory_id
    assert client.get(f"/banks/{path_bank}/stats").status_code == 200
    assert "acme/web" in client.get("/banks").json()
    assert client.delete(f"/banks/{path_bank}/memories/{memory_id}").status_code == 200
    assert client.delete(f"/banks/{path_bank}").status_code == 200
    assert client.get(f"/banks/{path_bank}/stats").status_code == 404


def _scores(client: httpx.Client, bank: str, query: str) -> list[float]:
    body = {"query": query, "format": "full", "min_score": 0}
    r = client.post(f"/banks/{bank}/recall", json=body)
    assert r.status_code == 200, r.text
    return [hit["score"] for hit in r.json()]


def test_nothing_relevant_finds_nothing_by_default(client: httpx.Client) -> None:
    retain(client, "n", "the staging database runs on port 5433")
    retain(client, "n", "deploys go out every tuesday after standup")
    query = {"query": "what is the capital of France"}
    assert client.post("/banks/n/recall", json=query).json() == []  # the default floor
    assert client.post("/banks/n/recall", json={**query, "min_score": 0}).json()  # per call
    text = client.post("/banks/n/reflect", json=query).json()["text"]
    assert text.startswith("No memories")
    found = client.post("/banks/n/recall", json={"query": "staging database port"}).json()
    assert found == ["the staging database runs on port 5433"]


def test_min_score_on_recall_and_reflect(client: httpx.Client) -> None:
    strong = retain(client, "f", "red apples grow in the orchard by the river")
    weak = retain(client, "f", "apples are sold at the market")
    query = "red apples orchard river"
    scores = _scores(client, "f", query)
    assert len(scores) == 2 and scores[0] > scores[1]
    floor = (scores[0] + scores[1]) / 2
    r = client.post("/banks/f/recall", json={"query": query, "min_score": floor, "format": "full"})
    assert [h["id"] for h in r.json()] == [strong]
    r = client.post("/banks/f/recall", json={"query": query, "min_score": 0})
    assert len(r.json()) == 2
    r = client.post("/banks/f/recall", json={"query": query, "min_score": scores[0] + 1})
    assert r.status_code == 200 and r.json() == []
    text = client.post("/banks/f/reflect", json={"query": query, "min_score": floor}).json()["text"]
    assert strong in text and weak not in text
    text = client.post("/banks/f/reflect", json={"query": query, "min_score": 1}).json()["text"]
    assert text.startswith("No memories")


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (-0.5, "min_score must be a finite number >= 0, got -0.5"),
        ("0.1", "min_score must be a number, got string"),
        (True, "min_score must be a number, got boolean"),
        ([0.1], "min_score must be a number, got array"),
    ],
)
def test_min_score_400(client: httpx.Client, value: object, needle: str) -> None:
    for route in ("recall", "reflect"):
        r = client.post(f"/banks/a/{route}", json={"query": "x", "min_score": value})
        assert r.status_code == 400, r.text
        assert r.json() == {"error": needle}


def test_min_score_out_of_json_range_is_400(client: httpx.Client) -> None:
    # 1e400 parses as infinity: refused like any non-finite floor
    r = client.post(
        "/banks/a/recall",
        content=b'{"query": "x", "min_score": 1e400}',
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 400 and "finite" in r.json()["error"]


def test_conflict_is_409_with_the_message(client: httpx.Client) -> None:
    first = retain(client, "k", "revision one", document_id="spec")
    r = client.post(
        "/banks/k/retain",
        json={"content": "revision two", "document_id": "spec", "update_mode": "append"},
    )
    assert r.status_code == 409
    assert r.json() == {
        "error": "document 'spec' already has a memory in bank 'k'; "
        "use update_mode='replace' to replace it"
    }
    # nothing was changed
    assert [m["id"] for m in client.get("/banks/k/memories").json()] == [first]


def test_unknown_fields_and_query_parameters_are_refused_by_name(client: httpx.Client) -> None:
    r = client.post("/banks/s/retain", json={"content": "a typo'd tag", "tag": ["x"]})
    assert r.status_code == 400
    assert r.json()["error"] == (
        "unknown field 'tag' for retain; the fields are content, context, created_at, "
        "document_id, supersedes, tags, update_mode"
    )
    assert client.get("/banks/s/stats").status_code == 404  # nothing was written
    retain(client, "s", "kept")
    r = client.post("/banks/s/recall", json={"query": "kept", "max_results": 3})
    assert r.status_code == 400 and "unknown field 'max_results' for recall" in r.json()["error"]
    r = client.post("/banks/s/reflect", json={"query": "kept", "limit": 3})
    assert r.status_code == 400 and "unknown field 'limit' for reflect" in r.json()["error"]
    r = client.get("/banks/s/memories", params={"limit": 5, "page": 2})
    assert r.status_code == 400
    assert r.json()["error"] == (
        "unknown query parameter 'page' for memories; the query parameters are limit, offset"
    )
    r = client.post("/banks/s/recall", params={"limit": 3}, json={"query": "kept"})
    assert r.status_code == 400
    assert r.json()["error"] == "unknown query parameter 'limit'; this route takes none"
    assert client.get("/banks/s/stats", params={"verbose": 1}).status_code == 400
    # null still means absent, for a known field
    assert client.post("/banks/s/recall", json={"query": "kept", "limit": None}).json() == ["kept"]


def test_tags_are_case_insensitive_over_http(client: httpx.Client) -> None:
    """Tags are stored casefolded: a filter in any case finds them, stats count them once."""
    one = client.post(
        "/banks/t/retain", json={"content": "deploys run on fridays", "tags": ["Ops"]}
    )
    two = client.post(
        "/banks/t/retain", json={"content": "deploy freeze in december", "tags": ["OPS", "Freeze"]}
    )
    client.post("/banks/t/retain", json={"content": "lunch is at noon", "tags": ["social"]})
    hits = client.post(
        "/banks/t/recall", json={"query": "deploy", "tags": ["ops"], "format": "full"}
    ).json()
    assert {h["id"] for h in hits} == {one.json()["id"], two.json()["id"]}
    assert sorted(h["tags"] for h in hits) == [["ops"], ["ops", "freeze"]]
    kept = client.post("/banks/t/recall", json={"query": "deploy", "exclude_tags": ["FREEZE"]})
    assert "deploy freeze in december" not in kept.json()
    assert client.get("/banks/t/stats").json()["tags"] == {"ops": 2, "freeze": 1, "social": 1}
