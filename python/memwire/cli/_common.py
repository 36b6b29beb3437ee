"""What every CLI command shares: exit codes, output, opening the store, the memwire home."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwire.errors import (
    ConflictError,
    InvalidInputError,
    MemwireError,
    NotFoundError,
    StorageError,
    StorageFullError,
)

if TYPE_CHECKING:
    from memwire.memory import Memory
    from memwire.server import fields

__all__ = [
    "EXIT_CONFLICT",
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_NOT_FOUND",
    "EXIT_NOT_RUNNING",
    "EXIT_OK",
    "EXIT_STORAGE_FULL",
    "EXIT_UNHEALTHY",
    "EXIT_USAGE",
    "CommandError",
    "add_common",
    "add_fields",
    "body_of",
    "emit",
    "exit_code_for",
    "home_dir",
    "open_memory",
]

EXIT_OK = 0
"""Success."""
EXIT_ERROR = 1
"""Failure: the store or the server failed, or an unexpected error."""
EXIT_USAGE = 2
"""Bad arguments or input rejected (nothing was changed)."""
EXIT_NOT_FOUND = 3
"""The memory or bank named does not exist."""
EXIT_NOT_RUNNING = 4
"""No memwire server is running (``daemon status``), or it cannot be reached."""
EXIT_UNHEALTHY = 5
"""A server process is alive but does not answer (``daemon status``), or ``doctor`` found a
problem."""
EXIT_CONFLICT = 6
"""The request conflicts with the stored state (a document already has a memory and the update
mode is ``append``; a re-encoding changed under this one); nothing was changed."""
EXIT_STORAGE_FULL = 7
"""The disk holding the store is full or failed (``memwire.StorageFullError``); nothing of the
command was written: free space and run it again."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C)."""

EXIT_CODES_HELP = """exit codes:
  0    success
  1    error: the store or the server failed
  2    usage: bad arguments or input rejected (nothing was changed)
  3    not found: no such memory or bank
  4    not running: no memwire server answers (daemon status, doctor --server)
  5    unhealthy: a server process is alive but not answering, or doctor found a problem
  6    conflict: the request conflicts with what is stored (nothing was changed)
  7    storage full: the store's disk is full or failed (nothing was written; retry)
  130  interrupted"""


class CommandError(Exception):
    """A command failed with a message for the user and an exit code."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


def exit_code_for(exc: BaseException) -> int:
    if isinstance(exc, CommandError):
        return exc.code
    if isinstance(exc, NotFoundError):
        return EXIT_NOT_FOUND
    if isinstance(exc, ConflictError):
        return EXIT_CONFLICT
    if isinstance(exc, StorageFullError):
        return EXIT_STORAGE_FULL
    if isinstance(exc, InvalidInputError):
        return EXIT_USAGE
    return EXIT_ERROR


def error_text(exc: BaseException) -> str:
    if isinstance(exc, (CommandError, ConflictError, InvalidInputError, NotFoundError)):
        return str(exc)
    if isinstance(exc, StorageError):
        return f"storage error: {exc}"
    if isinstance(exc, MemwireError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")
    return f"unexpected error ({type(exc).__name__}); rerun with MEMWIRE_DEBUG=1 for details"


EMBEDDER_HELP = (
    "the embedder a new bank takes: static (bundled), minilm (the [embed] extra) or none (no "
    "vectors); default $MEMWIRE_EMBEDDER, else static. A bank's config key 'embedder' wins, "
    "and a bank with vectors keeps its own until reembed"
)


def _embedder_name(value: str) -> str:
    # Checked when given, not when the parser is built: importing memwire.config loads the
    # kernel's contract, which the prompt hook's path must not pay for (an option it never uses).
    from memwire.config import EMBEDDER_MODES

    if value not in EMBEDDER_MODES:
        raise argparse.ArgumentTypeError(
            f"invalid choice: {value!r} (choose from {', '.join(EMBEDDER_MODES)})"
        )
    return value


def add_embedder(parser: argparse.ArgumentParser, default: str | None = argparse.SUPPRESS) -> None:
    """``--embedder``: the store-wide default embedder (:func:`memwire.config.default_tier`)."""
    parser.add_argument(
        "--embedder",
        type=_embedder_name,
        metavar="{static,minilm,none}",
        default=default,
        help=EMBEDDER_HELP,
    )


def add_common(
    parser: argparse.ArgumentParser,
    *,
    db: bool = True,
    json_flag: bool = True,
    embedder: bool = False,
) -> None:
    """``--db`` and ``--json`` on a subcommand (they may also come before it); ``--embedder``
    on the commands that open a store with :func:`open_memory`."""
    if db:
        parser.add_argument(
            "--db",
            metavar="PATH",
            default=argparse.SUPPRESS,
            help="the store: a file, sqlite:PATH or a postgresql:// URL (default: "
            '$MEMWIRE_STORE, else store = "..." in memwire.toml in $MEMWIRE_HOME or '
            "~/.config/memwire, else $MEMWIRE_HOME/memory.db, else the XDG data dir)",
        )
    if embedder:
        add_embedder(parser)
    if json_flag:
        parser.add_argument(
            "--json",
            action="store_true",
            default=argparse.SUPPRESS,
            help="print machine-readable JSON on stdout",
        )


BANK_RULE_HELP = (
    "the bank (default: $MEMWIRE_BANK, else the project of the current directory: the git "
    "remote's owner/repo, else the repository's name; else 'default'; see docs/hosts.md)"
)


def add_bank(parser: argparse.ArgumentParser, *, any_bank: bool = False) -> None:
    """``--bank``: the bank rule's choice (:func:`memwire.project.resolve_bank`, worked out
    by :func:`resolve_project_bank` after parsing) unless ``any_bank`` (then: every bank)."""
    from memwire.server import fields

    bank = fields.BANK
    if any_bank:
        parser.add_argument(*bank.flags, dest=bank.name, default=None, help="only in this bank")
    else:
        parser.add_argument(*bank.flags, dest=bank.name, default=None, help=BANK_RULE_HELP)
        parser.set_defaults(project_bank=True)


def resolve_project_bank(args: argparse.Namespace) -> None:
    """Fill in ``args.bank`` by the rule every door follows, from the current directory."""
    if getattr(args, "project_bank", False):
        import os

        from memwire.project import resolve_bank

        args.bank = resolve_bank(os.getcwd(), args.bank)


class _Deferred:
    """A help text or a choice list worked out from the field table only when argparse needs it
    (``--help``, or checking a value): some limits live in :mod:`memwire.memory`, which the
    parser of every command must not import (see :mod:`memwire.server.fields`)."""

    def __init__(self, field: fields.Field) -> None:
        self.field = field

    def __str__(self) -> str:  # the help, through argparse's ``%(memwire_help)s``
        from memwire.server import fields

        text = fields.describe(self.field)
        if self.field.kind == "strings":
            text += "; repeat for more"
        return text.replace("%", "%%")

    def __iter__(self) -> Iterator[str]:
        return iter(self.field.choices or ())

    def __contains__(self, value: object) -> bool:
        return value in (self.field.choices or ())


_TYPES: dict[str, Callable[[str], Any]] = {"integer": int, "number": float}


def add_fields(
    parser: argparse.ArgumentParser, operation: str, *, help: dict[str, str] | None = None
) -> None:
    """Every CLI field of ``operation`` (:mod:`memwire.server.fields`): its flags, type,
    default, choices and help from the table; a required field is a positional argument.
    ``help`` replaces the table's text for the fields it names (by key)."""
    from memwire.server import fields

    for field in fields.fields_for(operation, "cli"):
        kwargs: dict[str, Any] = {}
        if field.key in (help or {}):
            kwargs["help"] = (help or {})[field.key]
        else:
            kwargs["help"] = "%(memwire_help)s"
        if not field.flags:
            action = parser.add_argument(field.name, **kwargs)
        else:
            kwargs.update(dest=field.name, default=field.default)
            if field.kind == "boolean":  # --flag and --no-flag; neither: the bank decides
                kwargs["action"] = argparse.BooleanOptionalAction
            else:
                kwargs["metavar"] = field.metavar
            if field.kind == "strings":
                kwargs["action"] = "append"
            elif field.kind == "choice":
                kwargs["choices"] = _Deferred(field)
            elif field.kind in _TYPES:
                kwargs["type"] = _TYPES[field.kind]
            action = parser.add_argument(*field.flags, **kwargs)
        action.memwire_help = _Deferred(field)  # type: ignore[attr-defined]


def body_of(args: argparse.Namespace, operation: str) -> dict[str, Any]:
    """The request of ``operation`` from parsed arguments, by wire name (for :mod:`ops`)."""
    from memwire.server import fields

    return {f.name: getattr(args, f.name) for f in fields.fields_for(operation, "cli")}


def home_dir() -> Path:
    """``$MEMWIRE_HOME``, else ``$XDG_DATA_HOME/memwire`` (XDG default ``~/.local/share``)."""
    from memwire.locations import default_path

    return default_path().parent


def db_path(args: argparse.Namespace) -> str | None:
    db: str | None = getattr(args, "db", None)
    return db


@contextmanager
def open_memory(args: argparse.Namespace) -> Iterator[Memory]:
    from memwire.memory import Memory

    path = db_path(args)
    # A postgresql:// URL is no file (and may hold a password: never echo it).
    if path is not None and path != ":memory:" and "://" not in path:
        parent = Path(path).expanduser().resolve().parent
        if not parent.is_dir():
            raise CommandError(f"no such directory: {parent}", EXIT_USAGE)
    from memwire.embed.minilm import EmbedExtraMissing

    try:
        memory = Memory(path, embedder=embedder_of(args))
    except EmbedExtraMissing as exc:  # --embedder minilm without the extra: say how to get it
        raise CommandError(str(exc), EXIT_USAGE) from None
    with memory:
        yield memory


def embedder_of(args: argparse.Namespace) -> str | None:
    """``--embedder``, or None for ``$MEMWIRE_EMBEDDER``, else the bundled one."""
    chosen: str | None = getattr(args, "embedder", None)
    return chosen


def emit(args: argparse.Namespace, data: Any, human: Callable[[], str | None]) -> None:
    """Print ``data`` as JSON with ``--json``, else ``human()`` (nothing when it is None)."""
    if getattr(args, "json", False):
        from memwire.server.ops import jsonable

        print(json.dumps(jsonable(data), ensure_ascii=False, indent=2))
        return
    text = human()
    if text is not None:
        print(text)


def status(message: str) -> None:
    """A note for the human on stderr (never mixed into ``--json`` output)."""
    print(message, file=sys.stderr)


def debug() -> bool:
    return os.environ.get("MEMWIRE_DEBUG", "") not in ("", "0")
