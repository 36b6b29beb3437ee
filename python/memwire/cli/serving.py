"""``memwire serve`` (HTTP + MCP over streamable HTTP) and ``memwire mcp`` (MCP over stdio)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from memwire.cli._common import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    CommandError,
    add_common,
    db_path,
    embedder_of,
)

__all__ = ["register"]


def register(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve the store over HTTP (and MCP at /mcp)",
        description="Serve the store over HTTP, with MCP (streamable HTTP) at /mcp and "
        "/mcp/{bank}. Loopback only unless a token is set. Stops cleanly on SIGINT/SIGTERM.",
    )
    add_serve_options(serve)
    serve.add_argument(
        "--store",
        metavar="LOCATION",
        default=None,
        help="where the memories live: a postgresql:// URL (one database any number of servers "
        "share, docs/scaling.md), sqlite:PATH or a file path (default: --db, else "
        '$MEMWIRE_STORE, else store = "..." in memwire.toml in $MEMWIRE_HOME or '
        "~/.config/memwire, else the memwire home's memory.db)",
    )
    add_common(serve, json_flag=False, embedder=True)
    serve.set_defaults(run=run_serve)

    mcp = commands.add_parser(
        "mcp",
        help="speak MCP over stdio (for agent hosts that launch a command)",
        description="Run an MCP server on stdin/stdout: stdout carries only the protocol. "
        "With --bank, every tool is pinned to that bank; without it, a call that names no "
        "bank uses the bank the hooks use: $MEMWIRE_BANK, else the project of the working "
        "directory (git remote owner/repo, else the repository's name), else 'default'.",
    )
    mcp.add_argument("--bank", "-b", default=None, help="pin every tool call to this bank")
    mcp.add_argument(
        "--cwd",
        metavar="DIR",
        default=None,
        help="the project directory whose bank calls without a bank use (default: the "
        "working directory)",
    )
    add_common(mcp, json_flag=False, embedder=True)
    mcp.set_defaults(run=run_mcp)


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    from memwire.server.runner import DEFAULT_HOST, DEFAULT_PORT

    parser.add_argument(
        "--host", default=DEFAULT_HOST, help="address to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help="port to listen on (default: %(default)s)"
    )
    parser.add_argument(
        "--token",
        default=None,
        help="bearer token required on every route but /health (default: $MEMWIRE_TOKEN); "
        "mandatory for a non-loopback --host",
    )
    parser.add_argument(
        "--warm",
        action="store_true",
        help="load the kernel, numpy and the embedder right after start instead of with the "
        "first request that needs them (the first request does not wait; an idle server holds "
        "~60 MiB instead of ~31)",
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        choices=["critical", "error", "warning", "info", "debug"],
        help="server log level (default: %(default)s)",
    )


def token_of(args: argparse.Namespace) -> str | None:
    token: str | None = args.token if args.token is not None else os.environ.get("MEMWIRE_TOKEN")
    return token or None


def store_of(args: argparse.Namespace) -> str | None:
    """The store named on the command line: ``--store`` or ``--db`` (None: the configured one,
    :func:`memwire.locations.store_setting`: ``$MEMWIRE_STORE``, the config file, the
    default file)."""
    store: str | None = getattr(args, "store", None)
    db = db_path(args)
    if store is not None and db is not None:
        raise CommandError("give --store or --db, not both", EXIT_USAGE)
    return store if store is not None else db


def run_serve(args: argparse.Namespace) -> int:
    from memwire.server.runner import ServeFailed, ServeRefused, serve

    if not 0 <= args.port <= 65535:
        raise CommandError(f"--port must be between 0 and 65535, got {args.port}", EXIT_USAGE)
    try:
        serve(
            store_of(args),
            host=args.host,
            port=args.port,
            token=token_of(args),
            log_level=args.log_level,
            embedder=embedder_of(args),
            warm=args.warm,
        )
    except ServeRefused as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    except ServeFailed as exc:
        raise CommandError(str(exc), EXIT_ERROR) from None
    return EXIT_OK


def run_mcp(args: argparse.Namespace) -> int:
    from memwire import _heap
    from memwire.server.mcp_server import run_stdio

    _heap.tune_for_server()  # a long-running process, as serve's (memwire._heap)
    run_stdio(db_path(args), bank=args.bank, cwd=args.cwd, embedder=embedder_of(args))
    return EXIT_OK
