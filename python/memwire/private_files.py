"""Files private to their user, whatever the umask: every file memwire creates (the store and
its WAL and SHM, the hook spool, session state, logs) is 0600 in a 0700 directory, so another
local user can read none of it (docs/security.md, "Files")."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "open_private", "private_dir", "private_file"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str], *, own: bool = True) -> Path:
    """Create ``path`` (and its missing parents) as 0700 directories; with ``own`` (a directory
    only memwire uses, such as the spool) also make it 0700 when it already exists. A directory
    that already existed is otherwise left as it is: the directory of a store file may be one
    the user shares on purpose (even /tmp). Raises OSError when it cannot be made."""
    target = Path(path)
    missing: list[Path] = []
    probe = target
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, DIR_MODE)
            if os.name != "nt":
                os.chmod(directory, DIR_MODE)  # mkdir's mode is masked by the umask
    if own and not missing and os.name != "nt":
        os.chmod(target, DIR_MODE)
    return target


def private_file(path: str | os.PathLike[str]) -> None:
    """Create ``path`` empty as 0600 when it does not exist, else make it 0600."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        if os.name != "nt":
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def open_private(path: str | os.PathLike[str], flags: int) -> int:
    """``os.open`` with ``flags`` (add ``O_CREAT`` to create) that leaves the file 0600."""
    fd = os.open(path, flags, FILE_MODE)
    if os.name != "nt":
        try:
            os.fchmod(fd, FILE_MODE)
        except OSError:
            os.close(fd)
            raise
    return fd
