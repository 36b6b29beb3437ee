"""``GET /health?details=1`` is Memory.health() over HTTP (issue 19): the background thread's
state, failed jobs and a loss found at open, 503 when any is wrong; plain ``/health`` stays the
bare ``ok``, and asking for details does not build a lazy server's Memory."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import httpx
import pytest
from memwire.errors import StorageFullError
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread
from memwire.store.sqlite.ledger import LEDGER_SUFFIX
from test_lifecycle import free_port, start, wait_healthy

NUMPY = "_multiarray_umath"


def test_details_of_a_healthy_server(client: httpx.Client) -> None:
    assert client.get("/health").text == "ok"
    assert client.get("/health?details=0").text == "ok"
    r = client.get("/health", params={"details": "1"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {
        "status": "ok",
        "memory": "loaded",
        "background": "idle",
        "working_on": None,
        "working_for_s": None,
        "stuck": False,
        "pending": [],
        "failures": [],
        "loss": None,
    }
    refused = client.get("/health", params={"details": "yes please"})
    assert refused.status_code == 400
    assert refused.json() == {"error": "details must be 1, true, 0 or false"}


def test_a_failed_background_job_answers_503(memory: Memory, client: httpx.Client) -> None:
    def full(bank: str) -> None:
        raise StorageFullError("the disk holding the store is full")

    worker = memory._snapshotter
    worker._snapshot = full
    worker.retry_base = 3600.0  # no retry during the test
    worker.request("notes")
    worker.drain()

    r = client.get("/health?details=true")
    assert r.status_code == 503
    body = r.json()
    assert body["status"] == "unhealthy" and body["pending"] == ["notes"]
    [failure] = body["failures"]
    assert failure["bank"] == "notes" and failure["job"] == "snapshot"
    assert failure["error"] == "the disk holding the store is full" and failure["failures"] == 1
    assert client.get("/health").text == "ok"  # liveness is not readiness


def test_details_need_the_token_when_one_is_set(memory: Memory) -> None:
    token = "a-token-of-enough-length"
    with serve_in_thread(memory, token=token) as url:
        assert httpx.get(f"{url}/health").text == "ok"
        assert httpx.get(f"{url}/health?details=1").status_code == 401
        authorised = httpx.get(
            f"{url}/health?details=1", headers={"Authorization": f"Bearer {token}"}
        )
        assert authorised.status_code == 200 and authorised.json()["status"] == "ok"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/maps")
def test_a_lazy_server_reports_a_loss_without_loading_the_kernel(tmp_path: Path) -> None:
    live, db = tmp_path / "live.db", tmp_path / "memory.db"
    memory = Memory(live)
    try:
        for i in range(12):
            memory.retain(f"memory {i}")
        for suffix in ("", "-wal", LEDGER_SUFFIX):  # what a crash leaves, then the WAL cut
            shutil.copyfile(f"{live}{suffix}", f"{db}{suffix}")
    finally:
        memory.close()
    with open(f"{db}-wal", "r+b") as handle:
        handle.truncate(handle.seek(0, 2) // 2)

    port = free_port()
    process = start(db, port)
    try:
        wait_healthy(process, port)
        r = httpx.get(f"http://127.0.0.1:{port}/health?details=1")
        assert r.status_code == 503
        body = r.json()
        assert body["memory"] == "not loaded yet" and body["background"] == "not started"
        assert body["failures"] == [] and body["status"] == "unhealthy"
        loss = body["loss"]
        assert loss["recorded_memories"] == 12 and loss["found_memories"] < 12
        assert "memwire doctor --clear-loss" in loss["detail"]
        maps = Path(f"/proc/{process.pid}/maps").read_text()
        assert NUMPY not in maps and "memwire/_kernel/_native" not in maps
        # Once a request builds the Memory, the details are its health(): the same loss.
        assert httpx.get(f"http://127.0.0.1:{port}/banks").status_code == 200
        built = httpx.get(f"http://127.0.0.1:{port}/health?details=1").json()
        assert built["memory"] == "loaded" and built["loss"] == loss
    finally:
        process.terminate()
        _, err = process.communicate(timeout=60)
    assert "the store lost committed writes before it was opened" in err  # logged at start
