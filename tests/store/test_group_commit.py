"""SQLite group commit: writes that queue behind a commit share the next transaction, each
keeps its own outcome, and none returns before the COMMIT that holds it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from memwire.errors import ConflictError, StorageError
from memwire.store import WriteResult
from memwire.store.sqlite import SQLiteStore
from store_support import item

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "store.db")
    yield s
    s.close()


class Round:
    """Holds the first write inside its transaction until released, so that others queue."""

    def __init__(self, store: SQLiteStore) -> None:
        self.store = store
        self.inside = threading.Event()
        self.release = threading.Event()
        self.statements: list[str] = []
        store.conn.set_trace_callback(self.statements.append)

    def blocking_tags(self, config: Any) -> list[str]:
        self.inside.set()
        assert self.release.wait(60)
        return []

    def commits(self) -> int:
        return sum(1 for s in self.statements if s.strip().upper() == "COMMIT")


def in_thread(fn: Callable[[], Any], out: dict[str, Any], key: str) -> threading.Thread:
    def run() -> None:
        try:
            out[key] = fn()
        except Exception as exc:
            out[key] = exc

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def queue_behind_first(
    store: SQLiteStore, writes: dict[str, Callable[[], Any]]
) -> tuple[Round, dict[str, Any]]:
    """Start a first write that blocks inside its transaction, queue ``writes`` behind it,
    then let everything finish."""
    round_ = Round(store)
    out: dict[str, Any] = {}
    first = in_thread(
        lambda: store.write("b", [item("first")], config_tags=round_.blocking_tags), out, "first"
    )
    assert round_.inside.wait(60)
    threads = [in_thread(fn, out, key) for key, fn in writes.items()]
    while store._group.pending() < len(writes):  # all queued behind the open transaction
        threading.Event().wait(0.01)
    round_.release.set()
    for thread in [first, *threads]:
        thread.join(60)
    return round_, out


def test_queued_writes_share_one_transaction(store: SQLiteStore) -> None:
    writes = {f"w{n}": (lambda n=n: store.write("b", [item(f"text {n}")])) for n in range(5)}
    round_, out = queue_behind_first(store, writes)
    assert all(isinstance(r, WriteResult) for r in out.values()), out
    assert round_.commits() == 2  # the first alone, then the five queued together
    assert sum(1 for s in round_.statements if s.startswith("SAVEPOINT")) == 5
    ordinals = sorted(o for r in out.values() for o in r.added.ordinals)
    assert ordinals == list(range(1, 7))  # one sequence, no gaps, whatever the order
    assert {r.content for r in store.iter_rows("b")} == {"first"} | {f"text {n}" for n in range(5)}


def test_a_failing_write_fails_alone(store: SQLiteStore) -> None:
    store.write("b", [item("v1", document_id="doc")])
    writes = {
        "ok1": lambda: store.write("b", [item("kept 1")]),
        "conflict": lambda: store.write(
            "b", [item("dropped", document_id="doc", update_mode="append"), item("also dropped")]
        ),
        "ok2": lambda: store.write("b", [item("kept 2")]),
    }
    round_, out = queue_behind_first(store, writes)
    assert isinstance(out["conflict"], ConflictError)
    assert isinstance(out["ok1"], WriteResult) and isinstance(out["ok2"], WriteResult)
    assert round_.commits() == 2
    contents = {r.content for r in store.iter_rows("b")}
    assert contents == {"v1", "first", "kept 1", "kept 2"}  # nothing of the failed write


def test_a_failed_commit_fails_every_write_of_the_round(store: SQLiteStore) -> None:
    """When the round's transaction itself fails, every caller gets an error and nothing of
    the round is stored (no caller was acknowledged)."""
    calls = {"n": 0}

    def broken_tags(config: Any) -> list[str]:
        calls["n"] += 1
        if calls["n"] == 2:  # inside the shared round: a failure no savepoint absorbs
            raise RuntimeError("disk went away")
        return []

    writes = {
        "a": lambda: store.write("b", [item("a")], config_tags=broken_tags),
        "b": lambda: store.write("b", [item("b")], config_tags=broken_tags),
    }
    calls["n"] = 0
    round_, out = queue_behind_first(store, writes)
    errors = [v for v in out.values() if isinstance(v, BaseException)]
    assert len(errors) == 2  # the two writes of the failed round
    assert all(isinstance(e, (StorageError, RuntimeError)) for e in errors)
    assert {r.content for r in store.iter_rows("b")} == {"first"}
    assert round_.commits() == 1
