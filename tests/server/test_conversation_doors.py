"""Conversation ingest through every door: POST /banks/{bank}/conversation, the MCP tool
memory_retain_conversation and ``memwire retain-conversation``. Each stores what
Memory.retain_conversation stores, and a bad request writes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from memwire.__main__ import main
from memwire.memory import Memory

TURNS = [
    {"speaker": "Ana", "text": "the staging database moved to the new cluster", "session": 1},
    {"speaker": "Ben", "text": "which region is it in?", "session": 1},
    {"speaker": "Ana", "text": "eu-west, same as production", "session": 1},
    {"speaker": "Ben", "text": "thanks", "session": 2, "created_at": "2024-05-01T10:00:00Z"},
]

BAD: list[tuple[object, str]] = [
    ({}, "turns is required"),
    ({"turns": "Ana: hi"}, "turns must be an array of objects, got string"),
    ({"turns": [TURNS[0], "hi"]}, "turns[1] must be an object, got string"),
    ({"turns": [TURNS[0], {"speaker": "Ana"}]}, "turns[1]: text must be a non-empty string"),
    ({"turns": [{**TURNS[0], "who": 1}]}, "turns[0]: unknown key 'who'"),
    ({"turns": TURNS, "before": 21}, "before must be between 0 and 20, got 21"),
    ({"turns": TURNS, "after": -1}, "after must be between 0 and 20, got -1"),
    ({"turns": TURNS, "tags": "x"}, "tags must be an array of strings, got string"),
    ({"turns": [{**TURNS[0], "created_at": "soon"}]}, "created_at"),
]


def stored(memory: Memory, bank: str) -> dict[str, Any]:
    return {r.content: r for r in memory.memories(bank=bank, limit=100)}


def assert_windowed(memory: Memory, bank: str, ids: list[str], tags: list[str]) -> None:
    """What the library stores for TURNS with before=1, after=1."""
    assert len(ids) == len(TURNS) == len(set(ids))
    rows = stored(memory, bank)
    ben = rows["Ben: which region is it in?"]
    assert ben.context == TURNS[0]["text"]  # a question is stored without its answer
    assert rows["Ana: eu-west, same as production"].context == TURNS[1]["text"]
    thanks = rows["Ben: thanks"]
    assert thanks.context == "1 May 2024"  # its date; session 2 has no other turn
    assert thanks.created_at.isoformat() == "2024-05-01T10:00:00+00:00"
    assert all(list(r.tags) == tags for r in rows.values())
    assert [memory.get(i).content for i in ids] == [f"{t['speaker']}: {t['text']}" for t in TURNS]


def test_http_route_stores_the_windows(client: httpx.Client, memory: Memory) -> None:
    body = {"turns": TURNS, "before": 1, "after": 1, "tags": ["standup"]}
    r = client.post("/banks/team/conversation", json=body)
    assert r.status_code == 200, r.text
    assert_windowed(memory, "team", r.json()["ids"], ["standup"])
    again = client.post("/banks/team/conversation", json=body)
    assert again.json() == r.json()  # the same turns again are the same memories


def test_http_defaults_are_two_before_one_after(client: httpx.Client, memory: Memory) -> None:
    turns = [{"speaker": "S", "text": f"turn number {n}"} for n in range(5)]
    ids = client.post("/banks/d/conversation", json={"turns": turns}).json()["ids"]
    assert memory.get(ids[2]).context == "turn number 0\nturn number 1\nturn number 3"


@pytest.mark.parametrize(("body", "message"), BAD)
def test_http_bad_request_is_400_and_writes_nothing(
    client: httpx.Client, memory: Memory, body: object, message: str
) -> None:
    r = client.post("/banks/bad/conversation", json=body)
    assert r.status_code == 400
    assert message in r.json()["error"]
    assert "bad" not in memory.banks()


def test_openapi_lists_the_route(client: httpx.Client) -> None:
    doc = client.get("/openapi.json").json()
    post = doc["paths"]["/banks/{bank}/conversation"]["post"]
    assert post["operationId"] == "retainConversation"
    schema = doc["components"]["schemas"]["ConversationRequest"]
    assert schema["required"] == ["turns"]
    assert schema["properties"]["turns"]["items"]["required"] == ["speaker", "text"]


def test_mcp_tool_stores_the_windows(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    from memwire.server.mcp_server import call

    with Memory(tmp_path / "m.db") as memory:
        args = {"turns": TURNS, "before": 1, "after": 1, "tags": ["standup"], "bank": "team"}
        result = call(memory, "memory_retain_conversation", args, None)
        assert_windowed(memory, "team", result["ids"], ["standup"])


@pytest.mark.parametrize(("body", "message"), BAD[1:])
def test_mcp_bad_arguments_are_errors_and_write_nothing(
    tmp_path: Path, body: dict[str, Any], message: str
) -> None:
    pytest.importorskip("mcp")
    from memwire.errors import InvalidInputError
    from memwire.server.mcp_server import call

    with Memory(tmp_path / "m.db") as memory:
        with pytest.raises(InvalidInputError) as caught:
            call(memory, "memory_retain_conversation", {**body, "bank": "bad"}, None)
        assert message in str(caught.value)
        assert memory.banks() == []


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("shape", ["array", "object", "jsonl"])
def test_cli_reads_json_and_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shape: str
) -> None:
    source = tmp_path / "turns.json"
    if shape == "array":
        source.write_text(json.dumps(TURNS), encoding="utf-8")
    elif shape == "object":
        source.write_text(json.dumps({"turns": TURNS}), encoding="utf-8")
    else:
        source.write_text("\n".join(json.dumps(t) for t in TURNS) + "\n\n", encoding="utf-8")
    db = str(tmp_path / "m.db")
    argv = ["retain-conversation", str(source), "--db", db, "-b", "team", "-t", "standup"]
    code, out, err = run(capsys, *argv, "--before", "1", "--after", "1", "--json")
    assert code == 0, err
    ids = json.loads(out)["ids"]
    with Memory(db) as memory:
        assert_windowed(memory, "team", ids, ["standup"])


def test_cli_reads_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(TURNS[:2])))
    db = str(tmp_path / "m.db")
    code, out, _ = run(capsys, "retain-conversation", "-", "--db", db)
    assert code == 0 and len(out.split()) == 2


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"speaker": "Ana", "text": "hi"}\n{"speaker": ', "line 2: invalid JSON"),
        ("", "no turns"),
        ('"just a string"', "expected a JSON array of turns"),
        (json.dumps([TURNS[0], {"speaker": "Ben"}]), "turns[1]: text must be"),
        (json.dumps([TURNS[0], 7]), "turns[1] must be an object, got number"),
    ],
)
def test_cli_bad_file_exits_2_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    source = tmp_path / "turns.jsonl"
    source.write_text(text, encoding="utf-8")
    db = str(tmp_path / "m.db")
    code, out, err = run(capsys, "retain-conversation", str(source), "--db", db, "-b", "bad")
    assert code == 2 and out == ""
    assert message in err
    with Memory(db) as memory:
        assert memory.banks() == []


def test_cli_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "nope.json")
    code, _, err = run(capsys, "retain-conversation", missing, "--db", str(tmp_path / "m.db"))
    assert code == 2 and "nope.json" in err
