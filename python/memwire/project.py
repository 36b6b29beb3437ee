"""Which bank a request belongs to: the one rule every door follows.

The hooks, MCP over stdio, MCP over HTTP, the ``memwire`` command and SKILL.md all name the
bank with :func:`resolve_bank`; the first of these that gives a name wins:

1. an explicit bank (``--bank``, a tool's ``bank`` argument, the ``/mcp/{bank}`` URL);
2. ``$MEMWIRE_BANK``;
3. the project the working directory belongs to (skipped by doors that have no working
   directory of the client, like the HTTP server):

   a. the git remote's ``owner/repo`` (remote ``origin``, else the first remote listed), from
      https, ssh (``ssh://git@host[:port]/owner/repo.git``) and scp-style
      (``git@host:owner/repo.git``) URLs; the last two path segments are kept, so GitLab
      subgroups give ``subgroup/repo``;
   b. the name of the repository's top-level directory (for a linked worktree: the main
      repository's, so every worktree of a repository shares one bank);
4. :data:`DEFAULT_BANK` (``default``).

Git metadata is read directly from the files (``.git`` directory or ``gitdir:`` file,
``commondir`` for worktrees, ``config``); no ``git`` process is started, so resolution costs
microseconds and cannot hang the prompt. A submodule is its own repository: its ``.git`` file
points into the superproject's ``.git/modules/<name>``, whose ``config`` holds the submodule's
own remote, so a submodule gets its own bank.

Standard library only: the hooks call this before anything heavy is imported.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["BANK_ENV", "DEFAULT_BANK", "bank_from_remote", "find_git", "repo_bank", "resolve_bank"]

DEFAULT_BANK = "default"
BANK_ENV = "MEMWIRE_BANK"
_MAX_DEPTH = 64

_SCP = re.compile(r"^(?:[^@/\s]+@)?(?P<host>[^:/\s]+):(?P<path>(?!/).+)$")
_SECTION = re.compile(r'^\s*\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')


def _read_text(path: Path, limit: int = 1 << 20) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def find_git(start: Path) -> tuple[Path, Path, Path] | None:
    """``(worktree_root, git_dir, common_dir)`` for the repository containing ``start``."""
    try:
        current = start.resolve()
    except OSError:
        return None
    for _ in range(_MAX_DEPTH):
        dot_git = current / ".git"
        git_dir: Path | None = None
        if dot_git.is_dir():
            git_dir = dot_git
        elif dot_git.is_file():
            text = _read_text(dot_git, 4096) or ""
            match = re.match(r"\s*gitdir:\s*(.+?)\s*$", text, re.M)
            if match:
                target = Path(match.group(1))
                git_dir = target if target.is_absolute() else (current / target)
                try:
                    git_dir = git_dir.resolve()
                except OSError:
                    git_dir = None
        if git_dir is not None:
            common = git_dir
            pointer = _read_text(git_dir / "commondir", 4096)
            if pointer and pointer.strip():
                target = Path(pointer.strip())
                common = target if target.is_absolute() else (git_dir / target)
                try:
                    common = common.resolve()
                except OSError:
                    common = git_dir
            return current, git_dir, common
        if current.parent == current:
            return None
        current = current.parent
    return None


def _remotes(config_text: str) -> list[tuple[str, str]]:
    """``(remote name, url)`` pairs in file order, from a git config file."""
    found: list[tuple[str, str]] = []
    section: tuple[str, str | None] | None = None
    for raw in config_text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.match(line)
        if match:
            sub = match.group(2)
            section = (match.group(1).lower(), sub.replace('\\"', '"') if sub is not None else None)
            line = match.group(3).strip()
            if not line:
                continue
        if section is None or section[0] != "remote" or section[1] is None:
            continue
        key, sep, value = line.partition("=")
        if sep and key.strip().lower() == "url":
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            found.append((section[1], value))
    return found


def bank_from_remote(url: str) -> str | None:
    """``owner/repo`` from a remote URL (https, ssh, git, scp-style); None for local paths."""
    url = url.strip()
    if not url:
        return None
    path: str | None = None
    if "://" in url:
        scheme, rest = url.split("://", 1)
        if scheme.lower() == "file":
            return None
        _, _, path = rest.partition("/")
    else:
        match = _SCP.match(url)
        if match and not re.match(r"^[A-Za-z]:[\\/]", url):  # not a Windows drive path
            path = match.group("path")
    if not path:
        return None
    path = path.split("?", 1)[0].split("#", 1)[0].strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    if parts and parts[0].startswith("~"):  # ssh://host/~user/repo
        parts[0] = parts[0][1:]
    parts = [p for p in parts if p]
    if not parts:
        return None
    return "/".join(parts[-2:])


def repo_bank(start: Path) -> str | None:
    """The bank of the repository containing ``start`` (remote, else top-level name)."""
    found = find_git(start)
    if found is None:
        return None
    worktree, git_dir, common = found
    for config in (git_dir / "config", common / "config"):
        text = _read_text(config)
        if not text:
            continue
        remotes = _remotes(text)
        if remotes:
            chosen = next((url for name, url in remotes if name == "origin"), remotes[0][1])
            name = bank_from_remote(chosen)
            if name:
                return name
        if config == common / "config" or git_dir == common:
            break
    # No usable remote: the top-level directory's name; a linked worktree uses the main
    # repository's (the parent of its common .git directory).
    if common != git_dir and common.name == ".git":
        return common.parent.name or None
    return worktree.name or None


def resolve_bank(cwd: str | os.PathLike[str] | None, explicit: str | None = None) -> str:
    """The bank for a request from ``cwd`` (None: a door without the client's directory);
    see the module docstring for the order."""
    if explicit is not None and explicit.strip():
        return explicit.strip()
    env = os.environ.get(BANK_ENV, "").strip()
    if env:
        return env
    if cwd:
        try:
            name = repo_bank(Path(cwd))
        except (OSError, ValueError):
            name = None
        if name:
            return name
    return DEFAULT_BANK
