"""``memwire hook <event>``: run by agent hosts at their lifecycle events (see
:mod:`memwire.hooks.events`); ``memwire hook status`` and ``memwire hook drain`` for humans."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

from memwire.cli._common import EXIT_OK, EXIT_UNHEALTHY, add_common, db_path, emit

__all__ = ["register"]


def register(commands: Any) -> None:
    from memwire.hosts import EVENTS, HOSTS, PLAIN

    labels = [h.label for h in HOSTS.values()]
    p = commands.add_parser(
        "hook",
        help="run an agent-host hook (reads the host's JSON on stdin)",
        description=f"Run by {', '.join(labels[:-1])} or {labels[-1]} at a lifecycle event: "
        "prompt and session-start print the memories to inject; stop, pre-compact and "
        "session-end retain the new part of the transcript. Never fails the host: errors go "
        "to the hooks log and the exit code is 0; writes that cannot be delivered are spooled "
        "and delivered by a later run. 'status' shows the spool and the last failures; "
        "'drain' delivers the spool now.",
    )
    p.add_argument("event", choices=(*EVENTS, "status", "drain"), help="the event")
    p.add_argument(
        "--host",
        choices=(*HOSTS, PLAIN),
        default=None,
        help="the host's output format (default: guessed from the payload)",
    )
    p.add_argument(
        "--bank",
        "-b",
        default=None,
        help="the bank (default: $MEMWIRE_BANK, else the git remote's owner/repo of the "
        "payload's cwd, else the repository's name, else 'default')",
    )
    p.add_argument(
        "--url",
        default=None,
        help="the server to use (default: $MEMWIRE_URL, else "
        "a running local server, else the store in-process; 'off': in-process only)",
    )
    add_common(p)
    p.set_defaults(run=run_hook)


def run_hook(args: argparse.Namespace) -> int:
    if args.event == "status":
        return _status(args)
    if args.event == "drain":
        return _drain(args)
    from memwire.hooks.events import drain_spool, read_stdin
    from memwire.hooks.events import run_hook as run

    data = read_stdin(sys.stdin.buffer) if sys.stdin is not None else b""
    result = run(args.event, data, host=args.host, bank=args.bank, url=args.url, db=db_path(args))
    with contextlib.suppress(OSError, ValueError):
        if result.output:
            sys.stdout.write(result.output + "\n")
        sys.stdout.flush()
    if result.timed_out:
        # The recall thread is stuck (a slow disk, a hung server): leave without waiting.
        os._exit(0)
    if result.event == "session-start" and not result.error:
        # The context is out; now deliver what earlier runs spooled (bounded, errors logged).
        with contextlib.suppress(Exception):
            from memwire.hooks.client import open_client

            client = open_client(args.url, db_path(args))
            try:
                drain_spool(client, 2.0)
            finally:
                client.close()
    return EXIT_OK


def _status(args: argparse.Namespace) -> int:
    from memwire.hooks import hook_health

    health = hook_health()

    def human() -> str:
        spool = health["spool"]
        lines = [
            f"hooks: {health['status']}",
            f"spool: {spool['items']} write(s) waiting in {spool['files']} file(s), "
            f"{spool['rejected']} rejected ({health['spool_dir']})",
            f"log:   {health['log']}",
        ]
        for failure in health["last_failures"]:
            lines.append(
                f"  {failure.get('at', '?')} {failure.get('event', '?')}: "
                f"{failure.get('error', '')} {failure.get('detail', '')}".rstrip()
            )
        return "\n".join(lines)

    emit(args, health, human)
    return EXIT_OK if health["status"] == "ok" else EXIT_UNHEALTHY


def _drain(args: argparse.Namespace) -> int:
    from memwire.hooks import drain

    outcome = drain(args.url, db_path(args))
    emit(args, outcome, lambda: json.dumps(outcome))
    return EXIT_OK if outcome["remaining"] == 0 else EXIT_UNHEALTHY
