"""Durable before acknowledged, under group commit: concurrent single retains through `memwire
serve`, the server killed (SIGKILL) mid-stream; every retain it answered is in the store."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import httpx
import pytest
from memwire.memory import Memory
from test_lifecycle import free_port, start, wait_healthy

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

CLIENTS = 6
KILL_AFTER = 150  # acknowledged retains before the kill


def test_every_acknowledged_retain_survives_a_kill(tmp_path: Path) -> None:
    db, port = tmp_path / "memory.db", free_port()
    process = start(db, port)
    acknowledged: list[tuple[str, str]] = []
    lock = threading.Lock()
    enough = threading.Event()

    def client(n: int) -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            for i in range(10_000):
                content = f"client {n} note {i}"
                try:
                    r = http.post("/banks/k/retain", json={"content": content})
                except httpx.HTTPError:
                    return  # the server is gone: this retain was never acknowledged
                if r.status_code != 200:
                    return
                with lock:
                    acknowledged.append((r.json()["id"], content))
                    if len(acknowledged) >= KILL_AFTER:
                        enough.set()

    try:
        wait_healthy(process, port)
        threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        assert enough.wait(120), "the server stopped answering before the kill"
        process.send_signal(signal.SIGKILL)  # no shutdown, no close: only what was committed
        process.wait(30)
        for t in threads:
            t.join(60)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert len(acknowledged) >= KILL_AFTER
    with Memory(db) as memory:
        for memory_id, content in acknowledged:
            assert memory.get(memory_id, bank="k").content == content
