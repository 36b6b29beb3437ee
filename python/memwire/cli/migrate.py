"""``memwire migrate``: copy every bank from one store to another (SQLite to PostgreSQL and
back), resumable, with a progress line (:mod:`memwire.store.copy`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from memwire._progress import Progress
from memwire.cli._common import EXIT_OK, EXIT_USAGE, CommandError, add_common, emit

__all__ = ["register"]


def register(commands: Any) -> None:
    p = commands.add_parser(
        "migrate",
        help="copy the memories of one store into another (SQLite <-> PostgreSQL)",
        description="Copy every bank (or those named with --bank) of the store --from into the "
        "store --to: configs and memories with their ids, dates, tags, document ids and "
        "vectors, with their history and trash (superseded and trashed memories, as they "
        "are); indexes are rebuilt by the target's readers. Memories already in the target "
        "are skipped, so an interrupted migration is resumed by running it again. A location "
        "is a postgresql:// URL, sqlite:PATH or a file path; a URL may also come from "
        "$MEMWIRE_MIGRATE_FROM / $MEMWIRE_MIGRATE_TO (a command line shows its password to "
        "every user of the machine).",
    )
    p.add_argument(
        "--from",
        dest="source",
        metavar="LOCATION",
        default=None,
        help="the store to copy from (default: $MEMWIRE_MIGRATE_FROM)",
    )
    p.add_argument(
        "--to",
        dest="target",
        metavar="LOCATION",
        default=None,
        help="the store to copy into (default: $MEMWIRE_MIGRATE_TO)",
    )
    p.add_argument(
        "--bank",
        "-b",
        action="append",
        default=None,
        help="only this bank; repeat for more (default: every bank)",
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress line")
    add_common(p, db=False)
    p.set_defaults(run=run_migrate)


def _location(value: str | None, variable: str, flag: str) -> str:
    found = value if value is not None else os.environ.get(variable, "")
    if not found.strip():
        raise CommandError(f"{flag} is required (or set ${variable})", EXIT_USAGE)
    return found.strip()


def _is_url(location: str) -> bool:
    return "://" in location


def _file_of(location: str) -> Path | None:
    """The SQLite file a location names (None for a URL or ``:memory:``)."""
    if _is_url(location):
        return None
    path = location[len("sqlite:") :] if location.startswith("sqlite:") else location
    return None if path == ":memory:" else Path(path).expanduser()


def run_migrate(args: argparse.Namespace) -> int:
    from memwire.store import open_store
    from memwire.store.copy import BankCopy, copy_store

    source = _location(args.source, "MEMWIRE_MIGRATE_FROM", "--from")
    target = _location(args.target, "MEMWIRE_MIGRATE_TO", "--to")
    source_file, target_file = _file_of(source), _file_of(target)
    if source_file is not None and not source_file.is_file():
        raise CommandError(f"no store file at {source_file}", EXIT_USAGE)
    if source == target or (
        source_file is not None
        and target_file is not None
        and target_file.exists()
        and source_file.resolve() == target_file.resolve()
    ):
        raise CommandError("--from and --to are the same store", EXIT_USAGE)
    if target_file is not None and not target_file.expanduser().resolve().parent.is_dir():
        raise CommandError(f"no such directory: {target_file.resolve().parent}", EXIT_USAGE)

    bars: dict[str, Progress] = {}

    def progress(report: BankCopy, done: int) -> None:
        if args.no_progress:
            return
        bar = bars.get(report.bank)
        if bar is None:
            bar = bars[report.bank] = Progress(report.total, f"migrate {report.bank}")
        bar.advance(done - bar.done)

    src = open_store(source)
    try:
        dst = open_store(target)
        try:
            reports = copy_store(src, dst, args.bank, progress)
        finally:
            for bar in bars.values():
                bar.finish()
            dst.close()
    finally:
        src.close()

    def human() -> str:
        lines = [
            f"{r.bank}: {r.copied:,} copied, {r.skipped:,} already there (of {r.total:,}"
            + (f", {r.archived:,} of them superseded or trashed)" if r.archived else ")")
            + "".join(f"; {note}" for note in r.notes)
            for r in reports
        ]
        return "\n".join(lines) if lines else "nothing to migrate: the source has no banks"

    emit(
        args,
        [
            {
                "bank": r.bank,
                "total": r.total,
                "archived": r.archived,
                "copied": r.copied,
                "skipped": r.skipped,
                "notes": r.notes,
            }
            for r in reports
        ],
        human,
    )
    return EXIT_OK
