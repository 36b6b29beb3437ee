"""A recall of a loaded bank runs on the server's event loop (no hop to a worker thread and
back) when no other request needs the loop: it is the only request in flight, or every other
one is waiting on a worker thread. Beside a request the loop is still reading, it runs on a
worker thread: the server's compute lane when it has one (``memwire serve`` on a local store),
else a general worker as every other route's call does; a bank still to load is always loaded
on a general worker (memwire.server.threads)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from memwire.errors import InvalidInputError
from memwire.memory import Memory
from memwire.server import app, ops, threads
from memwire.server.runner import LazyMemory
from memwire.server.testing import serve_in_thread
from memwire.store import open_store
from starlette.requests import Request

LOOP_THREAD = "memwire-test-server"  # serve_in_thread runs the server's loop in this thread


@pytest.fixture
def recalls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each recall through the server ran on, in order."""
    seen: list[str] = []
    original = ops.recall

    def recall(memory: Memory, bank: str, body: object) -> list[Any]:
        seen.append(threading.current_thread().name)
        return original(memory, bank, body)

    monkeypatch.setattr(ops, "recall", recall)
    return seen


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Memory, str]]:
    with Memory(tmp_path / "m.db") as memory, serve_in_thread(memory) as url:
        yield memory, url


def test_a_recall_alone_runs_on_the_loop_once_its_bank_is_loaded(
    served: tuple[Memory, str], recalls: list[str]
) -> None:
    memory, url = served
    with httpx.Client(base_url=url, timeout=30) as http:
        r = http.post("/banks/b/retain", json={"content": "The API listens on port 8080"})
        assert r.status_code == 200, r.text
        assert not memory.is_loaded(bank="b")  # a write does not load the index
        answers = [
            http.post("/banks/b/recall", json={"query": "api port"}).json() for _ in range(3)
        ]
    assert answers == [["The API listens on port 8080"]] * 3
    # The first loads the bank (a worker thread: the loop never waits for a load).
    assert recalls[0].startswith("memwire-worker")
    assert recalls[1:] == [LOOP_THREAD, LOOP_THREAD]
    assert memory.is_loaded(bank="b")


def test_a_recall_beside_a_request_waiting_on_a_worker_runs_on_the_loop(
    served: tuple[Memory, str], recalls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, url = served
    with httpx.Client(base_url=url, timeout=30) as http:
        http.post("/banks/b/retain", json={"content": "deploys run on Fridays"})
        http.post("/banks/b/recall", json={"query": "deploys"})  # loads the bank
        assert memory.is_loaded(bank="b")
        started, release = threading.Event(), threading.Event()
        original = ops.retain

        def slow_retain(memory: Memory, bank: str, body: object) -> dict[str, str]:
            started.set()
            release.wait(30)
            return original(memory, bank, body)

        monkeypatch.setattr(ops, "retain", slow_retain)
        answers: list[int] = []

        def retain() -> None:
            with httpx.Client(base_url=url, timeout=30) as other:
                r = other.post("/banks/b/retain", json={"content": "staging deploys daily"})
                answers.append(r.status_code)

        writer = threading.Thread(target=retain)
        writer.start()
        try:
            assert started.wait(30)
            found = http.post("/banks/b/recall", json={"query": "deploys fridays"})
        finally:
            release.set()
            writer.join(30)
        assert found.json() == ["deploys run on Fridays"]
        assert answers == [200]
        after = http.post("/banks/b/recall", json={"query": "staging deploys"}).json()
    assert after[0] == "staging deploys daily"
    # The retain was in flight, on a worker: the loop had nothing else to do.
    assert recalls[1:] == [LOOP_THREAD, LOOP_THREAD]


def test_a_recall_beside_a_request_the_loop_is_reading_runs_on_a_worker(
    served: tuple[Memory, str], recalls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, url = served
    reading = threading.Event()
    original = app.read_json

    async def read_json(request: Request) -> Any:
        if request.url.path.endswith("/retain"):
            reading.set()
        return await original(request)

    with httpx.Client(base_url=url, timeout=30) as http:
        http.post("/banks/b/retain", json={"content": "deploys run on Fridays"})
        http.post("/banks/b/recall", json={"query": "deploys"})  # loads the bank
        monkeypatch.setattr(app, "read_json", read_json)
        where = urlsplit(url)
        # A request whose body is still arriving: in flight, and the loop's to read.
        with socket.create_connection((where.hostname, where.port), timeout=30) as slow:
            slow.sendall(
                b"POST /banks/b/retain HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            assert reading.wait(30)
            found = http.post("/banks/b/recall", json={"query": "deploys fridays"})
        assert found.json() == ["deploys run on Fridays"]
    assert recalls[1].startswith("memwire-worker")


def test_with_a_compute_lane_a_recall_that_cannot_run_on_the_loop_runs_in_it(
    tmp_path: Path, recalls: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        Memory(tmp_path / "m.db") as memory,
        serve_in_thread(memory, recall_threads=1) as url,
        httpx.Client(base_url=url, timeout=30) as http,
    ):
        http.post("/banks/b/retain", json={"content": "deploys run on Fridays"})
        http.post("/banks/b/recall", json={"query": "deploys"})  # loads the bank
        assert memory.is_loaded(bank="b")
        monkeypatch.setattr(app, "alone", lambda requests_in_flight: False)
        reflects: list[str] = []
        original = ops.reflect

        def reflect(memory: Memory, bank: str, body: object) -> Any:
            reflects.append(threading.current_thread().name)
            return original(memory, bank, body)

        monkeypatch.setattr(ops, "reflect", reflect)
        found = http.post("/banks/b/recall", json={"query": "deploys fridays"})
        reflected = http.post("/banks/b/reflect", json={"query": "deploys fridays"})
        assert found.json() == ["deploys run on Fridays"]
        assert reflected.status_code == 200, reflected.text
        other = http.post("/banks/c/recall", json={"query": "deploys"})  # c: nothing to load
        assert other.status_code == 200, other.text
    # The load took a general worker; recalls of the loaded bank, the compute lane's thread.
    assert recalls[0].startswith("memwire-worker")
    assert recalls[1].startswith("memwire-compute")
    assert recalls[2].startswith("memwire-worker")
    assert len(reflects) == 1 and reflects[0].startswith("memwire-compute")


def test_a_bad_bank_name_is_refused_as_before(served: tuple[Memory, str]) -> None:
    _, url = served
    r = httpx.post(url + "/banks/" + "x" * 300 + "/recall", json={"query": "q"}, timeout=30)
    assert r.status_code == 400
    assert "bank" in r.json()["error"]


@pytest.mark.parametrize(
    ("count", "expected"), [(None, False), (lambda: 0, True), (lambda: 1, True), (lambda: 2, False)]
)
def test_alone_means_no_other_request_in_flight(
    count: Callable[[], int] | None, expected: bool
) -> None:
    assert threads.alone(count) is expected


def test_requests_on_workers_leave_the_loop_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_handed_off", 2)
    assert threads.alone(lambda: 3)
    assert not threads.alone(lambda: 4)  # one more request, still the loop's


def test_is_loaded(tmp_path: Path) -> None:
    with Memory(tmp_path / "m.db") as memory:
        memory.retain("a note about ports", bank="b")
    memory = Memory(tmp_path / "m.db")
    try:
        assert not memory.is_loaded(bank="b")  # a new process: nothing loaded yet
        assert not memory.is_loaded(bank="nowhere")
        with pytest.raises(InvalidInputError):
            memory.is_loaded(bank="")
        assert memory.recall("ports", bank="b")
        assert memory.is_loaded(bank="b")
        assert not memory.is_loaded()  # the default bank: not this one
    finally:
        memory.close()
    assert not memory.is_loaded(bank="b")  # closed: nothing is


def test_the_servers_lazy_memory_answers_without_building_it(tmp_path: Path) -> None:
    store = open_store(tmp_path / "m.db")
    lazy = LazyMemory(store)
    try:
        assert not lazy.is_loaded(bank="b")
        assert lazy._memory is None  # asking built nothing
        lazy.built().retain("hello", bank="b")
        assert lazy.recall("hello", bank="b")
        assert lazy.is_loaded(bank="b")
    finally:
        lazy.built().close()
