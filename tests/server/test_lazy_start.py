"""`memwire serve` answers /health before it loads the kernel and numpy (they load with the
first request that needs the Memory), yet a store it cannot open still fails at start."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from test_lifecycle import free_port, start, wait_healthy

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/maps")

HEAVY = ("_multiarray_umath", "memwire/_kernel/_native")


def mapped(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def test_health_answers_before_the_kernel_loads(tmp_path: Path) -> None:
    port = free_port()
    process = start(tmp_path / "m.db", port)
    try:
        wait_healthy(process, port)
        maps = mapped(process.pid)
        assert not [name for name in HEAVY if name in maps]
        r = httpx.post(f"http://127.0.0.1:{port}/banks/a/retain", json={"content": "hello"})
        assert r.status_code == 200, r.text
        assert "_multiarray_umath" in mapped(process.pid)  # loaded by the first retain
        r = httpx.post(f"http://127.0.0.1:{port}/banks/a/recall", json={"query": "hello"})
        assert r.json() == ["hello"]
    finally:
        process.terminate()
        process.communicate(timeout=60)


def test_a_store_that_cannot_be_opened_fails_at_start(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    process = start(blocker / "m.db", free_port())
    _out, err = process.communicate(timeout=60)
    assert process.returncode != 0
    assert "could not be opened" in err and "Traceback" not in err
