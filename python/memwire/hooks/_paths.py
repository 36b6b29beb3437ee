"""Where the hooks keep their files, all under the memwire home.

``$MEMWIRE_HOME`` when set, else the directory of the default store (the XDG data dir
``memwire``). Layout::

    <home>/spool/*.jsonl          writes not yet delivered (drained on the next hook run)
    <home>/spool/rejected.jsonl   writes the store refused as invalid (kept, never retried)
    <home>/hooks/hooks.log        what went wrong, for humans (rotated at 1 MiB)
    <home>/hooks/failures.jsonl   the recent failures, for ``memwire doctor`` (bounded)
    <home>/hooks/sessions/<id>.json   per-session state: last prompt, transcript cursor
    <home>/hooks/audit/<id>.jsonl     what was injected into each session (ids, bytes)
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = [
    "audit_dir",
    "home",
    "hooks_dir",
    "private_dir",
    "safe_name",
    "sessions_dir",
    "spool_dir",
]

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def home() -> Path:
    """The memwire home: ``$MEMWIRE_HOME``, else the default store's directory."""
    value = os.environ.get("MEMWIRE_HOME", "").strip()
    if value:
        return Path(value).expanduser()
    from memwire.locations import default_path

    return default_path().parent


def hooks_dir() -> Path:
    return home() / "hooks"


def spool_dir() -> Path:
    return home() / "spool"


def sessions_dir() -> Path:
    return hooks_dir() / "sessions"


def audit_dir() -> Path:
    return hooks_dir() / "audit"


def private_dir(directory: Path) -> Path:
    """Make one of the hooks' directories (0700, its missing parents too; see
    :mod:`memwire.private_files`). Raises OSError."""
    from memwire.private_files import private_dir as make

    return make(directory)


def safe_name(value: str) -> str:
    """A file name for a session id: kept readable when it is tame, hashed when it is not."""
    cleaned = _SAFE.sub("_", value)[:80].strip("._") or "session"
    if cleaned == value:
        return cleaned
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{cleaned[:60]}-{digest}"
