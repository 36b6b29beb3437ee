"""memory-wire's own client code against memwire's ``/mw`` routes (a developer check).

    python tests/compat/peer_client_check.py [--peer PATH]

Starts ``python -m memwire serve`` on a free loopback port over a scratch store, stores a
memory through ``/mw``, then runs the real memory-wire binary as its users do, with
``MEMORY_WIRE_URL=http://127.0.0.1:PORT/mw``: ``memory-wire doctor`` must find the server up,
and ``memory-wire hook prompt`` (the recall its agent hooks inject) must show the memory.
Exits 1 when either does not. The binary is not in the repository, so CI does not run this;
tests/compat/test_compat_http.py replays its recorded HTTP answers instead.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from record_peer import DEFAULT_PEER, free_port

MEMORY = "The deploy key rotates every Monday at 09:00 UTC"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path, default=DEFAULT_PEER, help="the memory-wire binary")
    args = parser.parse_args()
    if not args.peer.is_file():
        print(f"no memory-wire binary at {args.peer}", file=sys.stderr)
        return 2
    port = free_port()
    with tempfile.TemporaryDirectory() as home:
        cmd = [sys.executable, "-m", "memwire", "serve", "--port", str(port)]
        cmd += ["--db", str(Path(home) / "memwire.db")]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            base = f"http://127.0.0.1:{port}/mw"
            with httpx.Client(base_url=base, timeout=30) as client:
                for _ in range(300):
                    with contextlib.suppress(httpx.TransportError):
                        if client.get("/health").text == "ok":
                            break
                    time.sleep(0.1)
                client.post("/banks/demo/retain", json={"content": MEMORY}).raise_for_status()
            env = {**os.environ, "HOME": home, "XDG_DATA_HOME": home, "MEMORY_WIRE_URL": base}
            doctor = subprocess.run(
                [str(args.peer), "doctor"], env=env, capture_output=True, text=True, timeout=60
            ).stdout
            payload = {"prompt": "when does the deploy key rotate?", "session_id": "s1"}
            hook = subprocess.run(
                [str(args.peer), "hook", "prompt", "--bank", "demo"],
                input=json.dumps({**payload, "cwd": home, "hook_event_name": "UserPromptSubmit"}),
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
        finally:
            server.terminate()
            server.wait(timeout=30)
    up = any(line.split() == ["server", "up"] for line in doctor.splitlines())
    recalled = MEMORY in hook
    print(f"memory-wire doctor against {base}: server {'up' if up else 'NOT up'}")
    print(f"memory-wire hook prompt: {'recalled' if recalled else 'did NOT recall'} the memory")
    print(hook.strip())
    return 0 if up and recalled else 1


if __name__ == "__main__":
    raise SystemExit(main())
