"""Import a database the real memory-wire binary filled, and check every memory survived.

    python benchmarks/import_memory_wire.py [--n 10000] [--peer PATH] [--backend rust|python]

Starts ``memory-wire serve`` (/work/shared/peers/memory-wire, not in the repository) over a
fresh database, retains ``--n`` memories through its HTTP API (three banks, text in several
scripts, context, tags, one in ten with a document id: tests/compat/mw_database.generate),
stops it, then runs ``memwire import-from memory-wire`` on that database into a fresh store
and compares every memory with the peer's own rows: count per bank, content, context, tags
(in order), created_at and document id. memory-wire sets ``created_at`` itself (a retain's
time is ignored), so the times compared are the ones it stored. Prints the timings; exits 1 on
any difference. Nothing here asserts timings: they are for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "compat"))

from mw_database import generate  # noqa: E402

DEFAULT_PEER = Path("/work/shared/peers/memory-wire/memory-wire")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def fill(peer: Path, db: Path, n: int) -> float:
    """Retain ``n`` generated memories through the peer's HTTP API; the seconds it took."""
    port = free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(db.parent)}
    cmd = [str(peer), "serve", "--addr", f"127.0.0.1:{port}", "--db", str(db)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(200):
                with contextlib.suppress(httpx.TransportError):
                    if client.get("/health").text == "ok":
                        break
                time.sleep(0.05)
            started = time.perf_counter()
            for row in generate(n):
                body: dict[str, object] = {"content": row.content, "tags": list(row.tags)}
                if row.context is not None:
                    body["context"] = row.context
                if row.document_id is not None:
                    body["document_id"] = row.document_id
                bank = quote(row.bank, safe="")  # memory-wire takes "a/b" percent-encoded
                client.post(f"/banks/{bank}/retain", json=body).raise_for_status()
            return time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def peer_rows(db: Path) -> dict[str, dict[str, tuple[object, ...]]]:
    """The peer's memories by bank, then content: (context, tags, created_at, document_id)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        tags: dict[str, list[str]] = {}
        for memory_id, tag in conn.execute("SELECT memory_id, tag FROM memory_tags ORDER BY rowid"):
            tags.setdefault(memory_id, []).append(tag)
        out: dict[str, dict[str, tuple[object, ...]]] = {}
        for mid, bank, content, context, created, doc in conn.execute(
            "SELECT m.id, b.name, m.content, m.context, m.created_at, m.document_id "
            "FROM memories m JOIN banks b ON b.id = m.bank_id"
        ):
            when = datetime.fromisoformat(created.replace("Z", "+00:00"))
            out.setdefault(bank, {})[content] = (context, tuple(tags.get(mid, [])), when, doc)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--peer", type=Path, default=DEFAULT_PEER)
    parser.add_argument("--backend", default=None, help="memwire kernel (default: auto)")
    args = parser.parse_args()
    if not args.peer.is_file():
        print(f"no memory-wire binary at {args.peer}", file=sys.stderr)
        return 2
    if args.backend:
        os.environ["MEMWIRE_BACKEND"] = args.backend
    from memwire.importers import import_from
    from memwire.memory import Memory

    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "memory-wire.db"
        filled = fill(args.peer, source, args.n)
        want = peer_rows(source)
        print(f"memory-wire retained {args.n} memories over HTTP in {filled:.1f} s")
        with Memory(Path(scratch) / "memwire.db") as memory:
            started = time.perf_counter()
            summary = import_from(memory, "memory-wire", source)
            took = time.perf_counter() - started
            print(
                f"memwire ({memory.backend}) imported them in {took:.2f} s "
                f"({summary.read / took:,.0f} memories/s)"
            )
            print(summary.text())
            differences = 0
            for bank, rows in want.items():
                have = []
                while page := memory.memories(bank=bank, limit=1000, offset=len(have)):
                    have.extend(page)
                if len(have) != len(rows):
                    print(f"bank {bank!r}: {len(have)} memories, the peer has {len(rows)}")
                    differences += 1
                for record in have:
                    got = (record.context, record.tags, record.created_at, record.document_id)
                    if rows.get(record.content) != got:
                        differences += 1
                        print(
                            f"differs: {record.content[:60]!r}: {got} != {rows.get(record.content)}"
                        )
        total = sum(len(rows) for rows in want.values())
        print(f"compared {total} memories in {len(want)} banks: {differences} differences")
        return 1 if differences else 0


if __name__ == "__main__":
    raise SystemExit(main())
