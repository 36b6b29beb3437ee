"""``memwire daemon start|stop|status``: a detached server with a pid file in the memwire home.

``start`` returns only once ``/health`` answers (or the server failed: its log says why).
``status`` tells three states apart: serving (exit 0), not running (4), and a process that is
alive but does not answer (5).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memwire.cli import _http
from memwire.cli._common import (
    EXIT_ERROR,
    EXIT_NOT_RUNNING,
    EXIT_OK,
    EXIT_UNHEALTHY,
    EXIT_USAGE,
    CommandError,
    add_common,
    db_path,
    emit,
    home_dir,
)

__all__ = ["LOG_FILE", "PID_FILE", "read_pidfile", "register"]

PID_FILE = "server.pid"
LOG_FILE = "server.log"


def register(commands: Any) -> None:
    p = commands.add_parser(
        "daemon",
        help="run the server in the background (start, stop, status)",
        description="Manage a detached memwire server. Its pid file and log live in the "
        "memwire home ($MEMWIRE_HOME, else the XDG data dir).",
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    start = actions.add_parser(
        "start",
        help="start a detached server and wait until it answers",
        description="Start `memwire serve` detached and return once /health answers.",
    )
    from memwire.cli.serving import add_serve_options

    add_serve_options(start)
    start.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        help="seconds to wait for /health (default: %(default)s)",
    )
    add_common(start)
    start.set_defaults(run=run_start)

    stop = actions.add_parser(
        "stop",
        help="stop the detached server (SIGTERM, then wait)",
        description="Stop the detached server gracefully.",
    )
    stop.add_argument(
        "--timeout",
        type=float,
        default=15.0,
        help="seconds to wait for it to exit (default: %(default)s)",
    )
    add_common(stop, db=False)
    stop.set_defaults(run=run_stop)

    status = actions.add_parser(
        "status",
        help="serving (0), not running (4) or alive but not answering (5)",
        description="Say whether the detached server is serving (exit 0), not running "
        "(exit 4), or alive but not answering (exit 5).",
    )
    add_common(status, db=False)
    status.set_defaults(run=run_status)
    p.set_defaults(run=lambda args: _usage(p))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return EXIT_USAGE


def pid_path() -> Path:
    return home_dir() / PID_FILE


def read_pidfile() -> dict[str, Any] | None:
    try:
        data = json.loads(pid_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    return data


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _is_memwire(pid: int) -> bool:
    """Best effort: is ``pid`` a memwire server (not a recycled pid)? True when unknown."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"memwire" in handle.read()
    except OSError:
        return True


def state() -> tuple[str, dict[str, Any] | None, str]:
    """("serving" | "not running" | "not answering", pid file, detail)."""
    info = read_pidfile()
    if info is None:
        return "not running", None, "no pid file"
    pid = info["pid"]
    if not alive(pid) or not _is_memwire(pid):
        return "not running", info, f"pid {pid} is gone (stale pid file)"
    ok, detail = _http.health(str(info.get("host", "127.0.0.1")), int(info.get("port", 0)))
    return ("serving" if ok else "not answering"), info, detail


def run_status(args: argparse.Namespace) -> int:
    name, info, detail = state()
    data: dict[str, Any] = {"state": name, "detail": detail}
    if info is not None:
        data.update(pid=info["pid"], url=_http.url_of(str(info.get("host")), int(info["port"])))
    if name == "not running" and info is not None:
        with contextlib.suppress(OSError):
            pid_path().unlink()

    def human() -> str:
        if name == "serving":
            return f"serving at {data['url']} (pid {data['pid']})"
        if name == "not answering":
            return f"pid {data['pid']} is alive but {data['url']}/health {detail}"
        return f"not running ({detail})"

    emit(args, data, human)
    return {"serving": EXIT_OK, "not running": EXIT_NOT_RUNNING}.get(name, EXIT_UNHEALTHY)


def run_start(args: argparse.Namespace) -> int:
    from memwire.cli.serving import token_of
    from memwire.server.runner import ServeRefused, check_bind

    token = token_of(args)
    try:
        check_bind(args.host, token)
    except ServeRefused as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    name, info, detail = state()
    if name == "serving" and info is not None:
        url = _http.url_of(str(info.get("host")), int(info["port"]))
        emit(
            args,
            {"state": name, "pid": info["pid"], "url": url},
            lambda: f"already serving at {url} (pid {info['pid']})",
        )
        return EXIT_OK
    if name == "not answering" and info is not None:
        raise CommandError(
            f"pid {info['pid']} is alive but not answering ({detail}); "
            "run 'memwire daemon stop' first",
            EXIT_UNHEALTHY,
        )
    home = home_dir()
    home.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "memwire",
        "serve",
        "--host",
        args.host,
        "--port",
        str(args.port),
        "--log-level",
        args.log_level,
        *(["--warm"] if args.warm else []),
    ]
    db = db_path(args)
    if db is not None:
        command += ["--db", str(Path(db).expanduser().resolve()) if db != ":memory:" else db]
    env = dict(os.environ)
    if token:
        env["MEMWIRE_TOKEN"] = token  # never on the command line, where ps would show it
    log_file = home / LOG_FILE
    with open(log_file, "ab") as log:
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
    record = {
        "pid": process.pid,
        "host": args.host,
        "port": args.port,
        "db": db,
        "started": time.time(),
    }
    pid_path().write_text(json.dumps(record), encoding="utf-8")
    deadline = time.monotonic() + args.timeout
    detail = "not started"
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            with contextlib.suppress(OSError):
                pid_path().unlink()
            raise CommandError(
                f"the server exited with code {code} before answering; see {log_file}:\n"
                + _tail(log_file),
                EXIT_ERROR,
            )
        ok, detail = _http.health(args.host, args.port, timeout=0.5)
        if ok:
            url = _http.url_of(args.host, args.port)
            _started(args, process.pid, url, log_file)
            return EXIT_OK
        time.sleep(0.1)
    raise CommandError(
        f"pid {process.pid} started but /health did not answer within {args.timeout:g}s "
        f"({detail}); see {log_file}",
        EXIT_UNHEALTHY,
    )


def _started(args: argparse.Namespace, pid: int, url: str, log_file: Path) -> None:
    data = {"state": "serving", "pid": pid, "url": url, "log": str(log_file)}
    emit(args, data, lambda: f"serving at {url} (pid {pid}); log: {log_file}")


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def run_stop(args: argparse.Namespace) -> int:
    info = read_pidfile()
    if info is None or not alive(info["pid"]) or not _is_memwire(info["pid"]):
        with contextlib.suppress(OSError):
            pid_path().unlink()
        emit(args, {"state": "not running"}, lambda: "not running")
        return EXIT_OK
    pid = info["pid"]
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            with contextlib.suppress(OSError):
                pid_path().unlink()
            emit(args, {"state": "stopped", "pid": pid}, lambda: f"stopped (pid {pid})")
            return EXIT_OK
        time.sleep(0.1)
    raise CommandError(f"pid {pid} did not exit within {args.timeout:g}s of SIGTERM", EXIT_ERROR)
