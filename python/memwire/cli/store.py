"""Commands on banks and the store: ``stats``, ``banks``, ``config``, ``sweep``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from memwire.cli._common import (
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_bank,
    add_common,
    add_fields,
    embedder_of,
    emit,
    open_memory,
)
from memwire.config import ACTING_KEYS_TEXT
from memwire.server import ops

__all__ = ["register"]


def register(commands: Any) -> None:
    p = commands.add_parser(
        "stats",
        help="count, tags, oldest and newest memory of a bank",
        description="Show a bank's statistics. Exit code 3 when there is no such bank.",
    )
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_stats)

    p = commands.add_parser(
        "banks",
        help="list the banks (or delete one)",
        description="List every bank in the store; 'memwire banks delete NAME --yes' deletes "
        "a bank with all its memories and config.",
    )
    add_common(p, embedder=True)
    p.set_defaults(run=run_banks)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    d = actions.add_parser(
        "delete",
        help="delete a bank with all its memories",
        description="Delete a bank with all its memories and config.",
    )
    d.add_argument("name")
    d.add_argument("--yes", action="store_true", help="really delete (required)")
    add_common(d, embedder=True)
    d.set_defaults(run=run_delete_bank)

    p = commands.add_parser(
        "config",
        help="show or change a bank's config",
        description="Show a bank's config, or change it with --set KEY=VALUE (VALUE is JSON "
        f"when it parses as JSON, else a string) and --unset KEY. {ACTING_KEYS_TEXT} act "
        "(docs/storage.md); any other key is refused.",
    )
    add_bank(p)
    p.add_argument(
        "--set",
        action="append",
        dest="set_",
        metavar="KEY=VALUE",
        default=[],
        help="set a key (repeatable)",
    )
    p.add_argument(
        "--unset", action="append", metavar="KEY", default=[], help="remove a key (repeatable)"
    )
    add_common(p, embedder=True)
    p.set_defaults(run=run_config)

    p = commands.add_parser(
        "reembed",
        help="re-encode a bank's vectors with another embedder (resumable)",
        description="Re-encode every memory of a bank with --embedder, else the tier its "
        "config key 'embedder' names, else the default ($MEMWIRE_EMBEDDER, else static), in "
        "batches committed as they go: an interrupted run continues where it stopped when run "
        "again. The bank stays usable throughout and switches to the new vectors at the end. "
        "Exit code 6 when another process finished, discarded or replaced this re-encoding "
        "meanwhile.",
    )
    add_bank(p)
    add_fields(p, "reembed")
    p.add_argument("--no-progress", action="store_true", help="never show the progress line")
    add_common(p, embedder=True)
    p.set_defaults(run=run_reembed)

    p = commands.add_parser(
        "sweep",
        help="delete memories older than their bank's ttl_days",
        description="Delete the memories older than their bank's ttl_days and print how many.",
    )
    p.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    add_common(p, embedder=True)
    p.set_defaults(run=run_sweep)


def run_stats(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        result = ops.stats(memory, args.bank)

    def human() -> str:
        lines = [f"bank:    {result.get('bank', args.bank)}", f"count:   {result.get('count')}"]
        lines.append(f"oldest:  {result.get('oldest') or '-'}")
        lines.append(f"newest:  {result.get('newest') or '-'}")
        tags = result.get("tags") or {}
        if tags:
            shown = ", ".join(f"{k} ({v})" for k, v in sorted(tags.items(), key=lambda kv: -kv[1]))
            lines.append(f"tags:    {shown}")
        return "\n".join(lines)

    emit(args, result, human)
    return EXIT_OK


def run_banks(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        names = ops.banks(memory)
    emit(args, names, lambda: "\n".join(map(str, names)) if names else "no banks yet")
    return EXIT_OK


def run_delete_bank(args: argparse.Namespace) -> int:
    if not args.yes:
        raise CommandError(
            f"this deletes bank {args.name!r} with all its memories; add --yes", EXIT_USAGE
        )
    with open_memory(args) as memory:
        result = ops.delete_bank(memory, args.name)
    emit(args, result, lambda: f"deleted bank {args.name!r}")
    return EXIT_OK


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def run_config(args: argparse.Namespace) -> int:
    update: dict[str, Any] = {}
    for item in args.set_:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--set wants KEY=VALUE, got {item!r}", EXIT_USAGE)
        update[key] = _parse_value(value)
    for key in args.unset:
        update[key] = None
    with open_memory(args) as memory:
        if update:
            result = ops.config_put(memory, args.bank, update)
        else:
            result = ops.config_get(memory, args.bank)

    def human() -> str:
        if not result:
            return f"bank {args.bank!r} has an empty config"
        return "\n".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in result.items())

    emit(args, result, human)
    return EXIT_OK


def run_sweep(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        ids = memory.sweep(dry_run=args.dry_run)
    verb = "would delete" if args.dry_run else "deleted"
    emit(
        args,
        {"dry_run": args.dry_run, "ids": ids},
        lambda: f"{verb} {len(ids)} expired memor{'y' if len(ids) == 1 else 'ies'}",
    )
    return EXIT_OK


def run_reembed(args: argparse.Namespace) -> int:
    from memwire._progress import Progress

    with open_memory(args) as memory:
        pending = memory.reembed_status(args.bank)
        total = pending["total"] if pending else memory.stats(bank=args.bank)["count"]
        bar = Progress(int(total), "reembed", enabled=False if args.no_progress else None)
        if pending:
            bar.advance(int(pending["done"]))

        def progress(done: int, total: int) -> None:
            bar.total = total
            bar.advance(done - bar.done)

        try:
            encoded = memory.reembed(
                args.bank, embedder=embedder_of(args), batch=args.batch, progress=progress
            )
        finally:
            bar.finish()
    emit(
        args,
        {"bank": args.bank, "encoded": encoded},
        lambda: f"re-encoded {encoded} memories of bank {args.bank!r}",
    )
    return EXIT_OK
