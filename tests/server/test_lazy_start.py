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


# Imported by nothing that answers /health: what a request that needs it loads (the Memory and
# its kernel, the MCP SDK, anyio's worker threads) or what serving never uses (uvicorn's
# command line and supervisors).
DEFERRED = (
    "numpy",
    "memwire._kernel._native",
    "memwire._kernel.backend",
    "memwire.memory",
    "memwire.embed",
    "mcp",
    "pydantic",
    "memwire.server.mcp_server",
    "memwire.server.openapi",
    "memwire.server.ops",
    "memwire.server.fields",
    "anyio._backends._asyncio",
    "click",
    "multiprocessing",
    "memwire.importers",
)

# Runs `memwire serve` in the main thread (it handles the signals); a thread waits for the
# first /health over a raw socket (importing nothing), then names the deferred modules loaded
# by then, sends a retain and an MCP request, names them again, and stops the server.
DRIVER = """
import json, os, signal, socket, sys, threading, time
from memwire.cli import main

port, deferred = int(sys.argv[1]), json.loads(sys.argv[2])

def ask(request):
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(request)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return data

def post(path, body):
    body = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n"
            "Content-Type: application/json\\r\\nAccept: application/json, text/event-stream\\r\\n"
            f"Content-Length: {len(body)}\\r\\n\\r\\n").encode()
    return ask(head + body).split(b"\\r\\n", 1)[0].decode()

def probe():
    while True:
        try:
            health = b"GET /health HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nConnection: close\\r\\n\\r\\n"
            if ask(health).endswith(b"ok"):
                break
        except OSError:
            time.sleep(0.02)
    before = [m for m in deferred if m in sys.modules]
    statuses = [post("/banks/a/retain", {"content": "hello"}),
                post("/banks/a/recall", {"query": "hello"}),
                post("/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})]
    after = [m for m in deferred if m in sys.modules]
    print(json.dumps({"before": before, "after": after, "statuses": statuses}), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=probe, daemon=True).start()
sys.exit(main(["serve", "--db", sys.argv[3], "--port", str(port)]))
"""


def test_health_imports_none_of_the_deferred_modules(tmp_path: Path) -> None:
    import json
    import os
    import subprocess

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(port), json.dumps(DEFERRED), str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["before"] == []
    assert report["statuses"] == ["HTTP/1.1 200 OK"] * 3
    # The first requests loaded what they needed (and the server answered them with it).
    for loaded in (
        "numpy",
        "memwire._kernel.backend",
        "memwire.memory",
        "mcp",
        "anyio._backends._asyncio",
        "memwire.server.ops",
    ):
        assert loaded in report["after"]


def test_uvicorn_without_its_init_is_completed_on_first_use() -> None:
    import subprocess

    code = (
        "import sys\n"
        "from memwire.server.runner import _uvicorn_core\n"
        "config, server = _uvicorn_core()\n"
        "assert 'click' not in sys.modules and 'uvicorn.main' not in sys.modules\n"
        "import uvicorn\n"
        "assert uvicorn.Config is config and uvicorn.Server is server\n"
        "assert 'click' not in sys.modules\n"
        "assert callable(uvicorn.run) and uvicorn.__version__\n"  # runs the real __init__
        "assert sys.modules['uvicorn.main'].Server is server\n"
        "from uvicorn.lifespan.on import LifespanOn\n"
        "try:\n"
        "    uvicorn.no_such_name\n"
        "except AttributeError:\n"
        "    print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
