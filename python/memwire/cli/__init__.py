"""The ``memwire`` command line: one module per command group, argparse only.

Every command prints human-readable text by default and JSON with ``--json``; its exit code
says what happened (see ``memwire --help`` and :mod:`memwire.cli._common`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from memwire.cli import _common, doctor
from memwire.cli._common import EXIT_CODES_HELP, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE

__all__ = ["build_parser", "main"]

# Every command group, in the order `memwire --help` lists them. Each is imported when the
# parser is built: a group that fails to import fails the whole CLI (and its tests) rather than
# vanishing from it. Two commands build only their own group when they come first, so they do
# not pay for importing the others (agent hosts, importers, HTTP clients): `memwire hook ...`,
# which agent hosts run before every prompt, and `memwire serve`, whose time to the first
# /health and idle memory are measured (docs/BENCHMARKS.md).
_GROUPS = (
    "serving",
    "records",
    "revisions",
    "store",
    "transfer",
    "migrate",
    "doctor",
    "daemon",
    "evaluate",
    "hook",
    "connect",
)
_ALONE = {"hook": "hook", "serve": "serving"}  # first argument -> the only group built


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``memwire`` parser; ``only``: just that command group (the hook fast path)."""
    parser = argparse.ArgumentParser(
        prog="memwire",
        description="Durable memory for AI agents: serve it over HTTP and MCP, or use it here.",
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action=doctor.VersionAction)
    parser.add_argument(
        "--db",
        metavar="PATH",
        default=None,
        help="the store: a file or a postgresql:// URL (default: $MEMWIRE_STORE, else "
        "memwire.toml, else the memwire home)",
    )
    parser.add_argument("--json", action="store_true", default=False, help="print JSON")
    _common.add_embedder(parser, default=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in _GROUPS if only is None else (only,):
        importlib.import_module(f"memwire.cli.{name}").register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns its exit code (never raises but for SystemExit from --help)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_ALONE.get(args_list[0]) if args_list else None)
    try:
        args = parser.parse_args(args_list)
    except SystemExit as exc:  # argparse: --help/--version exit 0, usage errors exit 2
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        _common.resolve_project_bank(args)
        code = run(args)
    except KeyboardInterrupt:
        _common.status("memwire: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:
        if _common.debug():
            import traceback

            traceback.print_exc()
        _common.status(f"memwire: {_common.error_text(exc)}")
        return _common.exit_code_for(exc)
    return int(code or 0)
