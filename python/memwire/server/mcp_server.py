"""memwire as an MCP server (official ``mcp`` SDK): stdio and streamable HTTP.

Thirteen tools, each a thin wrapper over :mod:`memwire.server.ops`, so a failing call (a bad
argument, a missing memory, a conflict, an unknown tool name) returns an MCP tool error
(``isError``) carrying the very message the HTTP surface answers with:

- ``memory_retain``, ``memory_retain_many``, ``memory_retain_conversation``, ``memory_recall``,
  ``memory_reflect``, ``memory_get``, ``memory_forget``, ``memory_bank_config_get``;
- memory that changes (issue 17): ``memory_update``, ``memory_history``, ``memory_trash``,
  ``memory_restore``, ``memory_purge``.

Each tool's ``inputSchema`` is generated from the field table (:mod:`memwire.server.fields`).

A bank can be pinned: ``memwire mcp --bank B`` over stdio, or the ``/mcp/{bank}`` URL over
HTTP. Calls then use that bank, and a call naming another bank is refused. Otherwise a call
without ``bank`` uses the bank rule's choice (:func:`memwire.project.resolve_bank`), the
one the hooks use: over stdio, the project of the directory the host started the server in
(so what a model retains lands where the hooks recall); over HTTP, ``$MEMWIRE_BANK`` else
``default``.

This module imports the SDK at import time; nothing on the plain HTTP or CLI paths imports it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server

from memwire.config import ACTING_KEYS_TEXT
from memwire.errors import InvalidInputError, MemwireError
from memwire.server import fields, ops

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from memwire.memory import Memory

__all__ = [
    "SPECS",
    "TOOLS",
    "ToolSpec",
    "build_server",
    "call",
    "http_session_manager",
    "run_stdio",
]

log = logging.getLogger("memwire.mcp")

Handler = Callable[["Memory", str, dict[str, Any]], Any]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: the operation whose fields (:mod:`memwire.server.fields`) it takes, and what
    runs it. ``TOOLS`` and the dispatch are both built from these, so they cannot drift."""

    name: str
    operation: str
    title: str
    description: str
    run: Handler
    read_only: bool
    destructive: bool = False
    idempotent: bool = True


def _bank_schema() -> dict[str, Any]:
    schema = fields.json_schema(fields.BANK)
    schema["description"] = (
        f"{fields.describe(fields.BANK, with_default=False)}. Default: this project's bank "
        "(the one the hooks inject from); fixed when the server pins a bank."
    )
    del schema["default"]  # a pinned server overrides it, so it is not a plain default
    return schema


def input_schema(operation: str) -> dict[str, Any]:
    """The tool ``inputSchema`` of ``operation``: its MCP fields, then ``bank``."""
    taken = fields.fields_for(operation, "mcp")
    return {
        "type": "object",
        "properties": {**{f.name: fields.json_schema(f) for f in taken}, "bank": _bank_schema()},
        "required": [f.name for f in taken if f.required],
        "additionalProperties": False,
    }


def _tool(spec: ToolSpec) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=input_schema(spec.operation),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def _recall(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return {"memories": ops.recall(memory, bank, {**args, "format": "full"})}


def _get(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.get(memory, bank, ops.read(args, "get")["id"])


def _forget(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.forget(memory, bank, ops.read(args, "forget")["id"])


def _history(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.history(memory, bank, ops.read(args, "history")["id"])


def _trash(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    page = ops.read(args, "trash")
    return {"memories": ops.trash(memory, bank, page["limit"], page["offset"])}


def _restore(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.restore(memory, bank, ops.read(args, "restore")["id"])


def _purge(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.purge(memory, bank, ops.read(args, "purge")["id"])


def _config_get(memory: Memory, bank: str, args: dict[str, Any]) -> Any:
    return ops.config_get(memory, bank)


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memory_retain",
        "retain",
        "Retain a memory",
        "Store a durable memory (a fact, decision or preference worth keeping) and return its "
        "id. Secrets are redacted before storage. Retaining identical content again returns "
        "the existing id. With document_id, the memory replaces that document's previous "
        "revision (update_mode 'replace', the default) or, with 'append', is refused with a "
        "conflict error if the document already has one. supersedes lists ids of memories "
        "this one replaces (a fact that changed): they leave recall and stay in its history.",
        ops.retain,
        read_only=False,
    ),
    ToolSpec(
        "memory_retain_conversation",
        "retain_conversation",
        "Retain a conversation",
        "Store a conversation, one memory per turn ('speaker: text'), each with the turns "
        "around it in the same session as context, so a short reply stays findable by what "
        "it answered. Returns the ids in turn order. The whole conversation is checked "
        "before anything is stored; secrets are redacted.",
        ops.retain_conversation,
        read_only=False,
    ),
    ToolSpec(
        "memory_retain_many",
        "retain_many",
        "Retain many memories",
        "Store a list of memories at once (each a string, or an object with memory_retain's "
        "fields) and return their ids in order. Every item is checked before any is written; "
        "a bad item fails the whole call and nothing is stored.",
        ops.retain_many,
        read_only=False,
    ),
    ToolSpec(
        "memory_recall",
        "recall",
        "Recall memories",
        "Find the memories most relevant to a query, best first, within a token budget. "
        "Returns each memory's id, score, date, content, context (where it was said, or null) "
        "and tags. min_score drops weak matches, so a query with nothing relevant returns no "
        "memories. as_of recalls what was live at a past date (before later versions "
        "superseded it).",
        _recall,
        read_only=True,
    ),
    ToolSpec(
        "memory_reflect",
        "reflect",
        "Reflect on memories",
        "The memories most relevant to a query as one text block, each cited by id and dated: "
        "ready to quote as context.",
        ops.reflect,
        read_only=True,
    ),
    ToolSpec(
        "memory_get",
        "get",
        "Get a memory",
        "One memory by id, with its tags, context and dates.",
        _get,
        read_only=True,
    ),
    ToolSpec(
        "memory_forget",
        "forget",
        "Forget a memory",
        "Forget one memory by id: it leaves recall at once and goes to the bank's trash, "
        "where memory_restore can bring it back until the bank's trash_days pass (when "
        "trash_days is 0 it is deleted at once; trashed says which). Forgetting a memory "
        "that is not live is an error.",
        _forget,
        read_only=False,
        destructive=True,
        # A repeat answers an error (the memory is gone), so the hint must not promise that
        # calling it again is harmless to the caller's flow.
        idempotent=False,
    ),
    ToolSpec(
        "memory_update",
        "update",
        "Update a memory",
        "Change a live memory when a fact changed. New content or context stores a new "
        "version (a new id, dated now) that supersedes the old one, which leaves recall and "
        "stays in the history; tags alone are changed in place. Returns the memory as it is "
        "now; updating a memory that is not live is a conflict error naming its status.",
        ops.update,
        read_only=False,
        # A repeated content update meets the superseded version: a conflict, not a no-op.
        idempotent=False,
    ),
    ToolSpec(
        "memory_history",
        "history",
        "A memory's history",
        "Every version of a memory, oldest first: each with its status (live, superseded, "
        "trashed), its dates (created_at, retained_at, archived_at: when it stopped being "
        "live) and superseded_by.",
        _history,
        read_only=True,
    ),
    ToolSpec(
        "memory_trash",
        "trash",
        "List the trash",
        "The bank's forgotten memories still in its trash, the last trashed first, each with "
        "its dates; memory_restore brings one back.",
        _trash,
        read_only=True,
    ),
    ToolSpec(
        "memory_restore",
        "restore",
        "Restore a memory",
        "Bring a memory back from the trash: it is live and recalled again, same id.",
        _restore,
        read_only=False,
        idempotent=False,
    ),
    ToolSpec(
        "memory_purge",
        "purge",
        "Purge a memory",
        "Delete one memory for good, in any state (live, superseded or trashed): from the "
        "store, its history and the bank's snapshot. IRREVERSIBLE: nothing can bring it "
        "back. Use it for a leaked secret; use memory_forget for anything else.",
        _purge,
        read_only=False,
        destructive=True,
        idempotent=False,
    ),
    ToolSpec(
        "memory_bank_config_get",
        "config_get",
        "Get a bank's config",
        f"The bank's configuration ({ACTING_KEYS_TEXT} act; any other key is refused).",
        _config_get,
        read_only=True,
    ),
)
TOOLS: list[types.Tool] = [_tool(spec) for spec in SPECS]
_HANDLERS: dict[str, Handler] = {spec.name: spec.run for spec in SPECS}
# The argument names each tool's inputSchema declares (additionalProperties is false).
_ARGUMENTS: dict[str, frozenset[str]] = {
    tool.name: frozenset(tool.input_schema["properties"]) for tool in TOOLS
}


def _pick_bank(arguments: dict[str, Any], pinned: str | None, default: str | None) -> str:
    asked = arguments.get("bank")
    if asked is not None and not isinstance(asked, str):
        raise InvalidInputError(f"bank must be a string, got {ops._type_name(asked)}")
    if pinned is not None:
        from memwire._text import clean_bank

        if asked is not None and clean_bank(asked) != clean_bank(pinned):
            raise InvalidInputError(
                f"this MCP endpoint is pinned to bank {pinned!r}; it cannot use bank {asked!r}"
            )
        return pinned
    if asked is not None:
        return asked
    from memwire.project import resolve_bank

    return default if default is not None else resolve_bank(None)


def call(
    memory: Memory,
    name: str,
    arguments: dict[str, Any],
    pinned: str | None,
    default: str | None = None,
) -> Any:
    """Run one tool synchronously: its structured result, or a memwire error.

    A name that is not one of :data:`TOOLS` is an error, never some other tool. ``pinned``:
    the only bank allowed; ``default``: the bank of a call that names none (None: the bank
    rule without a working directory)."""
    handler = _HANDLERS.get(name)
    if handler is None:
        raise InvalidInputError(
            f"unknown tool {name!r}; the tools are {', '.join(sorted(_HANDLERS))}"
        )
    unknown = sorted(set(arguments) - _ARGUMENTS[name])
    if unknown:
        raise InvalidInputError(
            f"{name} takes no argument {unknown[0]!r}; its arguments are "
            f"{', '.join(sorted(_ARGUMENTS[name]))}"
        )
    bank = _pick_bank(arguments, pinned, default)
    args = {k: v for k, v in arguments.items() if k != "bank"}
    return handler(memory, bank, args)


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def _text_of(name: str, result: Any) -> str:
    if name == "memory_reflect":
        return str(result["text"])
    return json.dumps(result, ensure_ascii=False)


def build_server(
    memory: Memory, *, bank: str | None = None, default_bank: str | None = None
) -> Server[Any]:
    """An MCP server over ``memory``; ``bank`` pins every call to one bank; ``default_bank``
    is the bank of a call that names none (None: :func:`memwire.project.resolve_bank`
    without a working directory).

    Over HTTP, the pinned bank comes from the URL (``/mcp/{bank}``) of each request instead.
    """
    from memwire import __version__, backend_info

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=TOOLS)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        pinned = bank
        request = ctx.request
        scope = getattr(request, "scope", None)
        if isinstance(scope, dict) and scope.get("memwire.pinned_bank") is not None:
            pinned = scope["memwire.pinned_bank"]
        arguments = dict(params.arguments or {})
        try:
            result = await anyio.to_thread.run_sync(
                call, memory, params.name, arguments, pinned, default_bank
            )
        except MemwireError as exc:
            from memwire.server.app import error_message

            return _error_result(error_message(exc))
        except Exception:
            log.exception("tool %s failed", params.name)
            return _error_result("internal error")
        structured = jsonable_object(result)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_text_of(params.name, structured))],
            structured_content=structured,
        )

    info = backend_info()
    return Server(
        "memwire",
        version=__version__,
        title="memwire",
        description=f"Durable memory for agents ({info.name} backend)",
        instructions="Use memory_recall before answering questions about past work, "
        "decisions or preferences; use memory_retain to keep what should outlast this "
        "conversation.",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def jsonable_object(value: Any) -> dict[str, Any]:
    result = ops.jsonable(value)
    return result if isinstance(result, dict) else {"result": result}


def http_session_manager(memory: Memory, *, max_body: int) -> StreamableHTTPSessionManager:
    """The streamable HTTP transport the server mounts at ``/mcp`` and ``/mcp/{bank}``.

    Stateless with JSON responses: each POST is one exchange, nothing is kept between
    requests, so idle clients cost nothing. Host, origin and token checks happen in front of
    it (:class:`memwire.server.app.Guard`).
    """
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    return StreamableHTTPSessionManager(
        app=build_server(memory),
        stateless=True,
        json_response=True,
        max_request_body_size=max_body,
    )


def run_stdio(
    db: str | None = None,
    *,
    bank: str | None = None,
    cwd: str | None = None,
    embedder: str | None = None,
) -> None:
    """Serve MCP on stdin/stdout until stdin closes (stdout carries only the protocol).

    ``bank`` pins every call; otherwise a call without ``bank`` uses the bank rule's choice
    for ``cwd`` (default: this process's working directory, which hosts set to the project).
    ``embedder``: the store-wide default embedder (:class:`memwire.Memory`)."""
    from mcp.server.stdio import stdio_server

    from memwire._text import clean_bank
    from memwire.memory import Memory

    logging.basicConfig(level=logging.WARNING, format="memwire: %(levelname)s %(message)s")
    from memwire.project import resolve_bank

    pinned = clean_bank(bank) if bank is not None else None
    default_bank = resolve_bank(cwd if cwd is not None else os.getcwd())

    async def main(memory: Memory) -> None:
        server = build_server(memory, bank=pinned, default_bank=default_bank)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    with Memory(db, embedder=embedder) as memory:
        anyio.run(main, memory)
