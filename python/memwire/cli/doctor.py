"""``memwire doctor``: backend, store path and health, integrity check, server reachability;
and ``memwire --version``, which names the backend, the wheel and the build too."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwire._dist import DISTRIBUTION
from memwire.cli._common import EXIT_OK, EXIT_UNHEALTHY, add_common, db_path, emit

if TYPE_CHECKING:
    from memwire._kernel.backend import BackendInfo
    from memwire.memory import Memory

__all__ = ["VersionAction", "register", "version_text"]


def register(commands: Any) -> None:
    p = commands.add_parser(
        "doctor",
        help="check the backend, the store and the server",
        description="Check which kernel backend runs, the store file (path, health, SQLite "
        "integrity) and whether a server answers. Exit 0 when nothing failed, 5 otherwise.",
    )
    p.add_argument(
        "--host", default=None, help="server to probe (default: the daemon's, else 127.0.0.1)"
    )
    p.add_argument(
        "--port", type=int, default=None, help="port to probe (default: the daemon's, else 8888)"
    )
    p.add_argument(
        "--full",
        action="store_true",
        help="run the full integrity_check (default: quick_check), and compare each bank's "
        "index with its rows, rebuilding it from them when they differ",
    )
    p.add_argument(
        "--clear-loss",
        action="store_true",
        help="forget the store's recorded loss of committed writes (reported until cleared; "
        "restore from a backup first if you can)",
    )
    add_common(p)
    p.set_defaults(run=run_doctor)


Check = dict[str, Any]


def _check(name: str, status: str, detail: str, **extra: Any) -> Check:
    return {"name": name, "status": status, "detail": detail, **extra}


def _features(build: dict[str, Any]) -> str:
    """The extension's build in a few words: target, profile, cargo features, SIMD."""
    features = build.get("features") or []
    words = [str(build.get("target", "?")), str(build.get("profile", "?")), *map(str, features)]
    return f"{', '.join(words)}; SIMD: {build.get('simd', '?')}"


def fallback_why(info: BackendInfo) -> str:
    """Why the pure-Python kernel runs, and how to get the Rust one."""
    if info.requested == "python":
        return "MEMWIRE_BACKEND=python asks for it (unset it to use the Rust kernel)"
    if info.wheel_tag.endswith("py3-none-any"):
        why = "this is the pure-Python wheel (py3-none-any), which has no compiled kernel"
    else:
        why = info.reason.removeprefix("fallback: ")
    return (
        f"{why}. It ranks exactly as the Rust kernel does (docs/parity.md), only slower; for the "
        f"Rust kernel install a platform wheel of {DISTRIBUTION} (linux or macOS, x86_64 or "
        "aarch64) or build from source with Rust and a C++ compiler (README, Install)"
    )


def check_backend() -> Check:
    import memwire
    from memwire.errors import BackendError

    try:
        info = memwire.backend_info()
        build = dict(info.build)
    except BackendError as exc:
        return _check("backend", "fail", str(exc))
    facts = {
        "backend": info.name,
        "requested": info.requested,
        "reason": info.reason,
        "version": info.version,
        "contract": info.contract,
        "wheel_tag": info.wheel_tag,
        "build": build,
    }
    if info.name == "rust":
        detail = f"rust kernel ({info.reason}); {info.wheel_tag}; {_features(build)}"
        return _check("backend", "ok", detail, **facts)
    detail = f"pure-Python fallback kernel ({info.wheel_tag}): {fallback_why(info)}"
    return _check("backend", "warn", detail, **facts)


def version_text() -> str:
    """``memwire --version``: the package, the kernel that runs and why, how it was installed."""
    import platform
    import sys

    import memwire
    from memwire.errors import BackendError

    lines = [f"memwire {memwire.__version__}"]
    try:
        info = memwire.backend_info()
        build = dict(info.build)
    except BackendError as exc:
        return "\n".join([*lines, f"kernel: unavailable ({exc})"])
    lines.append(f"kernel: {info.name} ({info.reason})")
    lines.append(f"installed: {info.wheel_tag}")
    if info.name == "rust":
        lines.append(f"build: {_features(build)}; pyo3 {build.get('pyo3')}")
    lines.append(
        f"python: {platform.python_implementation()} {platform.python_version()} "
        f"({platform.machine()}, {sys.executable})"
    )
    return "\n".join(lines)


class VersionAction(argparse.Action):
    """``-V``/``--version``: prints :func:`version_text` (computed only when asked) and exits."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kw: Any):
        kw.setdefault("help", "show the version, the kernel backend and the build, then exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kw)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(version_text())
        parser.exit()


def check_store(
    path: str | None, full: bool = False, clear_loss: bool = False
) -> tuple[list[Check], Path | None]:
    from memwire.errors import InvalidInputError
    from memwire.locations import is_postgres_url, shown, store_setting
    from memwire.memory import Memory

    try:
        setting = store_setting(path)
    except InvalidInputError as exc:  # the config file is unreadable
        return [_check("store setting", "fail", str(exc))], None
    location = setting.location
    checks = [
        _check(
            "store setting",
            "ok",
            f"{shown(location)} (from {setting.source})",
            location=shown(location),
            source=setting.source,
        )
    ]
    if location == ":memory:":
        return [*checks, _check("store", "ok", "ephemeral (:memory:)")], None
    file: Path | None = None
    if not is_postgres_url(location):
        file = Path(location.removeprefix("sqlite:")).expanduser()
        if not file.exists():
            return [*checks, _missing_store(file)], None
        size = file.stat().st_size
        checks.append(
            _check("store path", "ok", f"{file} ({size:,} bytes)", path=str(file), bytes=size)
        )
    try:
        with Memory(location) as memory:
            names = memory.banks()
            total = sum(int(memory.stats(bank=b).get("count", 0)) for b in names)
            if full:
                checks += check_indexes(memory, names)
            loss = check_loss(memory, clear_loss)
        checks.append(
            _check(
                "store health",
                "ok",
                f"opens; {len(names)} bank(s), {total:,} memories",
                banks=len(names),
                memories=total,
            )
        )
        checks.append(loss)
    except Exception as exc:
        checks.append(_check("store health", "fail", f"cannot open: {type(exc).__name__}: {exc}"))
    return checks, file


def check_loss(memory: Memory, clear: bool) -> Check:
    """Committed writes the store found missing at open (docs/storage.md, "Loss at open")."""
    from memwire.store.loss import clear_store_loss

    loss = memory.health().loss
    if loss is None:
        return _check("store loss", "ok", "no committed write missing at open")
    if clear:
        clear_store_loss(memory._store)
        return _check("store loss", "ok", f"cleared the recorded loss ({loss.summary()})")
    return _check("store loss", "fail", loss.describe(), **asdict(loss))


def check_indexes(memory: Memory, names: list[str]) -> list[Check]:
    """Each bank's index against its rows (repaired when they differ), then the background
    work that loading them started (snapshots, graphs): its failed or stuck jobs."""
    from memwire._progress import track
    from memwire.memory.verify import check_index

    checks = []
    for name in track(names, len(names), "checking indexes"):
        found = check_index(memory, name)
        detail = (
            f"{found.rows:,} rows, {found.indexed:,} indexed; snapshot {found.snapshot}"
            + (f"; {found.missing:,} missing, {found.extra:,} extra" if not found.ok else "")
            + (f"; repaired: {found.repaired}" if found.repaired else "")
        )
        status = "ok" if found.ok and found.snapshot != "refused" else "warn"
        checks.append(_check(f"index {name!r}", status, detail, **asdict(found)))
    memory._snapshotter.drain()
    health = memory.health()
    detail = f"background {health.background}" + "".join(
        f"; {f.job} of bank {f.bank!r} failed {f.failures}x since {f.since}: {f.error}"
        for f in health.failures
    )
    if health.stuck:
        detail += f"; stuck on bank {health.working_on!r} for {health.working_for_s:.0f} s"
    checks.append(_check("background", "ok" if health.ok else "fail", detail))
    return checks


def _missing_store(file: Path) -> Check:
    """A store file not there yet is the normal first run: fine when it can be created."""
    import os

    ancestor = file.parent
    while not ancestor.exists() and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return _check(
            "store path", "fail", f"{file} cannot be created: {ancestor} is not a directory"
        )
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return _check("store path", "fail", f"{file} cannot be created: {ancestor} is not writable")
    return _check(
        "store path",
        "ok",
        f"{file} does not exist yet; it will be created (with its directory) by the first "
        "retain or 'memwire serve'",
        path=str(file),
    )


def check_integrity(file: Path, full: bool) -> Check:
    import sqlite3

    pragma = "integrity_check" if full else "quick_check"
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            rows = [r[0] for r in conn.execute(f"PRAGMA {pragma}").fetchall()]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return _check("integrity", "fail", f"{pragma} could not run: {exc}")
    if rows == ["ok"]:
        return _check("integrity", "ok", f"{pragma}: ok")
    return _check("integrity", "fail", f"{pragma}: " + "; ".join(map(str, rows[:5])))


def check_server(host: str | None, port: int | None, db: str | None = None) -> list[Check]:
    """Does a server answer, which store does it serve, and can the hooks use it?"""
    from memwire.cli import _http
    from memwire.cli.daemon import hooks_view, read_pidfile
    from memwire.locations import store_id
    from memwire.server.runner import DEFAULT_HOST, DEFAULT_PORT

    info = read_pidfile() or {}
    host = host or str(info.get("host") or DEFAULT_HOST)
    port = port or int(info.get("port") or DEFAULT_PORT)
    url = _http.url_of(host, port)
    answer = _http.probe(host, port)
    if not answer.ok:
        # No server is a normal state (the library works without one): a warning, not a failure.
        return [
            _check("server", "warn", f"{url}: {answer.detail}; the hooks work in-process", url=url)
        ]
    who = f"pid {answer.pid}" if answer.pid else "an older memwire"
    checks = [_check("server", "ok", f"{url} {answer.detail} ({who})", url=url, pid=answer.pid)]
    if db is not None and answer.store and answer.store != store_id(db):
        checks.append(
            _check(
                "server store",
                "warn",
                f"{url} serves another store than {db}, which this doctor run checked",
            )
        )
    for status, detail in hooks_view(url, answer.store):
        checks.append(_check("server for hooks", status, detail))
    return checks


def check_hooks() -> Check:
    """Agent-host hooks: writes waiting in the spool and the latest failures."""
    try:
        from memwire.hooks import hook_health
    except ImportError:  # hooks are an optional part of the package
        return _check("hooks", "ok", "not installed")
    health = hook_health()
    spool = health["spool"]
    detail = (
        f"spool {spool['items']} waiting ({spool['bytes']} bytes), {spool['rejected']} rejected"
    )
    failures = health["last_failures"]
    if failures:
        last = failures[-1]
        detail += f"; last failure {last.get('at')} in {last.get('event')}: {last.get('error')}"
    return _check("hooks", health["status"], detail, spool_dir=health["spool_dir"])


def run_doctor(args: argparse.Namespace) -> int:
    checks = [check_backend()]
    store_checks, file = check_store(db_path(args), args.full, args.clear_loss)
    checks += store_checks
    if file is not None:
        checks.append(check_integrity(file, args.full))
    checks += check_server(args.host, args.port, db_path(args))
    checks.append(check_hooks())
    failed = any(c["status"] == "fail" for c in checks)

    def human() -> str:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
        lines = [f"[{marks[c['status']]}] {c['name']}: {c['detail']}" for c in checks]
        lines.append("problems found" if failed else "all good")
        return "\n".join(lines)

    emit(args, {"ok": not failed, "checks": checks}, human)
    return EXIT_UNHEALTHY if failed else EXIT_OK
