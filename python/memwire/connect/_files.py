"""Reading and writing host config files safely: strict parsing, timestamped backups, atomic
replacement. A file that does not parse is never written."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

__all__ = [
    "TOML_END",
    "Malformed",
    "backup",
    "load_json",
    "load_toml_text",
    "toml_begin",
    "toml_block",
    "toml_parse",
    "toml_without_block",
    "write_text",
]

TOML_END = "# <<< memwire"


def toml_begin(host: str) -> str:
    """The line that opens memwire's managed block in ``host``'s TOML config."""
    return (
        f"# >>> memwire (written by `memwire connect`; `memwire connect {host} --uninstall` "
        "removes it)"
    )


class Malformed(Exception):
    """A config file exists but cannot be parsed; it is left untouched."""


def load_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when the file does not exist (or is empty)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Malformed(f"{path}: cannot be read ({type(exc).__name__})") from None
    if not text.strip():
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise Malformed(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise Malformed(f"{path}: the top level is not a JSON object")
    return value


def toml_parse(text: str) -> dict[str, Any] | None:
    """The parsed TOML (None when no TOML parser is available: Python 3.10 without tomli)."""
    try:
        import tomllib as toml
    except ImportError:  # pragma: no cover - Python 3.10
        try:
            import tomli as toml  # type: ignore[no-redef,import-not-found,unused-ignore]
        except ImportError:
            return None
    try:
        value: dict[str, Any] = toml.loads(text)
    except Exception as exc:
        raise Malformed(f"not valid TOML ({exc})") from None
    return value


def load_toml_text(path: Path) -> str | None:
    """The text of a TOML file, checked to parse; None when it does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Malformed(f"{path}: cannot be read ({type(exc).__name__})") from None
    try:
        toml_parse(text)
    except Malformed as exc:
        raise Malformed(f"{path}: {exc}") from None
    return text


def backup(path: Path) -> Path | None:
    """Copy ``path`` to ``<name>.memwire-backup-<UTC time>`` beside it (None if no file)."""
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"{time.time_ns() % 10**6:06d}Z"
    target = path.with_name(f"{path.name}.memwire-backup-{stamp}")
    shutil.copy2(path, target)
    return target


def write_text(path: Path, text: str) -> Path | None:
    """Back ``path`` up, then replace it atomically with ``text``; returns the backup."""
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = backup(path)
    tmp = path.with_name(f".{path.name}.memwire-{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    if saved is not None:
        with contextlib.suppress(OSError):
            shutil.copymode(saved, tmp)
    os.replace(tmp, path)
    return saved


def dump_json(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _block(begin: str) -> re.Pattern[str]:
    return re.compile(
        r"(?:(?<=\n)\n)?" + re.escape(begin) + r".*?" + re.escape(TOML_END) + r"\n?", re.S
    )


def toml_without_block(text: str, begin: str) -> str:
    """``text`` without memwire's managed block (the one opened by ``begin``)."""
    return _block(begin).sub("", text)


def toml_block(text: str, begin: str) -> str | None:
    match = _block(begin).search(text)
    return match.group(0) if match else None
