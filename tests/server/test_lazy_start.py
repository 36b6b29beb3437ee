"""`memwire serve` answers /health without building its Memory: the kernel, numpy and the
embedder load with the first request that needs them, or in the background right after start
with ``--warm``; a store it cannot open still fails at start."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread
from test_lifecycle import free_port, start, wait_healthy

LINUX = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/maps")
NUMPY = "_multiarray_umath"


def mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


@LINUX
def test_health_answers_before_the_kernel_loads(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", port)
    try:
        wait_healthy(process, port)
        assert NUMPY not in mapped(process.pid)
        assert "memwire/_kernel/_native" not in mapped(process.pid)
        r = httpx.post(f"http://127.0.0.1:{port}/banks/a/retain", json={"content": "hello"})
        assert r.status_code == 200, r.text
        assert NUMPY in mapped(process.pid)  # loaded by the first retain
        memory_id = r.json()["id"]
        base = f"http://127.0.0.1:{port}/banks/a"
        assert httpx.post(f"{base}/recall", json={"query": "hello"}).json() == ["hello"]
        # Every route reaches the Memory through the stand-in (none is shadowed by it).
        assert httpx.get(f"{base}/memories/{memory_id}").json()["content"] == "hello"
        assert httpx.get(f"{base}/memories").json()[0]["id"] == memory_id
        assert httpx.get(f"{base}/stats").json()["count"] == 1
        assert httpx.get(f"{base}/config").status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/banks").json() == ["a"]
        assert httpx.delete(f"{base}/memories/{memory_id}").json()["forgotten"] is True
    finally:
        process.terminate()
        process.communicate(timeout=60)


@LINUX
def test_warm_builds_the_memory_in_the_background(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", port, "--warm")
    try:
        wait_healthy(process, port)
        deadline = time.monotonic() + 120
        while NUMPY not in mapped(process.pid):  # no request sent: the warm-up loads it
            assert time.monotonic() < deadline, "the Memory was never built"
            time.sleep(0.05)
        r = httpx.post(f"http://127.0.0.1:{port}/banks/a/retain", json={"content": "hello"})
        assert r.status_code == 200, r.text
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_the_server_answers_while_it_warms_up(memory: Memory) -> None:
    release, began = threading.Event(), threading.Event()

    def warm_up() -> None:  # stands in for building the Memory: held until released
        began.set()
        assert release.wait(60)

    with serve_in_thread(memory, warm_up=warm_up) as url:
        assert began.wait(60)
        assert httpx.get(f"{url}/health").text == "ok"
        r = httpx.post(f"{url}/banks/a/retain", json={"content": "served while warming"})
        assert r.status_code == 200, r.text
        release.set()


def test_a_store_that_cannot_be_opened_fails_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    process = start(blocker / "m.db", free_port())
    _out, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "could not be opened" in err and "Traceback" not in err
