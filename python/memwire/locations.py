"""Where memwire keeps things, and a short name for a store that two processes can compare.

Standard library only, so the hooks and ``memwire daemon``/``doctor`` can ask "which store?"
without importing a kernel (``memwire.memory`` re-exports :func:`default_path`).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

__all__ = ["MEMORY_FILE", "default_path", "store_id"]

MEMORY_FILE = "memory.db"
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")


def default_path() -> Path:
    """``$MEMWIRE_HOME/memory.db``, else ``$XDG_DATA_HOME/memwire/memory.db`` (XDG default
    ``~/.local/share``)."""
    home = os.environ.get("MEMWIRE_HOME", "").strip()
    if home:
        return Path(home).expanduser() / MEMORY_FILE
    data = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "memwire" / MEMORY_FILE


def _canonical(location: str | os.PathLike[str] | None) -> str | None:
    if location is None:
        location = default_path()
    text = str(location).strip()
    if text == ":memory:":
        return None  # private to its process: no other process can share it
    if text.startswith(("postgresql://", "postgres://")):
        return "postgresql://" + _PASSWORD.sub(r"\1@", text).split("://", 1)[1]
    if text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
    try:
        return "sqlite:" + str(Path(text).expanduser().resolve())
    except (OSError, RuntimeError):
        return "sqlite:" + os.path.abspath(os.path.expanduser(text))


def store_id(location: str | os.PathLike[str] | None) -> str:
    """A short, stable name for the store at ``location`` (None: the default store): the
    same file (however it is spelled) or database gives the same id in every process.

    A hash, not the path: ``GET /health`` answers it without a token, and it must not tell a
    stranger where the files are. ``:memory:`` gives ``memory-<pid>`` (no one else's store).
    """
    canonical = _canonical(location)
    if canonical is None:
        return f"memory-{os.getpid()}"
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
