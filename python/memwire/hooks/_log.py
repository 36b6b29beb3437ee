"""The hooks' own records: a log for humans, recent failures for ``doctor``, per-session audit.

Nothing here ever raises: a hook that cannot write its log still must not fail the host.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwire.hooks import _paths

if TYPE_CHECKING:
    import logging

__all__ = ["audit", "ensure_logging", "failure", "recent_failures", "setup_logging"]

MAX_FAILURES = 200
_FAILURES_FILE = "failures.jsonl"
_configured = False
_wanted = False


def _lazy_file_handler() -> logging.Handler:
    """A handler that opens the hooks log on the first record: a run that logs nothing never
    imports logging.handlers nor touches the file."""
    import logging

    class LazyFileHandler(logging.Handler):
        target: logging.Handler | None = None

        def emit(self, record: logging.LogRecord) -> None:
            if self.target is None:
                try:
                    directory = _paths.private_dir(_paths.hooks_dir())
                    self.target = _private_rotating_handler(directory / "hooks.log")
                except OSError:
                    self.target = logging.NullHandler()
            self.target.handle(record)

    return LazyFileHandler()


def _private_rotating_handler(path: Path) -> logging.Handler:
    """A rotating log whose files (the live one and each new one after a rollover) are 0600."""
    import logging
    from logging.handlers import RotatingFileHandler

    class PrivateRotatingFileHandler(RotatingFileHandler):
        def _open(self) -> Any:
            from memwire.private_files import open_private

            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
            return open(open_private(self.baseFilename, flags), "a", encoding=self.encoding)

    handler = PrivateRotatingFileHandler(path, maxBytes=1 << 20, backupCount=1, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s"))
    return handler


def setup_logging() -> None:
    """Send the ``memwire`` loggers to ``<home>/hooks/hooks.log`` and nowhere else: a hook's
    stdout is read by the host (and often shown to the model), its stderr by the user.

    When nothing has imported :mod:`logging` yet (a prompt through a server never does), this
    only takes note: :func:`ensure_logging` does the work before the first record, from
    :func:`failure` or before the store is opened in-process (the Memory API logs)."""
    global _wanted
    _wanted = True
    if "logging" in sys.modules:
        ensure_logging()


def ensure_logging() -> None:
    """Configure the ``memwire`` loggers now, if :func:`setup_logging` asked for it."""
    global _configured
    if _configured or not _wanted:
        return
    _configured = True
    import logging

    root = logging.getLogger("memwire")
    root.propagate = False
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(_lazy_file_handler())
    root.setLevel(logging.DEBUG if os.environ.get("MEMWIRE_DEBUG") else logging.INFO)


def _append(path: os.PathLike[str] | str, record: Mapping[str, Any]) -> None:
    from memwire.private_files import open_private

    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    with open(fd, "a", encoding="utf-8") as handle:
        handle.write(line)


def failure(event: str, what: str, detail: str = "") -> None:
    """Record a hook failure (kept to the last :data:`MAX_FAILURES`)."""
    from memwire.redact import redact

    what, detail = redact(what), redact(detail)
    ensure_logging()
    import logging

    logging.getLogger("memwire.hooks").warning("%s: %s %s", event, what, detail)
    from memwire.private_files import open_private

    with contextlib.suppress(OSError):
        directory = _paths.private_dir(_paths.hooks_dir())
        path = directory / _FAILURES_FILE
        _append(
            path,
            {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "event": event,
                "error": what,
                "detail": detail[:500],
            },
        )
        if path.stat().st_size > MAX_FAILURES * 600:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-MAX_FAILURES:]
            tmp = path.with_suffix(".tmp")
            with open(open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "w") as out:
                out.write("\n".join(lines) + "\n")
            os.replace(tmp, path)


def recent_failures(count: int = 5) -> list[dict[str, Any]]:
    """The last ``count`` failures, newest last."""
    try:
        path = _paths.hooks_dir() / _FAILURES_FILE
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out: list[dict[str, Any]] = []
    for line in lines[-count:]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def audit(session: str, record: Mapping[str, Any]) -> None:
    """Append one line to the session's audit log (what was injected: ids, bytes)."""
    with contextlib.suppress(OSError):
        _paths.private_dir(_paths.hooks_dir())
        directory = _paths.private_dir(_paths.audit_dir())
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        _append(directory / f"{_paths.safe_name(session)}.jsonl", {"at": stamp, **record})
