"""Where memwire keeps things, which store a process opens when none is named, and a short name
for a store that two processes can compare.

The store setting, one rule for every door (``memwire serve``, ``memwire mcp``, every CLI
command, the hooks, ``Memory()``): an explicit location (``--store``/``--db``, ``Memory(path)``)
wins, else ``$MEMWIRE_STORE``, else ``store = "..."`` in ``memwire.toml`` in the config
directory (:func:`config_path`), else the default SQLite file (:func:`default_path`).

Standard library only, so the hooks and ``memwire daemon``/``doctor`` can ask "which store?"
without importing a kernel (``memwire.memory`` re-exports :func:`default_path`).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import NamedTuple

__all__ = [
    "CONFIG_FILE",
    "MEMORY_FILE",
    "STORE_ENV",
    "StoreSetting",
    "config_path",
    "default_path",
    "default_store",
    "is_postgres_url",
    "shown",
    "store_id",
    "store_setting",
]

MEMORY_FILE = "memory.db"
CONFIG_FILE = "memwire.toml"
STORE_ENV = "MEMWIRE_STORE"
_PASSWORD = re.compile(r"(://[^:/@]*):[^@/]*@")


POSTGRES_SCHEMES = ("postgresql://", "postgres://")
"""The URL schemes that name the PostgreSQL store."""


def is_postgres_url(location: object) -> bool:
    """Whether ``location`` names the PostgreSQL store: a ``postgresql://`` or ``postgres://``
    URL, surrounding spaces ignored (what :func:`memwire.store.open_store` opens as one). The
    one test every part of memwire uses (the CLI, the server, the hooks), so that none of them
    takes for a file what the store opens as a URL."""
    return isinstance(location, str) and location.strip().startswith(POSTGRES_SCHEMES)


def default_path() -> Path:
    """``$MEMWIRE_HOME/memory.db``, else ``$XDG_DATA_HOME/memwire/memory.db`` (XDG default
    ``~/.local/share``)."""
    home = os.environ.get("MEMWIRE_HOME", "").strip()
    if home:
        return Path(home).expanduser() / MEMORY_FILE
    data = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(data).expanduser() if data else Path.home() / ".local" / "share"
    return base / "memwire" / MEMORY_FILE


def config_path() -> Path:
    """``memwire.toml`` in ``$MEMWIRE_HOME``, else in ``$XDG_CONFIG_HOME/memwire`` (XDG
    default ``~/.config``)."""
    home = os.environ.get("MEMWIRE_HOME", "").strip()
    if home:
        return Path(home).expanduser() / CONFIG_FILE
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    base = Path(config).expanduser() if config else Path.home() / ".config"
    return base / "memwire" / CONFIG_FILE


class StoreSetting(NamedTuple):
    """The store a process opens and where that choice came from."""

    location: str
    """A ``postgresql://`` URL, ``sqlite:PATH``, a file path or ``:memory:``."""
    source: str
    """``"argument"``, ``"$MEMWIRE_STORE"``, the config file's path, or ``"default"``."""


def _from_config(path: Path) -> str | None:
    """``store`` of the config file at ``path`` (None: no file, or no ``store`` key)."""
    from memwire.errors import InvalidInputError

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{path}: cannot be read ({type(exc).__name__})") from None
    import tomllib

    try:
        value = tomllib.loads(text).get("store")
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInputError(f"{path}: not valid TOML ({exc})") from None
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{path}: 'store' must be a non-empty string")
    return value.strip()


def store_setting(explicit: str | os.PathLike[str] | None = None) -> StoreSetting:
    """The store to open: ``explicit``, else ``$MEMWIRE_STORE``, else the config file's
    ``store``, else the default file (see the module's docstring). A config file that cannot
    be read or parsed is an :class:`~memwire.errors.InvalidInputError` naming it."""
    if explicit is not None:
        return StoreSetting(os.fspath(explicit), "argument")
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return StoreSetting(env, f"${STORE_ENV}")
    path = config_path()
    found = _from_config(path)
    if found is not None:
        return StoreSetting(found, str(path))
    return StoreSetting(str(default_path()), "default")


def shown(location: str | os.PathLike[str]) -> str:
    """``location`` fit to print: a URL without its password."""
    return _PASSWORD.sub(r"\1@", os.fspath(location))


def default_store() -> str:
    """The location a process opens when none is given (:func:`store_setting`)."""
    return store_setting().location


def _canonical(location: str | os.PathLike[str] | None) -> str | None:
    if location is None:
        location = default_store()
    text = str(location).strip()
    if text == ":memory:":
        return None  # private to its process: no other process can share it
    if is_postgres_url(text):
        return "postgresql://" + _PASSWORD.sub(r"\1@", text).split("://", 1)[1]
    if text.startswith("sqlite:"):
        text = text[len("sqlite:") :]
    try:
        return "sqlite:" + str(Path(text).expanduser().resolve())
    except (OSError, RuntimeError):
        return "sqlite:" + os.path.abspath(os.path.expanduser(text))


def store_id(location: str | os.PathLike[str] | None) -> str:
    """A short, stable name for the store at ``location`` (None: :func:`default_store`): the
    same file (however it is spelled) or database gives the same id in every process.

    A hash, not the path: ``GET /health`` answers it without a token, and it must not tell a
    stranger where the files are. ``:memory:`` gives ``memory-<pid>`` (no one else's store).
    """
    canonical = _canonical(location)
    if canonical is None:
        return f"memory-{os.getpid()}"
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:16]
