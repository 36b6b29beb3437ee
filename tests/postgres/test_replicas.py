"""Several memwire servers over one PostgreSQL database (issue 14): every write lands once, and
every server answers with it as soon as it is acknowledged (read-your-writes on any replica:
each server reads the bank's head before a recall and replays what it lacks)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from pg_servers import (
    child_env,
    free_port,
    proxied,
    scratch_url,
    servers,
    start_server,
    stop,
    wait_healthy,
)
from postgres_support import postgres_url

# The servers and writers are children that pick their own kernel; the store is the subject.
pytestmark = pytest.mark.backend_independent

WRITER = Path(__file__).with_name("writer.py")
SERVERS, WRITERS, EACH = 3, 4, 300


def test_three_servers_four_writers_every_write_everywhere_at_once() -> None:
    url = scratch_url()
    with servers(url, SERVERS) as ports:
        writers = [
            subprocess.Popen(
                [sys.executable, str(WRITER), str(w), str(EACH), *map(str, ports)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=child_env(),
            )
            for w in range(WRITERS)
        ]
        lines: list[dict[str, object]] = []
        for process in writers:
            out, err = process.communicate(timeout=1800)
            assert process.returncode == 0, err
            assert err == "", err
            lines += [json.loads(line) for line in out.splitlines()]

        errors = [line for line in lines if "error" in line]
        assert errors == []
        assert len(lines) == WRITERS * EACH
        ids = {str(line["id"]) for line in lines}
        assert len(ids) == WRITERS * EACH  # every retain stored a memory of its own
        # Right after each acknowledgement, each of the three servers found it by its token.
        late = [line for line in lines if line["missed"] or line["failed"]]
        assert late == []
        assert {line["via"] for line in lines} == set(ports)  # writes went through every one

        for port in ports:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
                stats = client.get("/banks/team/stats").json()
                assert stats["count"] == WRITERS * EACH
                assert stats["tags"] == {f"w{w}": EACH for w in range(WRITERS)}
                listed: set[str] = set()
                offset = 0
                while True:
                    page = client.get(
                        "/banks/team/memories", params={"limit": 500, "offset": offset}
                    ).json()
                    if not page:
                        break
                    listed |= {m["id"] for m in page}
                    offset += len(page)
                assert listed == ids


def test_killing_a_server_and_cutting_the_database_mid_load_loses_no_acknowledged_write() -> None:
    relay = proxied(postgres_url())
    url = relay.url(scratch_url())
    ports = [free_port() for _ in range(SERVERS)]
    processes = [start_server(url, port) for port in ports]
    writers: list[subprocess.Popen[str]] = []
    try:
        for process, port in zip(processes, ports, strict=True):
            wait_healthy(process, port)
        writers = [
            subprocess.Popen(
                [sys.executable, str(WRITER), str(w), "200", *map(str, ports)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=child_env(),
            )
            for w in range(2)
        ]
        first = writers[0]
        assert first.stdout is not None
        early = [json.loads(first.stdout.readline()) for _ in range(40)]
        processes[2].kill()  # mid-load: no drain, no snapshot, no goodbye
        relay.cut()  # and every server's database connection with it
        time.sleep(1.0)  # an outage of about a second (what is asserted is not timing)
        relay.resume()
        lines = list(early)
        for process in writers:
            out, err = process.communicate(timeout=1800)
            assert process.returncode == 0, err
            lines += [json.loads(line) for line in out.splitlines()]
    finally:
        for process in writers:
            if process.poll() is None:
                process.kill()
        for process in processes:
            stop(process)

    acked = {str(line["id"]) for line in lines if "id" in line}
    assert any("error" in line for line in lines)  # the outage happened while writing
    assert len(acked) > 40
    # A server started afterwards, and so every replica, holds every acknowledged write.
    port = free_port()
    fresh = start_server(url, port)
    try:
        wait_healthy(fresh, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for memory_id in sorted(acked):
                assert client.get(f"/banks/team/memories/{memory_id}").status_code == 200
            assert client.get("/banks/team/stats").json()["count"] >= len(acked)
            for line in lines:
                if "id" in line:
                    r = client.post(
                        "/banks/team/recall", json={"query": line["token"], "format": "full"}
                    )
                    assert line["id"] in [h["id"] for h in r.json()]
    finally:
        stop(fresh)
        relay.cut()
