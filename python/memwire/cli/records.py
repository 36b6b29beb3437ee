"""Commands on memories: ``retain``, ``retain-conversation``, ``recall``, ``reflect``, ``get``,
``forget``, ``memories`` (changing, trash and purge: :mod:`memwire.cli.revisions`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
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


def register(commands: Any) -> None:
    p = commands.add_parser(
        "retain",
        help="store a memory",
        description="Store a memory and print its id. CONTENT '-' reads standard input. "
        "Exit code 6 when --update-mode append meets a document that already has a memory.",
    )
    add_fields(p, "retain", help={"content": "the memory text, or '-' to read it from stdin"})
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_retain)

    p = commands.add_parser(
        "retain-conversation",
        help="store a conversation, one memory per turn with its neighbours as context",
        description="Store the turns of FILE, one memory per turn ('speaker: text'), each with "
        "the texts of the turns around it in the same session as its context, and print the "
        "ids. FILE holds a JSON array of turns, an object with a 'turns' array, or JSON Lines "
        "(one turn per line); a turn is an object with 'speaker' and 'text' and optionally "
        "'created_at', 'session' and 'tags'. The whole file is checked before anything is "
        "stored (exit code 2 and nothing written when a turn is bad).",
    )
    add_fields(
        p,
        "retain_conversation",
        help={"turns": "a JSON or JSON Lines file of turns, or '-' to read standard input"},
    )
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_retain_conversation)

    p = commands.add_parser(
        "recall",
        help="find the memories that best match a query",
        description="Print the memories of a bank most relevant to QUERY, best first.",
    )
    add_fields(p, "recall")
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_recall)

    p = commands.add_parser(
        "reflect",
        help="the best memories for a query as one cited text block",
        description="Print the memories most relevant to QUERY, cited by id and dated.",
    )
    add_fields(p, "reflect")
    add_bank(p)
    add_common(p, embedder=True)
    p.set_defaults(run=run_reflect)

    p = commands.add_parser("get", help="show one memory", description="Show one memory.")
    add_fields(p, "get")
    add_bank(p, any_bank=True)
    add_common(p, embedder=True)
    p.set_defaults(run=run_get)

    p = commands.add_parser(
        "forget",
        help="move one memory to the trash",
        description="Forget one live memory: it leaves recall and goes to its bank's trash "
        "(memwire trash lists and restores it) for the bank's trash_days, 30 by default; with "
        "trash_days 0 it is deleted at once. Exit code 3 when there is no such live memory.",
    )
    add_fields(p, "forget")
    add_bank(p, any_bank=True)
    add_common(p, embedder=True)
    p.set_defaults(run=run_forget)

    p = commands.add_parser(
        "memories",
        help="list a bank's memories, newest first",
        description="List a page of a bank's memories, newest first.",
    )
    add_bank(p)
    add_fields(p, "memories")
    add_common(p, embedder=True)
    p.set_defaults(run=run_memories)


def _one_line(text: str, width: int = 100) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _date(value: object) -> str:
    return str(ops.jsonable(value) or "")[:19].replace("T", " ")


def run_retain(args: argparse.Namespace) -> int:
    body = body_of(args, "retain")
    if body["content"] == "-":
        body["content"] = sys.stdin.read()
    with open_memory(args) as memory:
        result = ops.retain(memory, args.bank, body)
    emit(args, result, lambda: result["id"])
    return EXIT_OK


def read_turns(source: str) -> list[Any]:
    """The turns of a JSON document (an array, or an object with ``turns``) or of JSON Lines
    (one turn per line), from the file ``source`` or standard input (``-``)."""
    try:
        raw = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise CommandError(f"{source}: not UTF-8 text", EXIT_USAGE) from None
    except OSError as exc:
        raise CommandError(f"{source}: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        whole = json.loads(raw)
    except json.JSONDecodeError:
        whole = None
        lines = [(n, line) for n, line in enumerate(raw.splitlines(), 1) if line.strip()]
        turns: list[Any] = []
        for number, line in lines:
            try:
                turns.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise CommandError(
                    f"{source}: line {number}: invalid JSON ({exc.msg})", EXIT_USAGE
                ) from None
        if not lines:
            raise CommandError(f"{source}: no turns (an empty file)", EXIT_USAGE) from None
        return turns
    if isinstance(whole, dict) and "turns" in whole:
        whole = whole["turns"]
    if isinstance(whole, dict):
        return [whole]  # JSON Lines of one turn
    if not isinstance(whole, list):
        raise CommandError(
            f"{source}: expected a JSON array of turns, an object with 'turns', or JSON Lines",
            EXIT_USAGE,
        )
    return whole


def run_retain_conversation(args: argparse.Namespace) -> int:
    body = {**body_of(args, "retain_conversation"), "turns": read_turns(args.turns)}
    with open_memory(args) as memory:
        result = ops.retain_conversation(memory, args.bank, body)
    emit(args, result, lambda: "\n".join(result["ids"]))
    return EXIT_OK


def run_recall(args: argparse.Namespace) -> int:
    body = {**body_of(args, "recall"), "format": "full"}
    with open_memory(args) as memory:
        hits = ops.recall(memory, args.bank, body)

    def human() -> str:
        if not hits:
            return f"no memories in bank {args.bank!r} match"
        lines = []
        for n, hit in enumerate(hits, 1):
            tags = f" [{', '.join(hit['tags'])}]" if hit["tags"] else ""
            lines.append(
                f"{n:>2}. {hit['id']}  {_date(hit['created_at'])}  score {hit['score']:.4f}{tags}"
            )
            lines.append("    " + hit["content"].replace("\n", "\n    "))
        return "\n".join(lines)

    emit(args, hits, human)
    return EXIT_OK


def run_reflect(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        result = ops.reflect(memory, args.bank, body_of(args, "reflect"))
    emit(args, result, lambda: result["text"])
    return EXIT_OK


def _show(record: dict[str, Any]) -> str:
    lines = [f"id:          {record['id']}"]
    keys = ("bank", "created_at", "retained_at", "document_id", "context", "status")
    for key in (*keys, "superseded_by", "archived_at"):
        if record.get(key) is not None:
            lines.append(f"{key + ':':<12} {record[key]}")
    if record.get("tags"):
        lines.append(f"tags:        {', '.join(record['tags'])}")
    lines.append("")
    lines.append(record["content"])
    return "\n".join(lines)


def run_get(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        record = ops.get(memory, args.bank, args.id)
    emit(args, record, lambda: _show(record))
    return EXIT_OK


def run_forget(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        result = ops.forget(memory, args.bank, args.id)
    trashed = " (moved to the trash: memwire trash restore ID brings it back)"
    emit(args, result, lambda: f"forgot {args.id}" + (trashed if result["trashed"] else ""))
    return EXIT_OK


def run_memories(args: argparse.Namespace) -> int:
    with open_memory(args) as memory:
        page = ops.memories(memory, args.bank, args.limit, args.offset)

    def human() -> str:
        if not page:
            return f"no memories in bank {args.bank!r}" + (" at this offset" if args.offset else "")
        return "\n".join(
            f"{r['id']}  {_date(r.get('created_at'))}  {_one_line(r['content'])}" for r in page
        )

    emit(args, page, human)
    return EXIT_OK
