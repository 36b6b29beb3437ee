"""Commands on memory that changes (issue 17): ``update``, ``history``, ``trash``, ``purge``,
``vacuum``. Each opens the store as the record commands do (``--db``; a served store is the
same file, so they work while ``memwire serve`` runs) and goes through :mod:`memwire.server.ops`,
so its checks and messages are the HTTP and MCP doors'."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memwire.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_bank,
    add_common,
    add_fields,
    body_of,
    emit,
    open_memory,
)
from memwire.server import ops

__all__ = ["register"]

TRASH_ACTIONS = ("list", "restore", "empty")


def register(commands: Any) -> None:
    p = commands.add_parser(
        "update",
        help="change a memory: new text makes a new version, tags change in place",
        description="Change a live memory and print its id. --content or --context stores a "
        "new version (a new id, dated now) that supersedes ID: ID leaves recall and stays in "
        "the history (memwire history). --tag alone replaces the tags in place, same id; "
        "--no-tags removes them all. Exit code 6 when ID is not live (superseded or trashed).",
    )
    add_fields(p, "update")
    p.add_argument("--no-tags", action="store_true", help="remove every tag of the memory")
    add_bank(p, any_bank=True)
    add_common(p, embedder=True)
    p.set_defaults(run=run_update)

    p = commands.add_parser(
        "history",
        help="every version of a memory, oldest first, with statuses and dates",
        description="Print every version of the memory ID (the ones it superseded and the "
        "ones that superseded it), oldest first, each with its status (live, superseded, "
        "trashed) and dates.",
    )
    add_fields(p, "history")
    add_bank(p, any_bank=True)
    add_common(p, embedder=True)
    p.set_defaults(run=run_history)

    p = commands.add_parser(
        "trash",
        help="list the trash, restore a memory from it, or empty it",
        description="Forgotten memories stay in their bank's trash for the bank's trash_days "
        "(default 30; memwire config). 'trash' or 'trash list' lists it, the last trashed "
        "first; 'trash restore ID' makes a memory live again; 'trash empty' deletes the "
        "trashed memories for good (with --older-than-days N, only those trashed more than N "
        "days ago; asks first on a terminal, --yes skips the question).",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=TRASH_ACTIONS,
        default="list",
        help="what to do (default: list)",
    )
    p.add_argument("id", nargs="?", help="the memory to restore (trash restore ID)")
    add_fields(p, "trash")
    add_fields(p, "empty_trash")
    add_yes(p)
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_trash)

    p = commands.add_parser(
        "purge",
        help="delete one memory for good (irreversible)",
        description="Delete the memory ID for good, in any state (live, superseded or "
        "trashed): from the store, its history and the bank's snapshot. Run 'memwire vacuum' "
        "after it so its text also leaves the database file. Asks first on a terminal; "
        "without one, --yes is required. Exit code 3 when there is no such memory.",
    )
    add_fields(p, "purge")
    add_yes(p)
    add_bank(p, any_bank=True)
    add_common(p, embedder=True)
    p.set_defaults(run=run_purge)

    p = commands.add_parser(
        "vacuum",
        help="compact the store so deleted text leaves its files",
        description="Compact the store (SQLite: checkpoint and VACUUM; PostgreSQL: VACUUM of "
        "memwire's tables), so the text of purged and deleted memories is gone from the "
        "database files, not only unreachable.",
    )
    add_common(p, embedder=True)
    p.set_defaults(run=run_vacuum)


def add_yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes", "-y", action="store_true", help="do not ask for confirmation (irreversible)"
    )


def confirm(args: argparse.Namespace, question: str) -> None:
    """Go on with an irreversible command: --yes, or a 'y' typed at a terminal."""
    if args.yes:
        return
    if not sys.stdin.isatty():
        raise CommandError(f"{question} This cannot be undone: pass --yes to do it.", EXIT_USAGE)
    print(f"{question} This cannot be undone. [y/N] ", end="", file=sys.stderr, flush=True)
    answer = sys.stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise CommandError("nothing was deleted", EXIT_USAGE)


def _date(value: object) -> str:
    return str(ops.jsonable(value) or "")[:19].replace("T", " ")


def _one_line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def run_update(args: argparse.Namespace) -> int:
    body = body_of(args, "update")
    if args.no_tags:
        if body["tags"]:
            raise CommandError("--no-tags and --tag contradict each other", EXIT_USAGE)
        body["tags"] = []
    with open_memory(args) as memory:
        record = ops.update(memory, args.bank, body)

    def human() -> str:
        now = str(record["id"])
        return now if now == args.id else f"{now}  (supersedes {args.id})"

    emit(args, record, human)
    return EXIT_OK


def version_line(record: dict[str, Any]) -> str:
    """One version: id, status, created, when it stopped being live, what replaced it."""
    parts = [record["id"], f"{record.get('status', 'live'):<10}", _date(record["created_at"])]
    if record.get("archived_at"):
        parts.append(f"until {_date(record['archived_at'])}")
    if record.get("superseded_by"):
        parts.append(f"-> {record['superseded_by']}")
    return "  ".join(parts) + "\n    " + _one_line(record["content"])


def run_history(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        result = ops.history(memory, args.bank, args.id)
    emit(args, result, lambda: "\n".join(version_line(v) for v in result["versions"]))
    return EXIT_OK


def run_trash(args: argparse.Namespace) -> int:
    memory_id: str | None = args.id
    if args.action == "restore":
        if not memory_id:
            raise CommandError("trash restore needs the id of a trashed memory", EXIT_USAGE)
    elif memory_id is not None:
        raise CommandError(f"trash {args.action} takes no id", EXIT_USAGE)
    if args.action == "empty":
        days = args.older_than_days
        which = "every trashed memory" if days is None else f"memories trashed over {days} days ago"
        confirm(args, f"Delete {which} of bank {args.bank!r} for good?")
    with open_memory(args) as memory:
        if memory_id is not None:  # restore
            restored = ops.restore(memory, args.bank, memory_id)
            emit(args, restored, lambda: f"restored {restored['id']}")
        elif args.action == "empty":
            emptied = ops.empty_trash(memory, args.bank, body_of(args, "empty_trash"))
            emit(args, emptied, lambda: f"deleted {emptied['purged']} trashed memories for good")
        else:
            page = ops.trash(memory, args.bank, args.limit, args.offset)
            emit(args, page, lambda: _trash_text(args, page))
    return EXIT_OK


def _trash_text(args: argparse.Namespace, page: list[dict[str, Any]]) -> str:
    if not page:
        return f"the trash of bank {args.bank!r} is empty" + (
            " at this offset" if args.offset else ""
        )
    return "\n".join(version_line(r) for r in page)


def run_purge(args: argparse.Namespace) -> int:
    confirm(args, f"Purge memory {args.id} for good, with its place in history?")
    with open_memory(args) as memory:
        result = ops.purge(memory, args.bank, args.id)
    emit(args, result, lambda: f"purged {args.id} (run 'memwire vacuum' to compact the store)")
    return EXIT_OK


def run_vacuum(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        result = ops.vacuum(memory)
    emit(args, result, lambda: "vacuumed")
    return EXIT_OK
