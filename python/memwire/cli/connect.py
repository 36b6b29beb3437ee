"""``memwire connect [HOST...] [--list] [--uninstall] [--skill]``: wire memwire into agent
hosts (see :mod:`memwire.connect`)."""

from __future__ import annotations

import argparse
from typing import Any

from memwire.cli._common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_common,
    db_path,
    emit,
)

__all__ = ["register"]


def register(commands: Any) -> None:
    from memwire.hosts import HOSTS

    names = list(HOSTS)
    p = commands.add_parser(
        "connect",
        help="wire memwire into " + ", ".join(h.label for h in HOSTS.values()),
        description="Write memwire's hook entries and MCP server entry into each host's "
        "config (all hosts found under your home when none is named). Idempotent: a second "
        "run changes nothing. Every edited file is backed up beside itself first "
        "(<file>.memwire-backup-<time>); a config that does not parse is refused untouched; "
        "entries memwire did not write are never changed. Hosts: " + ", ".join(names) + ".",
    )
    p.add_argument(
        "hosts",
        nargs="*",
        metavar="HOST",
        help="hosts to wire (default: every host whose config directory exists)",
    )
    p.add_argument(
        "--list",
        action="store_true",
        help="report absent / present / partial / wired for each host and change nothing",
    )
    p.add_argument(
        "--uninstall", action="store_true", help="remove memwire's entries (and its skill) instead"
    )
    p.add_argument(
        "--skill",
        action="store_true",
        help="also copy memwire's SKILL.md into each host's skills directory",
    )
    p.add_argument(
        "--bank",
        "-b",
        default=None,
        help="pin this bank into every hook and the MCP server (default: each project's own "
        "bank: $MEMWIRE_BANK, else the git remote's owner/repo, else the repository's name)",
    )
    p.add_argument("--home", default=None, help=argparse.SUPPRESS)  # tests: a fake HOME
    add_common(p)
    p.set_defaults(run=run_connect)


def _line(report: dict[str, Any], uninstall: bool) -> str:
    hooks = report["hooks"]
    wired = sum(1 for v in hooks.values() if v)
    text = (
        f"{report['host']:<7} {report['state']:<8} hooks {wired}/{len(hooks)}  "
        f"mcp {report['mcp']:<7}  skill {'yes' if report['skill'] else 'no'}"
    )
    if report["error"]:
        text += f"\n        error: {report['error']}"
    verb = "removed memwire's entries from" if uninstall else "wrote"
    for path in report.get("changed", []):
        text += f"\n        {verb} {path}"
    for path in report.get("removed", []):
        text += f"\n        removed {path}"
    for path in report.get("backups", []):
        text += f"\n        backup {path}"
    return text


def next_steps(data: list[dict[str, Any]]) -> list[str]:
    """What to do after wiring: each wired host's own steps, then the daemon."""
    steps = [f"{r['label']}: {step}" for r in data for step in r.get("next_steps", [])]
    if steps:
        steps.append(
            "optional: 'memwire daemon start' keeps the store open, so each prompt's hook "
            "answers in a few milliseconds instead of opening the store itself"
        )
        steps.append("check: 'memwire doctor' (the store, the daemon and what the hooks will use)")
    return steps


def run_connect(args: argparse.Namespace) -> int:
    from memwire.connect import connect, host_names, list_hosts

    unknown = [h for h in args.hosts if h not in host_names()]
    if unknown:
        raise CommandError(
            f"unknown host(s): {', '.join(unknown)} (known: {', '.join(host_names())})", EXIT_USAGE
        )
    if args.list:
        reports = list_hosts(args.hosts or None, home=args.home)
    else:
        reports = connect(
            args.hosts,
            home=args.home,
            uninstall=args.uninstall,
            skill=args.skill,
            bank=args.bank,
            db=db_path(args),
        )
    data = [r.as_dict() for r in reports]

    def human() -> str:
        if not data:
            return "no agent host found under your home; name one: memwire connect " + " | ".join(
                host_names()
            )
        lines = [_line(r, args.uninstall) for r in data]
        steps = next_steps(data)
        if steps:
            lines.append("next:")
            lines += [f"  - {step}" for step in steps]
        return "\n".join(lines)

    emit(args, data, human)
    return EXIT_ERROR if any(r["error"] for r in data) else EXIT_OK
