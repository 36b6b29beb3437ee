"""The pack's per-call options through every door: ``near_duplicate`` and ``prefer_newest`` on
POST /banks/{bank}/recall, the MCP tool memory_recall and ``memwire recall``. Each door serves
what Memory.recall serves with the same arguments, a bank's config is overridden per call, and a
bad value is refused with the Memory layer's message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from memwire.__main__ import main
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread

QUERY = "billing api port"
OLD = "The billing API listens on port 8080."
NEW = "the billing api listens on port 8080 (confirmed)"  # same index terms: one family
OTHER = "The cafeteria opens at noon on weekdays."

# The door's arguments, and Memory.recall's keywords for them.
CASES: list[tuple[dict[str, Any], dict[str, Any]]] = [
    ({}, {}),
    ({"near_duplicate": 0}, {"near_duplicate": 0}),
    ({"prefer_newest": True}, {"prefer_newest": True}),
    ({"prefer_newest": False}, {"prefer_newest": False}),
    ({"near_duplicate": 1, "prefer_newest": True}, {"near_duplicate": 1, "prefer_newest": True}),
]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "m.db"
    with Memory(path) as memory:
        memory.retain(OLD, bank="p", created_at="2024-01-01")
        memory.retain(NEW, bank="p", created_at="2024-06-01")
        memory.retain(OTHER, bank="p", created_at="2024-03-01")
    return path


@pytest.fixture
def memory(db: Path) -> Iterator[Memory]:
    with Memory(db) as mem:
        yield mem


def expected(memory: Memory, **kwargs: Any) -> list[str]:
    return [h.id for h in memory.recall(QUERY, bank="p", min_score=0, **kwargs)]


def contents(memory: Memory, ids: list[str]) -> list[str]:
    return [memory.get(i).content for i in ids]


def test_the_options_change_what_recall_serves(memory: Memory) -> None:
    """The cases below differ, so a door that dropped an option would fail them."""
    assert contents(memory, expected(memory)) == [OLD, OTHER]  # folded, best-ranked served
    assert contents(memory, expected(memory, near_duplicate=0)) == [OLD, NEW, OTHER]
    assert contents(memory, expected(memory, prefer_newest=True)) == [NEW, OTHER]


@pytest.mark.parametrize(("body", "kwargs"), CASES)
def test_http(memory: Memory, body: dict[str, Any], kwargs: dict[str, Any]) -> None:
    with serve_in_thread(memory) as url, httpx.Client(base_url=url, timeout=30) as client:
        r = client.post(
            "/banks/p/recall", json={"query": QUERY, "min_score": 0, "format": "full", **body}
        )
    assert r.status_code == 200, r.text
    assert [h["id"] for h in r.json()] == expected(memory, **kwargs)


@pytest.mark.parametrize(("body", "kwargs"), CASES)
def test_mcp(memory: Memory, body: dict[str, Any], kwargs: dict[str, Any]) -> None:
    pytest.importorskip("mcp")
    from memwire.server.mcp_server import call

    args = {"query": QUERY, "min_score": 0, "bank": "p", **body}
    result = call(memory, "memory_recall", args, None)
    assert [h["id"] for h in result["memories"]] == expected(memory, **kwargs)


def cli_recall(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> list[str]:
    code = main(["recall", QUERY, "--db", str(db), "-b", "p", "--min-score", "0", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return [h["id"] for h in json.loads(out)]


def test_cli(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(db) as memory:
        want = {
            (): expected(memory),
            ("--near-duplicate", "0"): expected(memory, near_duplicate=0),
            ("--prefer-newest",): expected(memory, prefer_newest=True),
        }
    for extra, ids in want.items():
        assert cli_recall(capsys, db, *extra) == ids, extra
    # --no-prefer-newest overrides a bank that prefers the newest; neither flag keeps the bank's
    with Memory(db) as memory:
        memory.set_config("p", {"prefer_newest": True})
        best = expected(memory, prefer_newest=False)
        newest = expected(memory)
    assert best != newest
    assert cli_recall(capsys, db, "--no-prefer-newest") == best
    assert cli_recall(capsys, db) == newest


BAD = [
    ({"near_duplicate": 1.5}, "near_duplicate"),
    ({"near_duplicate": -0.1}, "near_duplicate"),
    ({"near_duplicate": "0.5"}, "near_duplicate must be a number, got string"),
    ({"prefer_newest": "yes"}, "prefer_newest must be true or false, got string"),
    ({"prefer_newest": 1}, "prefer_newest must be true or false, got number"),
]


@pytest.mark.parametrize(("body", "message"), BAD)
def test_bad_values_are_refused_at_every_door(
    memory: Memory, capsys: pytest.CaptureFixture[str], body: dict[str, Any], message: str
) -> None:
    with serve_in_thread(memory) as url, httpx.Client(base_url=url, timeout=30) as client:
        r = client.post("/banks/p/recall", json={"query": QUERY, **body})
    assert r.status_code == 400 and message in r.json()["error"]
    pytest.importorskip("mcp")
    from memwire.errors import InvalidInputError
    from memwire.server.mcp_server import call

    with pytest.raises(InvalidInputError, match=message):
        call(memory, "memory_recall", {"query": QUERY, "bank": "p", **body}, None)


@pytest.mark.parametrize("value", ["1.5", "-0.1", "half"])
def test_cli_refuses_a_bad_near_duplicate(
    db: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code = main(["recall", QUERY, "--db", str(db), "-b", "p", "--near-duplicate", value])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "near-duplicate" in err.replace("_", "-")
