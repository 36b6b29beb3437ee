"""Several memwire servers over one PostgreSQL database (issue 14): every write lands once, and
every server answers with it as soon as it is acknowledged (read-your-writes on any replica:
each server reads the bank's head before a recall and replays what it lacks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pg_servers import child_env, scratch_url, servers

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
        late = [line for line in lines if line["missed"]]
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
