"""``memwire export`` and ``memwire import``: versioned JSONL in and out, with a progress line;
``memwire import-from``: memories of memory-wire, mem0 and agentmemory (docs/compat.md)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

from memwire._progress import Progress
from memwire.cli._common import EXIT_OK, EXIT_USAGE, CommandError, add_common, emit, open_memory
from memwire.importers import SOURCES

if TYPE_CHECKING:
    from memwire.records import Record

__all__ = ["Progress", "register"]


def register(commands: Any) -> None:
    p = commands.add_parser(
        "export",
        help="write memories as versioned JSONL",
        description="Write every memory (of one bank with --bank), its history and trash "
        "(superseded and trashed memories, with their links and dates) and the bank configs "
        "as versioned JSONL (format version 2), to PATH or to stdout ('-', the default).",
    )
    p.add_argument("path", nargs="?", default="-", help="output file (default: stdout)")
    p.add_argument("--bank", "-b", default=None, help="only this bank (default: all)")
    add_common(p, embedder=True)
    p.set_defaults(run=run_export)

    p = commands.add_parser(
        "import",
        help="read a memwire export back in",
        description="Read a memwire export (PATH, or stdin with '-'; format version 1 or 2), "
        "history and trash included. The whole file is checked before anything is written; "
        "memories already present (live or archived; ids are unique in a store, whatever the "
        "bank) are skipped, and the output says where they are. "
        "Shows a progress line on a terminal.",
    )
    p.add_argument("path", help="the export file, or '-' for stdin")
    p.add_argument(
        "--bank",
        "-b",
        default=None,
        help="put everything into this bank (default: each memory's own bank)",
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress line")
    add_common(p, embedder=True)
    p.set_defaults(run=run_import)

    kinds = "\n".join(f"  {name:12} {what}" for name, (_, what) in SOURCES.items())
    p = commands.add_parser(
        "import-from",
        help="import memories from memory-wire, mem0 or agentmemory",
        description=textwrap.fill(
            "Import the memories of another memory tool. Each one is stored as a retain "
            "stores it (checked, secrets redacted, identical content merged); a record memwire "
            "refuses is skipped, and the summary says which and why. Times, context, tags and "
            "document ids are kept. Running it again adds nothing new. Shows a progress bar on "
            "a terminal (docs/compat.md)."
        )
        + "\n\nsources:\n"
        + kinds,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source", choices=list(SOURCES), help="what PATH holds")
    p.add_argument("path", help="the database or export file")
    p.add_argument(
        "--bank",
        "-b",
        default=None,
        help="put everything into this bank (default: memory-wire's own banks; 'default' "
        "for mem0 and agentmemory)",
    )
    p.add_argument("--no-progress", action="store_true", help="never show the progress bar")
    add_common(p)
    p.set_defaults(run=run_import_from)


class CountingReader:
    """A text file wrapper that reports the bytes it hands out to a :class:`Progress`."""

    def __init__(self, handle: IO[str], progress: Progress) -> None:
        self.handle = handle
        self.progress = progress

    def read(self, size: int = -1) -> str:
        data = self.handle.read(size)
        self.progress.advance(len(data.encode("utf-8", "surrogatepass")))
        return data

    def __iter__(self) -> Iterator[str]:
        for line in self.handle:
            self.progress.advance(len(line.encode("utf-8", "surrogatepass")))
            yield line


def run_export(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        if args.path == "-":
            count = memory.export(sys.stdout, bank=args.bank)
            sys.stdout.flush()
        else:
            count = memory.export(args.path, bank=args.bank)
    if args.path == "-":
        print(f"exported {count} memories", file=sys.stderr)
    else:
        emit(
            args,
            {"exported": count, "path": args.path},
            lambda: f"exported {count} memories to {args.path}",
        )
    return EXIT_OK


def run_import(args: argparse.Namespace) -> int:
    if args.path == "-":
        source: IO[str] = sys.stdin
        total = 0
    else:
        try:
            source = open(args.path, encoding="utf-8", newline="\n")  # noqa: SIM115
        except OSError as exc:
            raise CommandError(f"cannot open {args.path}: {exc.strerror}", EXIT_USAGE) from None
        total = os.fstat(source.fileno()).st_size
    progress = Progress(total, "importing", enabled=False if args.no_progress else None)
    try:
        with source if args.path != "-" else contextlib.nullcontext(source) as handle:
            reader = CountingReader(handle, progress)
            with open_memory(args) as memory:
                skipped: list[tuple[str, Record]] = []
                written = _import(memory, reader, args.bank, progress, skipped)
    finally:
        progress.finish()
    groups = skip_groups(skipped)
    result = {"imported": written, "skipped": len(skipped), "skipped_as": groups}
    emit(args, result, lambda: f"imported {written} memories" + skip_text(groups))
    return EXIT_OK


def skip_groups(skipped: list[tuple[str, Record]]) -> list[dict[str, Any]]:
    """Why memories were not imported, counted: the same id already stored (in which bank, in
    which state), or the same content already live in the bank."""
    counts: Counter[tuple[str, str, str]] = Counter(
        ("same id" if wanted == stored.id else "same content", stored.bank, stored.status)
        for wanted, stored in skipped
    )
    return [
        {"reason": reason, "bank": bank, "status": status, "count": count}
        for (reason, bank, status), count in sorted(counts.items())
    ]


def skip_text(groups: list[dict[str, Any]]) -> str:
    if not groups:
        return ""
    parts = []
    for g in groups:
        if g["reason"] == "same id":
            parts.append(f"{g['count']} {g['status']} in bank {g['bank']!r} (same id)")
        else:
            parts.append(f"{g['count']} with the same content as a memory of bank {g['bank']!r}")
    total = sum(g["count"] for g in groups)
    note = ""
    if any(g["reason"] == "same id" for g in groups):
        note = "; ids are unique in a store, so memories it already holds are not copied"
    return f"; skipped {total} already in this store: {', '.join(parts)}{note}"


def _import(
    memory: Any,
    reader: CountingReader,
    bank: str | None,
    progress: Progress,
    skipped: list[tuple[str, Record]],
) -> int:
    # Memory.import_ parses the whole file first (the progress line follows the bytes read),
    # then writes; the write phase shows as one note.
    original_advance = progress.advance

    def advance(amount: int) -> None:
        original_advance(amount)
        if progress.total and progress.done >= progress.total:
            progress.note("importing: writing…")

    progress.advance = advance  # type: ignore[method-assign]
    written: int = memory.import_(reader, bank=bank, skipped=skipped)
    return written


def run_import_from(args: argparse.Namespace) -> int:
    from memwire.importers import import_from

    progress = Progress(0, "importing", enabled=False if args.no_progress else None)

    def step(done: int, total: int) -> None:
        progress.total = total
        progress.advance(done - progress.done)

    try:
        with open_memory(args) as memory:
            summary = import_from(memory, args.source, args.path, bank=args.bank, progress=step)
    finally:
        progress.finish()
    emit(args, summary.as_dict(), summary.text)
    return EXIT_OK
