"""``memwire daemon start|stop|status``: a detached server with a pid file in the memwire home.

``start`` returns 0 only once its own process answers ``/health`` (its pid and store id in the
answer's headers); when the server dies (e.g. the address is in use) it exits non-zero with the
cause from the log. ``status`` tells three states apart: serving (exit 0), not running (4), and
a process that is alive but does not answer (5); when serving, it checks what the hooks will
make of the server (its store, their token) and exits 5 when they cannot use it.
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


def _location(db: str | None) -> str | None:
    """The store a server started with ``--db db`` serves (None: the configured store, which
    ``serve`` resolves as every door does: $MEMWIRE_STORE, the config file, the default)."""
    return db


def _store_name(location: str | None) -> str:
    from memwire.locations import is_postgres_url, store_setting

    if location is None:
        setting = store_setting()
        return f"the configured store ({_store_name(setting.location)}, from {setting.source})"
    if is_postgres_url(location):
        return "a PostgreSQL store"
    return location


def hooks_view(url: str, served_store: str) -> list[tuple[str, str]]:
    """How the hooks, run with this environment, get on with the server at ``url`` that names
    ``served_store`` on /health: ``[(status, what to know or fix), ...]``, status "ok" | "warn"
    | "fail". What the hooks use: $MEMWIRE_URL, else this server when it serves the store they
    would open themselves (the configured store: $MEMWIRE_STORE, the config file, else
    $MEMWIRE_HOME's memory.db), sending $MEMWIRE_TOKEN."""
    from urllib.parse import urlsplit

    from memwire.locations import default_store, shown, store_id

    theirs = shown(default_store())
    found: list[tuple[str, str]] = []
    configured = os.environ.get("MEMWIRE_URL", "").strip()
    if configured and configured.lower() not in ("off", "local", "none", "0", "false", "no"):
        if configured.rstrip("/") != url:
            found.append(
                ("warn", f"the hooks use MEMWIRE_URL={configured}, not this server ({url})")
            )
            return found
    elif configured:
        found.append(("warn", f"MEMWIRE_URL={configured}: the hooks never use a server"))
        return found
    mine = store_id(None)
    if served_store and served_store != mine:
        found.append(
            (
                "warn",
                f"{url} serves another store than the hooks' ({theirs}), so the hooks "
                "ignore it and open their store themselves (slower, same memories): to share "
                "it, 'memwire daemon stop', then 'memwire daemon start' without --db, or run "
                "the host with MEMWIRE_HOME set to the directory of the server's store",
            )
        )
        return found
    found.append(("ok", f"serves the hooks' store ({theirs})"))
    parts = urlsplit(url)
    token = os.environ.get("MEMWIRE_TOKEN") or None
    status = _http.access(parts.hostname or "127.0.0.1", parts.port or 80, token)
    if status == 401:
        fix = (
            "the hooks send a token the server does not accept"
            if token
            else "it wants a token and the hooks send none"
        )
        found.append(
            (
                "fail",
                f"the server answers the hooks 401 ({fix}): they spool every write and inject "
                "nothing. Put the server's token in MEMWIRE_TOKEN where the agent host starts, "
                "or restart the daemon without --token (a loopback server needs none)",
            )
        )
    elif status == 200:
        found.append(("ok", "accepts the hooks' requests" + (" (token)" if token else "")))
    else:
        found.append(("warn", f"GET /banks with the hooks' token: {status}"))
    return found


def run_status(args: argparse.Namespace) -> int:
    name, info, detail = state()
    data: dict[str, Any] = {"state": name, "detail": detail}
    if info is not None:
        data.update(pid=info["pid"], url=_http.url_of(str(info.get("host")), int(info["port"])))
    if name == "not running" and info is not None:
        with contextlib.suppress(OSError):
            pid_path().unlink()
    if name == "serving" and info is not None:
        answer = _http.probe(str(info.get("host")), int(info["port"]))
        data["store"] = answer.store
        data["hooks"] = [
            {"status": st, "detail": d} for st, d in hooks_view(data["url"], answer.store)
        ]

    def human() -> str:
        if name == "serving":
            lines = [f"serving at {data['url']} (pid {data['pid']})"]
            lines += [f"  hooks: [{h['status']}] {h['detail']}" for h in data["hooks"]]
            return "\n".join(lines)
        if name == "not answering":
            return f"pid {data['pid']} is alive but {data['url']}/health {detail}"
        return f"not running ({detail})"

    emit(args, data, human)
    if name == "serving" and any(h["status"] == "fail" for h in data["hooks"]):
        return EXIT_UNHEALTHY
    return {"serving": EXIT_OK, "not running": EXIT_NOT_RUNNING}.get(name, EXIT_UNHEALTHY)


def _check_running(args: argparse.Namespace, wanted: str) -> bool:
    """True when this home's daemon already serves what is asked (say so); raise when it serves
    something else or does not answer; False when none runs."""
    name, info, detail = state()
    if info is None or name == "not running":
        return False
    url = _http.url_of(str(info.get("host")), int(info["port"]))
    if name == "not answering":
        raise CommandError(
            f"pid {info['pid']} is alive but not answering ({detail}); "
            "run 'memwire daemon stop' first",
            EXIT_UNHEALTHY,
        )
    answer = _http.probe(str(info.get("host")), int(info["port"]))
    same_place = _http.url_of(args.host, args.port) == url
    if same_place and answer.store == wanted:
        emit(
            args,
            {"state": name, "pid": info["pid"], "url": url},
            lambda: f"already serving at {url} (pid {info['pid']})",
        )
        return True
    what = "another store" if same_place else "another address"
    raise CommandError(
        f"this memwire home's daemon (pid {info['pid']}) already serves {url}, {what} than "
        f"asked ({_http.url_of(args.host, args.port)}, {_store_name(_location(db_path(args)))}); "
        "stop it first ('memwire daemon stop'), or give a second daemon its own MEMWIRE_HOME",
        EXIT_ERROR,
    )


def run_start(args: argparse.Namespace) -> int:
    from memwire.cli.serving import token_of
    from memwire.locations import store_id
    from memwire.server.runner import ServeRefused, check_bind

    token = token_of(args)
    try:
        check_bind(args.host, token)
    except ServeRefused as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    db = db_path(args)
    if db is not None and db != ":memory:":
        db = str(Path(db).expanduser().resolve())
    wanted = store_id(_location(db))
    if _check_running(args, wanted):
        return EXIT_OK
    url = _http.url_of(args.host, args.port)
    squatter = _http.probe(args.host, args.port, timeout=0.5)
    if squatter.ok and squatter.store == wanted:
        # e.g. `memwire serve` in another terminal: it serves this very store, so the hooks
        # use it; starting a second one could only fail on the address.
        emit(
            args,
            {"state": "served by another process", "pid": squatter.pid, "url": url},
            lambda: (
                f"{url} is already served by pid {squatter.pid} (not started by 'memwire "
                "daemon'), on this store: the hooks use it; nothing started"
            ),
        )
        return EXIT_OK
    if squatter.ok:
        who = f"another memwire server (pid {squatter.pid})" if squatter.pid else "a server"
        raise CommandError(
            f"{who} already answers at {url}, on another store, and it is not this home's "
            "daemon; stop it or choose another --port",
            EXIT_ERROR,
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
        # Always warm: the daemon exists to answer the hooks within their budget, and a lazy
        # server would make the first prompt after start wait for the kernel and the embedder.
        "--warm",
    ]
    if db is not None:
        command += ["--db", db]
    env = dict(os.environ)
    if token:
        env["MEMWIRE_TOKEN"] = token  # never on the command line, where ps would show it
    log_file = home / LOG_FILE
    with open(log_file, "ab") as log:
        offset = log.tell()
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
        "store": wanted,
        "token": bool(token),
        "started": time.time(),
    }
    pid_path().write_text(json.dumps(record), encoding="utf-8")
    return _wait_for_own(args, process, wanted, url, log_file, offset)


def _wait_for_own(
    args: argparse.Namespace,
    process: subprocess.Popen[bytes],
    wanted: str,
    url: str,
    log_file: Path,
    offset: int,
) -> int:
    """Wait until ``process`` itself answers /health naming ``wanted``; fail loudly else."""
    deadline = time.monotonic() + args.timeout
    detail = "not started"
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            with contextlib.suppress(OSError):
                pid_path().unlink()
            raise CommandError(
                f"the server exited with code {code} before answering:\n"
                + (_tail(log_file, offset) or "(its log is empty)")
                + f"\n(log: {log_file})",
                EXIT_ERROR,
            )
        answer = _http.probe(args.host, args.port, timeout=0.5)
        detail = answer.detail
        if answer.ok and answer.pid == process.pid:
            if answer.store != wanted:  # pragma: no cover - the child names what it was given
                raise CommandError(f"pid {process.pid} serves another store than asked")
            _started(args, process.pid, url, log_file)
            return EXIT_OK
        if answer.ok:
            detail = f"pid {answer.pid} answers there, not pid {process.pid}"
        time.sleep(0.1)
    raise CommandError(
        f"pid {process.pid} started but did not answer /health within {args.timeout:g}s "
        f"({detail}); see {log_file}",
        EXIT_UNHEALTHY,
    )


def _started(args: argparse.Namespace, pid: int, url: str, log_file: Path) -> None:
    data = {"state": "serving", "pid": pid, "url": url, "log": str(log_file)}
    emit(args, data, lambda: f"serving at {url} (pid {pid}); log: {log_file}")


def _tail(path: Path, offset: int = 0, lines: int = 5) -> str:
    """The last ``lines`` lines written to ``path`` after ``offset`` (this run's)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(offset)
            text = handle.read().decode("utf-8", errors="replace")
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
