"""``memwire connect [HOST...] [--list] [--uninstall] [--skill]``: wire memwire into agent
hosts (see :mod:`memwire.connect`)."""

from __future__ import annotations

import argparse
from typing import Any

from memwire.cli._common import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CommandError, add_common, emit

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
    p.add_argument("--home", default=None, help=argparse.SUPPRESS)  # tests: a fake HOME
    add_common(p, db=False)
    p.set_defaults(run=run_connect)


def _line(report: dict[str, Any]) -> str:
    hooks = report["hooks"]
    wired = sum(1 for v in hooks.values() if v)
    text = (
        f"{report['host']:<7} {report['state']:<8} hooks {wired}/{len(hooks)}  "
        f"mcp {report['mcp']:<7}  skill {'yes' if report['skill'] else 'no'}"
    )
    if report["error"]:
        text += f"\n        error: {report['error']}"
    for path in report.get("changed", []):
        text += f"\n        wrote {path}"
    for path in report.get("backups", []):
        text += f"\n        backup {path}"
    return text


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
        reports = connect(args.hosts, home=args.home, uninstall=args.uninstall, skill=args.skill)
    data = [r.as_dict() for r in reports]

    def human() -> str:
        if not data:
            return "no agent host found under your home; name one: memwire connect " + " | ".join(
                host_names()
            )
        return "\n".join(_line(r) for r in data)

    emit(args, data, human)
    return EXIT_ERROR if any(r["error"] for r in data) else EXIT_OK
