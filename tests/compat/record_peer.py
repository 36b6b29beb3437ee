"""Record memory-wire's answers to the scenario, from the real binary (a developer tool).

    python tests/compat/record_peer.py [--peer PATH] [--check]

Starts ``memory-wire serve`` on a free loopback port over a fresh database, plays
``compat_scenario.STEPS`` and writes the normalised answers to fixtures/memory_wire_0.7.0.json
(the file test_compat_http.py compares memwire's ``/mw`` routes against), and the schema the
binary created to fixtures/memory_wire_0.7.0_schema.sql (test_import_from.py builds memory-wire
databases with it, so ``import-from memory-wire`` is tested on the real layout in CI).
``--check`` writes nothing and exits 1 when a fresh recording differs from the committed
one. The binary is not in the repository (it is a tool to measure against;
/work/shared/peers/memory-wire/README.md), so CI runs the tests against the committed recording
and this script is run by hand.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compat_scenario import JSON, Answer, Send, Step, play

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "memory_wire_0.7.0.json"
SCHEMA = HERE / "fixtures" / "memory_wire_0.7.0_schema.sql"
DEFAULT_PEER = Path("/work/shared/peers/memory-wire/memory-wire")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def send_with(client: httpx.Client) -> Send:
    def send(step: Step, path: str) -> Answer:
        content = (
            step.raw
            if step.raw is not None
            else (None if step.body is None else json.dumps(step.body))
        )
        headers = {"content-type": step.content_type} if content is not None else {}
        r = client.request(step.method, path, content=content, headers=headers)
        return Answer(r.status_code, r.headers.get("content-type", ""), dict(r.headers), r.text)

    return send


def schema(db: str) -> str:
    """The DDL of memory-wire's own tables, indexes and triggers (not FTS5's shadow tables,
    which creating the virtual table makes), in a stable order."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        rows = conn.execute(
            "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL "
            "AND name NOT LIKE 'memories_fts_%' ORDER BY rowid"
        ).fetchall()
    return "".join(f"{sql};\n" for (sql,) in rows)


def record(peer: Path) -> tuple[list[dict[str, object]], str]:
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "XDG_DATA_HOME": home}
        db = str(Path(home) / "memory.db")
        cmd = [str(peer), "serve", "--addr", f"127.0.0.1:{port}", "--db", db]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                for _ in range(100):
                    try:
                        if client.get("/health").text == "ok":
                            break
                    except httpx.TransportError:
                        time.sleep(0.05)
                else:
                    raise SystemExit("memory-wire did not answer /health")
                return play(send_with(client)), schema(db)
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, default=DEFAULT_PEER, help="the memory-wire binary")
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    args = parser.parse_args()
    if not args.peer.is_file():
        print(f"no memory-wire binary at {args.peer}", file=sys.stderr)
        return 2
    version = subprocess.run(
        [str(args.peer), "--version"], capture_output=True, text=True, check=True
    ).stdout.strip()
    steps, ddl = record(args.peer)
    recorded = {"peer": version, "content_type": JSON, "steps": steps}
    text = json.dumps(recorded, indent=1, ensure_ascii=False) + "\n"
    if args.check:
        same = FIXTURE.read_text(encoding="utf-8") == text
        same_schema = SCHEMA.read_text(encoding="utf-8") == ddl
        print("the answers " + ("match" if same else "differ"), file=sys.stderr)
        print("the schema " + ("matches" if same_schema else "differs"), file=sys.stderr)
        return 0 if same and same_schema else 1
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(text, encoding="utf-8")
    SCHEMA.write_text(ddl, encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(recorded['steps'])} steps, {version})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
