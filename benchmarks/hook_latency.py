"""Wall-clock latency of the prompt hook as a host sees it: a fresh ``python -m memwire hook
prompt`` process per prompt, stdin to exit, including interpreter start-up and imports.

    python benchmarks/hook_latency.py [--memories 10000] [--runs 30] [--server]

Prints p50 / p95 / max in milliseconds for the in-process path (and, with ``--server``, for
the path through a running server). The budget the hook enforces on itself is 1.2 s of work
after start-up (``MEMWIRE_HOOK_BUDGET_MS``); hosts give the hook 5 s (the timeout ``memwire
connect`` writes).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"
WORDS = (
    "deploy staging production release database migration cache queue worker api auth token "
    "config build test lint docker kubernetes terraform bucket index search vector embedding "
    "latency budget hook prompt session transcript spool drain server client python rust"
)
WORDS_LIST = WORDS.split()


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    env["PYTHONPATH"] = str(PYTHON_DIR)
    env["MEMWIRE_HOME"] = str(home)
    env["MEMWIRE_BACKEND"] = os.environ.get("MEMWIRE_BACKEND", "auto")
    env.update(extra)
    return env


def _seed(home: Path, count: int) -> None:
    sys.path.insert(0, str(PYTHON_DIR))
    from memwire.memory import Memory

    items = [
        " ".join(WORDS_LIST[(n * 7 + k * 13) % len(WORDS_LIST)] for k in range(12)) + f" fact {n}"
        for n in range(count)
    ]
    with Memory(home / "memory.db") as memory:
        memory.retain_many(items, bank="bench")


def _measure(env: dict[str, str], runs: int) -> list[float]:
    times = []
    for n in range(runs):
        body = json.dumps(
            {
                "session_id": f"s{n}",
                "cwd": "/",
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"how does the {WORDS_LIST[n % len(WORDS_LIST)]} deploy work?",
            }
        )
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memwire", "hook", "prompt", "--host", "claude"],
            input=body,
            capture_output=True,
            text=True,
            env=env,
        )
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0 or done.stderr:
            raise SystemExit(f"hook failed: {done.returncode} {done.stderr}")
    return times


def _report(label: str, times: list[float]) -> None:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]
    print(
        f"{label:<28} p50 {statistics.median(ordered):7.1f} ms   p95 {p95:7.1f} ms   "
        f"max {ordered[-1]:7.1f} ms   (n={len(ordered)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--server", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _seed(home, args.memories)
        env = _env(home, MEMWIRE_URL="off", MEMWIRE_BANK="bench")
        _measure(env, 2)  # warm the page cache and write the index snapshot
        _report(f"in-process, {args.memories} mem", _measure(env, args.runs))
        if args.server:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = sock.getsockname()[1]
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "memwire",
                    "serve",
                    "--port",
                    str(port),
                    "--db",
                    str(home / "memory.db"),
                ],
                env=_env(home / "srv"),
                stderr=subprocess.DEVNULL,
            )
            try:
                url = f"http://127.0.0.1:{port}"
                for _ in range(300):
                    try:
                        urllib.request.urlopen(url + "/health", timeout=1).read()
                        break
                    except OSError:
                        time.sleep(0.1)
                env = _env(home, MEMWIRE_URL=url, MEMWIRE_BANK="bench")
                _measure(env, 2)
                _report(f"server, {args.memories} mem", _measure(env, args.runs))
            finally:
                server.terminate()
                server.wait(15)


if __name__ == "__main__":
    main()
