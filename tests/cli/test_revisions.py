"""`memwire update / history / trash / purge / vacuum`, `retain --supersedes` and
`recall --as-of` (issue 17): output, --json and exit codes, on a store a server also serves."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread
from test_cli import run


def ok_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_supersede_update_history_and_as_of(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    old = ok_json(capsys, "retain", "the API listens on 8080", "--db", db)["id"]
    time.sleep(0.002)  # distinct instants for --as-of, not a timing assertion
    new = ok_json(
        capsys, "retain", "the API listens on 9090", "--supersedes", old, "-t", "api", "--db", db
    )["id"]
    hits = ok_json(capsys, "recall", "API listens", "--min-score", "0", "--db", db)
    assert [h["id"] for h in hits] == [new]
    was = ok_json(capsys, "get", old, "--db", db)
    assert was["status"] == "superseded" and was["superseded_by"] == new
    as_of = ("--as-of", was["retained_at"])
    then = ok_json(capsys, "recall", "API listens", "--min-score", "0", *as_of, "--db", db)
    assert [h["id"] for h in then] == [old]
    code, _, err = run(capsys, "recall", "API", "--as-of", "someday", "--db", db)
    assert code == 2 and "as_of" in err

    # tags in place: same id printed
    code, out, _ = run(capsys, "update", new, "-t", "api", "-t", "ports", "--db", db)
    assert code == 0 and out.strip() == new
    assert ok_json(capsys, "get", new, "--db", db)["tags"] == ["api", "ports"]
    code, out, _ = run(capsys, "update", new, "--no-tags", "--db", db)
    assert code == 0 and ok_json(capsys, "get", new, "--db", db)["tags"] == []
    # new content: a new version, which the human output says supersedes the old one
    code, out, _ = run(capsys, "update", new, "--content", "the API listens on 7070", "--db", db)
    newest = out.split()[0]
    assert code == 0 and newest != new and f"(supersedes {new})" in out
    # the old version is history: a conflict, exit 6, nothing changed
    code, _, err = run(capsys, "update", old, "-t", "x", "--db", db)
    assert code == 6 and "superseded" in err
    code, _, err = run(capsys, "update", "mem_nope", "-t", "x", "--db", db)
    assert code == 3
    code, _, err = run(capsys, "update", new, "--db", db)  # nothing to change
    assert code == 2

    code, out, _ = run(capsys, "history", newest, "--db", db)
    assert code == 0
    lines = [line for line in out.splitlines() if line.startswith("mem_")]
    assert [line.split()[:2] for line in lines] == [
        [old, "superseded"],
        [new, "superseded"],
        [newest, "live"],
    ]
    assert f"-> {new}" in lines[0] and "until" in lines[0] and "until" not in lines[2]
    versions = ok_json(capsys, "history", old, "--db", db)["versions"]
    assert [v["id"] for v in versions] == [old, new, newest]


def test_forget_trash_restore_and_empty(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    keep = ok_json(capsys, "retain", "backups run at midnight", "--db", db)["id"]
    gone = ok_json(capsys, "retain", "the backup bucket is in eu-west-1", "--db", db)["id"]
    assert ok_json(capsys, "forget", gone, "--db", db)["trashed"] is True
    code, out, _ = run(capsys, "trash", "--db", db)
    assert code == 0 and gone in out and "trashed" in out and keep not in out
    assert [m["id"] for m in ok_json(capsys, "trash", "list", "--db", db)] == [gone]
    code, out, _ = run(capsys, "trash", "restore", gone, "--db", db)
    assert code == 0 and out.strip() == f"restored {gone}"
    hits = ok_json(capsys, "recall", "backup bucket", "--min-score", "0", "--db", db)
    assert gone in [h["id"] for h in hits]
    code, out, _ = run(capsys, "trash", "--db", db)
    assert code == 0 and "is empty" in out
    assert run(capsys, "trash", "restore", gone, "--db", db)[0] == 3
    assert run(capsys, "trash", "restore", "--db", db)[0] == 2  # no id
    assert run(capsys, "trash", "list", gone, "--db", db)[0] == 2  # an id it does not take

    ok_json(capsys, "forget", gone, "--db", db)
    # emptying is irreversible: off a terminal it needs --yes, and nothing is deleted without
    code, _, err = run(capsys, "trash", "empty", "--db", db)
    assert code == 2 and "--yes" in err
    assert len(ok_json(capsys, "trash", "--db", db)) == 1
    assert ok_json(capsys, "trash", "empty", "--older-than-days", "1", "--yes", "--db", db) == {
        "bank": "default",
        "purged": 0,
    }
    code, out, _ = run(capsys, "trash", "empty", "--yes", "--db", db)
    assert code == 0 and "deleted 1 trashed memories" in out
    assert ok_json(capsys, "trash", "--db", db) == []
    assert run(capsys, "get", gone, "--db", db)[0] == 3


def test_purge_asks_on_a_terminal_and_vacuum_removes_the_text(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "the vault code word is zebra-cactus-trombone"
    leaked = ok_json(capsys, "retain", secret, "--db", db)["id"]
    ok_json(capsys, "retain", "an ordinary memory", "--db", db)
    # off a terminal, without --yes: refused, nothing deleted
    code, _, err = run(capsys, "purge", leaked, "--db", db)
    assert code == 2 and "--yes" in err
    assert run(capsys, "get", leaked, "--db", db)[0] == 0
    # on a terminal: the question, and anything but yes keeps it
    monkeypatch.setattr("sys.stdin", _Terminal("n\n"))
    code, _, err = run(capsys, "purge", leaked, "--db", db)
    assert code == 2 and "cannot be undone" in err and "nothing was deleted" in err
    assert run(capsys, "get", leaked, "--db", db)[0] == 0
    monkeypatch.setattr("sys.stdin", _Terminal("y\n"))
    code, out, err = run(capsys, "purge", leaked, "--db", db)
    assert code == 0 and f"purged {leaked}" in out
    assert run(capsys, "get", leaked, "--db", db)[0] == 3
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert run(capsys, "purge", leaked, "--yes", "--db", db)[0] == 3
    code, out, _ = run(capsys, "vacuum", "--db", db)
    assert code == 0 and out.strip() == "vacuumed"
    for path in Path(db).parent.glob("memory.db*"):
        assert b"zebra-cactus-trombone" not in path.read_bytes(), path.name


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_commands_work_on_a_store_a_server_serves(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(db) as memory, serve_in_thread(memory) as url:
        made = httpx.post(f"{url}/banks/shared/retain", json={"content": "lunch is at noon"})
        first = made.json()["id"]
        code, out, _ = run(capsys, "update", first, "--content", "lunch is at one", "--db", db)
        second = out.split()[0]
        assert code == 0
        history = httpx.get(f"{url}/banks/shared/memories/{second}/history").json()
        assert [v["id"] for v in history["versions"]] == [first, second]
        hits = httpx.post(
            f"{url}/banks/shared/recall", json={"query": "lunch", "format": "full"}
        ).json()
        assert [h["id"] for h in hits] == [second]
        assert run(capsys, "forget", second, "--db", db)[0] == 0
        trash = httpx.get(f"{url}/banks/shared/trash").json()
        assert [m["id"] for m in trash] == [second]
