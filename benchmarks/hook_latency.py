"""Latency and CPU of the prompt hook as a host sees it: a fresh ``python -m memwire hook
prompt`` process per prompt, stdin to exit, including interpreter start-up and imports.

    python benchmarks/hook_latency.py [--memories 10000] [--runs 30] [--server] [--source DIR]

Prints wall p50 / p95 / max and the hook process's CPU time (user + system, from
``getrusage`` of the child) p50 / p95 in milliseconds, for the in-process path and, with
``--server``, for the paths through a running server: found the way a user's hooks find it
(the daemon's pid file, ``/health`` naming the hooks' own store) and named by ``MEMWIRE_URL``.
``--source`` runs the hooks of another checkout's ``python/`` (to compare before / after).
The budget the hook enforces on itself is 1.2 s of work after start-up
(``MEMWIRE_HOOK_BUDGET_MS``); hosts give the hook 5 s (the timeout ``memwire connect`` writes).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1] / "python"
Sample = tuple[float, float]  # (wall ms, CPU ms)
EMPTY = [0]  # runs of the current measurement that injected nothing
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


def _child_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _startup(env: dict[str, str], runs: int) -> list[Sample]:
    """What an empty interpreter costs here: the floor under every hook number (on a loaded
    machine CPU time grows too, so read the hook against this line)."""
    times: list[Sample] = []
    for _ in range(runs):
        cpu = _child_cpu()
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
        times.append(((time.perf_counter() - started) * 1000, (_child_cpu() - cpu) * 1000))
    return times


def _measure(env: dict[str, str], runs: int) -> list[Sample]:
    times: list[Sample] = []
    for n in range(runs):
        body = json.dumps(
            {
                "session_id": f"s{n}",
                "cwd": "/",
                "hook_event_name": "UserPromptSubmit",
                "prompt": f"how does the {WORDS_LIST[n % len(WORDS_LIST)]} deploy work?",
            }
        )
        cpu = _child_cpu()
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "memwire", "hook", "prompt", "--host", "claude"],
            input=body,
            capture_output=True,
            text=True,
            env=env,
        )
        wall = (time.perf_counter() - started) * 1000
        times.append((wall, (_child_cpu() - cpu) * 1000))
        if done.returncode != 0 or done.stderr:
            raise SystemExit(f"hook failed: {done.returncode} {done.stderr}")
        if "memwire-recall" not in done.stdout:
            EMPTY[0] += 1  # over its time budget, or nothing found: still a measured run
    return times


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def _report(label: str, samples: list[Sample]) -> None:
    wall = [w for w, _ in samples]
    cpu = [c for _, c in samples]
    empty, EMPTY[0] = EMPTY[0], 0
    print(
        f"{label:<30} wall p50 {statistics.median(wall):6.1f} p95 {_p95(wall):6.1f} "
        f"max {max(wall):6.1f} ms | CPU p50 {statistics.median(cpu):6.1f} "
        f"p95 {_p95(cpu):6.1f} ms (n={len(samples)}, {empty} injected nothing)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--server", action="store_true")
    parser.add_argument(
        "--source", type=Path, default=None, help="the python/ directory to run (default: ours)"
    )
    args = parser.parse_args()
    if args.source is not None:
        global PYTHON_DIR
        PYTHON_DIR = args.source.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        _seed(home, args.memories)
        env = _env(home, MEMWIRE_URL="off", MEMWIRE_BANK="bench")
        _report("python -c pass", _startup(env, args.runs))
        _measure(env, 2)  # warm the page cache and write the index snapshot
        EMPTY[0] = 0
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
                # As a user's hooks find it: the daemon's pid file, no MEMWIRE_URL.
                record = {"pid": server.pid, "host": "127.0.0.1", "port": port}
                (home / "server.pid").write_text(json.dumps(record))
                env = _env(home, MEMWIRE_BANK="bench")
                _measure(env, 2)
                EMPTY[0] = 0
                _report(f"server (found), {args.memories} mem", _measure(env, args.runs))
                env = _env(home, MEMWIRE_URL=url, MEMWIRE_BANK="bench")
                _report(f"server (MEMWIRE_URL), {args.memories}", _measure(env, args.runs))
            finally:
                server.terminate()
                server.wait(15)


if __name__ == "__main__":
    main()
