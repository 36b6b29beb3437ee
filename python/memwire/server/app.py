"""The HTTP application: routes shaped after memory-wire's over one :class:`~memwire.Memory`,
and under ``/mw`` its exact answers for memory-wire clients (:mod:`memwire.server.compat`).

``create_app(memory)`` returns a Starlette app. Every route is a thin wrapper over
:mod:`memwire.server.ops`; the error contract lives in :func:`error_response` and the guard
(host, origin and bearer-token checks, body size) in :class:`Guard`. The MCP endpoint at
``/mcp`` and ``/mcp/{bank}`` is built on first use, so a server nobody speaks MCP to never
imports the MCP SDK.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hmac
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memwire.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StorageFullError,
    StoreUnavailableError,
)
from memwire.server._deferred import Deferred
from memwire.server.body import STEPWISE_MIN_BYTES, parse_json
from memwire.server.compat import compat_routes
from memwire.server.threads import Lane, alone, batch_write, compute_lane, in_thread
from memwire.server.ui import PUBLIC_PATHS, ui_routes

if TYPE_CHECKING:
    from memwire.memory import Memory
    from memwire.server import ops
else:
    ops = Deferred("memwire.server.ops")  # imported by the first request using it

__all__ = ["DEFAULT_MAX_BODY", "JSONBody", "create_app", "error_message", "error_status"]

log = logging.getLogger("memwire.server")

DEFAULT_MAX_BODY = 4 * 1024 * 1024
"""Largest request body accepted, in bytes (413 above it). A memory is at most 100k chars."""

OPAQUE_ERROR = "internal error"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


# -- errors ------------------------------------------------------------------------------------


def error_status(exc: BaseException) -> int:
    """The HTTP status of an exception raised by an operation."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, BodyTooLarge):
        return 413
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, InvalidInputError):
        return 400
    if isinstance(exc, StoreUnavailableError):  # the database is down: retry, nothing written
        return 503
    if isinstance(exc, StorageFullError):  # the disk is full or failing: nothing written
        return 507
    return 500


def error_message(exc: BaseException) -> str:
    """The message a client sees: the reason for 4xx, always opaque for 500."""
    if error_status(exc) == 500:
        return OPAQUE_ERROR
    return str(exc) or type(exc).__name__


class JSONBody(Response):
    """A JSON response that never fails to encode (lone surrogates are escaped)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(
                content, ensure_ascii=False, allow_nan=False, separators=(",", ":")
            ).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False).encode("ascii")


def error_body(status: int, message: str, headers: dict[str, str] | None = None) -> JSONBody:
    return JSONBody({"error": message}, status_code=status, headers=headers)


def error_response(exc: BaseException) -> JSONBody:
    status = error_status(exc)
    if status == 500:
        log.error("request failed: %s", type(exc).__name__, exc_info=exc)
    if status == 503:
        log.warning("request failed: the store's database cannot be reached")
        return error_body(status, error_message(exc), {"Retry-After": "1"})
    return error_body(status, error_message(exc))


# -- request helpers ---------------------------------------------------------------------------


async def read_json(request: Request) -> Any:
    """The parsed body (size was checked by the guard); a 400 for anything not JSON. A large
    body is parsed on a worker thread, in steps (memwire/server/body.py)."""
    raw = await request.body()
    if len(raw) >= STEPWISE_MIN_BYTES:
        return await in_thread(functools.partial(parse_json, raw, stepwise=True))
    return parse_json(raw)


Handler = Callable[[Request], Awaitable[Any]]


def endpoint(handler: Handler, *, query: bool = False) -> Callable[[Request], Awaitable[Response]]:
    """Wrap a handler returning JSON data: map memwire errors, never leak a traceback.

    ``query``: the handler reads (and checks) its query string; any other route refuses one,
    naming the parameter, rather than ignore what a client meant to ask."""

    async def run(request: Request) -> Response:
        try:
            if not query and request.query_params:
                name = next(iter(request.query_params))
                raise InvalidInputError(f"unknown query parameter {name!r}; this route takes none")
            result = await handler(request)
        except Exception as exc:
            return error_response(exc)
        if isinstance(result, Response):
            return result
        return JSONBody(result)

    run.__name__ = handler.__name__
    run.__doc__ = handler.__doc__
    return run


# -- the guard ---------------------------------------------------------------------------------


def _host_name(value: str) -> str:
    """``host[:port]`` -> host, handling ``[::1]:8888``."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _origin_host(origin: str) -> str:
    rest = origin.split("://", 1)[-1]
    return _host_name(rest.split("/", 1)[0])


def _utf8_url(scope: Scope) -> bool:
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8")
    for part in (raw_path, scope.get("query_string", b"").replace(b"+", b" ")):
        try:
            unquote_to_bytes(part).decode("utf-8")
        except UnicodeDecodeError:
            return False
    return True


def wants_details(value: str | None) -> bool:
    """``/health?details=...``: ``1``/``true`` for Memory.health() as JSON, ``0``/``false`` or
    absent for the plain ``ok``; anything else is refused."""
    if value is None:
        return False
    flag = value.strip().lower()
    if flag not in ("1", "true", "0", "false"):
        raise InvalidInputError("details must be 1, true, 0 or false")
    return flag in ("1", "true")


def _details_asked(scope: Scope) -> bool:
    """Does this ``/health`` request ask for details (which, with a token, need it)?"""
    return b"details" in scope.get("query_string", b"")


class Guard:
    """Pure ASGI middleware in front of every route.

    - With a token, every path but ``/health`` needs ``Authorization: Bearer <token>`` (401);
      ``/health?details=1`` (bank names, errors) needs it too.
    - On a loopback server, a ``Host`` that is not a loopback name is refused (DNS rebinding),
      and so is a browser ``Origin`` from anywhere but loopback (403): a web page must not be
      able to write into the memory of the machine that views it.
    - Bodies larger than ``max_body`` answer 413 before they are read whole.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        token: str | None,
        max_body: int,
        allowed_hosts: Iterable[str] | None,
    ) -> None:
        self.app = app
        self.token = token.encode("utf-8") if token else None
        self.max_body = max_body
        self.allowed_hosts = (
            None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k: v for k, v in scope["headers"]}
        refusal = self._check(scope, headers)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                await error_body(400, "invalid Content-Length header")(scope, receive, send)
                return
            if size > self.max_body:
                await self._too_large(scope, receive, send)
                return
        await self.app(scope, self._limited(receive), send)

    def _own_origin(self, scope: Scope, origin: str) -> bool:
        assert self.allowed_hosts is not None
        scheme, sep, rest = origin.strip().lower().partition("://")
        if not sep or scheme != str(scope.get("scheme", "http")).lower():
            return False
        authority = rest.split("/", 1)[0]
        if _origin_host(origin) not in self.allowed_hosts:
            return False
        port_text = authority.rsplit("]", 1)[-1] if authority.startswith("[") else authority
        port_text = port_text.rsplit(":", 1)[1] if ":" in port_text else ""
        if port_text and not (port_text.isdigit() and len(port_text) <= 5):
            return False
        port = int(port_text) if port_text else (443 if scheme == "https" else 80)
        server = scope.get("server")
        return server is None or server[1] is None or int(server[1]) == port

    def _check(self, scope: Scope, headers: dict[bytes, bytes]) -> Response | None:
        if self.allowed_hosts is not None:
            host = headers.get(b"host", b"").decode("latin-1")
            if _host_name(host) not in self.allowed_hosts:
                return error_body(421, "this server answers loopback host names only")
            # Any Origin but this server's own (scheme, loopback host AND port) is refused,
            # "null" included (sandboxed pages): a page on http://localhost:3000 is another
            # origin and must not plant memories with a simple POST.
            origin = headers.get(b"origin")
            if origin is not None and not self._own_origin(scope, origin.decode("latin-1")):
                return error_body(403, "cross-origin requests are refused")
        # Starlette percent-decodes with errors="replace": "/banks/a%FFb" would address a bank
        # named "a\ufffdb". A path or query that is not UTF-8 once decoded is refused instead.
        if not _utf8_url(scope):
            return error_body(400, "the URL is not valid UTF-8 once percent-decoded")
        # The web page's static files hold no data: it loads, then asks for the token.
        path = scope["path"]
        public = path in PUBLIC_PATHS or (path == "/health" and not _details_asked(scope))
        if self.token is not None and not public:
            supplied = headers.get(b"authorization", b"")
            scheme, _, value = supplied.partition(b" ")
            ok = scheme.lower() == b"bearer" and hmac.compare_digest(value.strip(), self.token)
            if not ok:
                return error_body(
                    401, "a bearer token is required", headers={"WWW-Authenticate": "Bearer"}
                )
        return None

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await error_body(413, f"the request body is larger than {self.max_body} bytes")(
            scope, receive, send
        )

    def _limited(self, receive: Receive) -> Receive:
        seen = 0
        limit = self.max_body

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        return limited


class BodyTooLarge(Exception):
    """A chunked body grew past the limit while it was being read (413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the request body is larger than {limit} bytes")


class _CatchTooLarge:
    """Turns :class:`BodyTooLarge` raised inside a route into a 413 (no response sent yet)."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app = app
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            body = error_body(413, f"the request body is larger than {self.max_body} bytes")
            await body(scope, receive, send)


# -- MCP, built on first use -------------------------------------------------------------------


class LazyMCP:
    """The streamable HTTP MCP endpoint, imported and started on the first request to it.

    It runs in a task of its own on the event loop from its first request until the app shuts
    down (:meth:`close`): not in an anyio task group opened at start-up, whose import (anyio's
    asyncio backend) the first ``/health`` would otherwise wait for."""

    def __init__(self, memory: Memory, max_body: int) -> None:
        self.memory = memory
        self.max_body = max_body
        self._handler: asyncio.Future[ASGIApp | None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._failed = False
        self._running = False

    def open(self) -> None:
        """The app has started: the endpoint starts with its first request from now on."""
        self._running = True

    async def close(self) -> None:
        """The app is shutting down: stop the endpoint (if it ever started)."""
        self._running = False
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])

    async def _serve(self, handler: asyncio.Future[ASGIApp | None]) -> None:
        try:
            from memwire.server.mcp_server import http_session_manager

            manager = http_session_manager(self.memory, max_body=self.max_body)
            async with manager.run():
                handler.set_result(manager.handle_request)
                await asyncio.get_running_loop().create_future()  # until close() cancels it
        except Exception:
            log.exception("the MCP endpoint failed to start")
            self._failed = True
            if not handler.done():
                handler.set_result(None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._running:
            await error_body(503, "the MCP endpoint is not running")(scope, receive, send)
            return
        if self._handler is None:
            loop = asyncio.get_running_loop()
            self._handler = loop.create_future()
            self._task = loop.create_task(self._serve(self._handler))
        # Shielded: a client that goes away while the endpoint starts must not cancel the
        # start for the requests waiting with it.
        handler = await asyncio.shield(self._handler)
        if handler is None or self._failed:
            await error_body(500, OPAQUE_ERROR)(scope, receive, send)
            return
        bank = scope.get("path_params", {}).get("bank")
        scope = dict(scope)
        scope["memwire.pinned_bank"] = bank
        await handler(scope, receive, send)


# -- routes ------------------------------------------------------------------------------------


def _bank(request: Request) -> str:
    bank: str = request.path_params["bank"]
    return bank


def _memory_id(request: Request) -> str:
    memory_id: str = request.path_params["memory_id"]
    return memory_id


async def _no_body(request: Request) -> None:
    """An action on one memory by its path (restore, purge) takes no body: one sent is refused
    rather than ignored, since it can only be a client's misunderstanding."""
    if (await request.body()).strip():
        raise InvalidInputError("this route takes no request body")


DOCS_INDEX = {
    "name": "memwire",
    "openapi": "/openapi.json",
    "web_page": "/",
    "health": "/health",
    "mcp": "/mcp (streamable HTTP; /mcp/{bank} pins a bank)",
    "docs": "docs/serving.md (HTTP and MCP) and docs/hosts.md (agent hosts) in the memwire "
    "source; the README's quick starts show curl and MCP calls",
}
HEALTH_PID = "X-Memwire-Pid"
HEALTH_STORE = "X-Memwire-Store"


def build_routes(
    memory: Memory,
    mcp: LazyMCP | None,
    store_id: str | None = None,
    requests_in_flight: Callable[[], int] | None = None,
    recall_lane: Lane | None = None,
) -> list[Route]:
    # /health answers "ok" and says who answers: the process and the store it serves
    # (memwire.locations.store_id, a hash), so `memwire daemon start` knows its own server
    # answered and the hooks know the server holds the store they would open themselves.
    identity = {HEALTH_PID: str(os.getpid())}
    if store_id is not None:
        identity[HEALTH_STORE] = store_id

    async def health(request: Request) -> Response:
        # Plain /health is liveness, answered on the event loop with no work at all (the
        # hooks and `daemon start` wait for exactly "ok"); ?details=1 is Memory.health().
        try:
            details = wants_details(request.query_params.get("details"))
        except InvalidInputError as exc:
            return error_response(exc)
        if not details:
            return PlainTextResponse("ok", headers=identity)
        report = await in_thread(ops.health_report, memory)
        status = 200 if report["status"] == "ok" else 503
        return JSONBody(report, status_code=status, headers=identity)

    async def openapi(request: Request) -> Any:
        from memwire.server.openapi import document

        return document()

    async def docs(request: Request) -> Any:
        # No Swagger page (it would load scripts from another origin): where to read instead.
        return DOCS_INDEX

    async def list_banks(request: Request) -> Any:
        return await in_thread(ops.banks, memory)

    async def drop_bank(request: Request) -> Any:
        return await in_thread(ops.delete_bank, memory, _bank(request))

    async def retain(request: Request) -> Any:
        body = await read_json(request)
        return await in_thread(ops.retain, memory, _bank(request), body)

    async def retain_conversation(request: Request) -> Any:
        body = await read_json(request)
        with batch_write():
            return await in_thread(ops.retain_conversation, memory, _bank(request), body)

    async def retain_many(request: Request) -> Any:
        body = await read_json(request)
        with batch_write():
            return await in_thread(ops.retain_many, memory, _bank(request), body)

    async def recall(request: Request) -> Any:
        body = await read_json(request)
        bank = _bank(request)
        loaded = memory.is_loaded(bank=bank)
        if loaded and alone(requests_in_flight):
            return ops.recall(memory, bank, body)  # no thread hop: see threads.alone
        # A bank in memory is recalled in the compute lane when there is one; loading a bank
        # (seconds at 100k) takes a general worker, so that it never holds the lane.
        return await in_thread(ops.recall, memory, bank, body, lane=recall_lane if loaded else None)

    async def reflect(request: Request) -> Any:
        body = await read_json(request)
        bank = _bank(request)
        lane = recall_lane if memory.is_loaded(bank=bank) else None  # as recall's
        return await in_thread(ops.reflect, memory, bank, body, lane=lane)

    async def config_get(request: Request) -> Any:
        return await in_thread(ops.config_get, memory, _bank(request))

    async def config_put(request: Request) -> Any:
        body = await read_json(request)
        return await in_thread(ops.config_put, memory, _bank(request), body)

    async def list_memories(request: Request) -> Any:
        page = ops.query_params(request.query_params, "memories")
        return await in_thread(ops.memories, memory, _bank(request), page["limit"], page["offset"])

    async def get_memory(request: Request) -> Any:
        return await in_thread(ops.get, memory, _bank(request), _memory_id(request))

    async def forget_memory(request: Request) -> Any:
        return await in_thread(ops.forget, memory, _bank(request), _memory_id(request))

    async def bank_stats(request: Request) -> Any:
        return await in_thread(ops.stats, memory, _bank(request))

    async def update_memory(request: Request) -> Any:
        body = ops.require_object(await read_json(request))
        if "id" in body:  # the id is the path's; a second one could only disagree with it
            raise InvalidInputError("unknown field 'id' for update; the memory id is in the path")
        body = {**body, "id": _memory_id(request)}
        return await in_thread(ops.update, memory, _bank(request), body)

    async def memory_history(request: Request) -> Any:
        return await in_thread(ops.history, memory, _bank(request), _memory_id(request))

    async def list_trash(request: Request) -> Any:
        page = ops.query_params(request.query_params, "trash")
        return await in_thread(ops.trash, memory, _bank(request), page["limit"], page["offset"])

    async def restore_memory(request: Request) -> Any:
        await _no_body(request)
        return await in_thread(ops.restore, memory, _bank(request), _memory_id(request))

    async def purge_memory(request: Request) -> Any:
        await _no_body(request)
        return await in_thread(ops.purge, memory, _bank(request), _memory_id(request))

    async def empty_trash(request: Request) -> Any:
        raw = await request.body()
        body = await read_json(request) if raw.strip() else {}
        return await in_thread(ops.empty_trash, memory, _bank(request), body)

    # Bank names may hold "/" (hooks name banks after a repository's owner/repo): the path
    # converter takes it whether the client sends it raw or percent-encoded (Starlette decodes
    # %2F before routing). The suffixes are fixed, so the match is unambiguous; the bare
    # DELETE /banks/{bank} route comes last so it never shadows a longer one. No route of a
    # method ends in a suffix another route of that method could take for a bank name
    # (memwire._text.clean_bank refuses the names ending in /memories or /memories/<name>):
    # so emptying the trash is POST .../trash/empty, not DELETE .../trash, which would take
    # DELETE of a bank named "owner/trash" for it.
    # Recall first: the router tries each route's pattern in turn, and recall is the route
    # asked most (an agent recalls on every prompt).
    routes = [
        Route("/banks/{bank:path}/recall", endpoint(recall), methods=["POST"]),
        Route("/health", health, methods=["GET"]),
        Route("/openapi.json", endpoint(openapi, query=True), methods=["GET"]),
        Route("/docs", endpoint(docs), methods=["GET"]),
        Route("/banks", endpoint(list_banks), methods=["GET"]),
        Route("/banks/{bank:path}/retain", endpoint(retain), methods=["POST"]),
        Route("/banks/{bank:path}/conversation", endpoint(retain_conversation), methods=["POST"]),
        Route("/banks/{bank:path}/retain_many", endpoint(retain_many), methods=["POST"]),
        Route("/banks/{bank:path}/reflect", endpoint(reflect), methods=["POST"]),
        Route("/banks/{bank:path}/config", endpoint(config_get), methods=["GET"]),
        Route("/banks/{bank:path}/config", endpoint(config_put), methods=["PUT"]),
        Route("/banks/{bank:path}/memories", endpoint(list_memories, query=True), methods=["GET"]),
        Route("/banks/{bank:path}/memories/{memory_id}", endpoint(get_memory), methods=["GET"]),
        Route(
            "/banks/{bank:path}/memories/{memory_id}", endpoint(forget_memory), methods=["DELETE"]
        ),
        Route(
            "/banks/{bank:path}/memories/{memory_id}", endpoint(update_memory), methods=["PATCH"]
        ),
        Route(
            "/banks/{bank:path}/memories/{memory_id}/history",
            endpoint(memory_history),
            methods=["GET"],
        ),
        Route(
            "/banks/{bank:path}/memories/{memory_id}/purge",
            endpoint(purge_memory),
            methods=["POST"],
        ),
        Route("/banks/{bank:path}/trash", endpoint(list_trash, query=True), methods=["GET"]),
        Route("/banks/{bank:path}/trash/empty", endpoint(empty_trash), methods=["POST"]),
        Route(
            "/banks/{bank:path}/trash/{memory_id}/restore",
            endpoint(restore_memory),
            methods=["POST"],
        ),
        Route("/banks/{bank:path}/stats", endpoint(bank_stats), methods=["GET"]),
        Route("/banks/{bank:path}", endpoint(drop_bank), methods=["DELETE"]),
    ]
    if mcp is not None:
        routes.append(Route("/mcp", mcp))
        routes.append(Route("/mcp/{bank:path}", mcp))
    return routes


async def _http_exception(request: Request, exc: Exception) -> Response:
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    message = {404: "no such route", 405: "method not allowed"}.get(status, "request refused")
    headers = dict(exc.headers or {}) if isinstance(exc, HTTPException) else None
    return error_body(status, message, headers=headers)


async def _server_error(request: Request, exc: Exception) -> Response:
    return error_response(exc)


TRIM_EVERY_S = 60.0


async def _trim_now_and_then() -> None:
    """Every minute, give the heap's freed memory back to the system (memwire._heap): requests
    on many worker threads leave freed memory in many glibc arenas, which a long-running
    server would otherwise keep (docs/BENCHMARKS.md, "Soak")."""
    from memwire import _heap

    while True:
        await asyncio.sleep(TRIM_EVERY_S)
        await in_thread(_heap.trim)


def _start_warm_up(warm_up: Callable[[], object]) -> asyncio.Future[None]:
    """Run ``warm_up`` in a thread of its own; the future is done when it has returned. A
    failure is only logged (the first request that needs what failed meets the same error and
    answers it). A thread of its own, not one of the workers (memwire.server.threads): it is
    not a request's call and holds no request's place."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def run() -> None:
        try:
            warm_up()
        except Exception as exc:
            log.warning("warming up failed: %s", type(exc).__name__)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(finish)

    threading.Thread(target=run, name="memwire-warm-up", daemon=True).start()
    return done


def create_app(
    memory: Memory,
    *,
    token: str | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    allowed_hosts: Iterable[str] | None = LOOPBACK_NAMES,
    mcp: bool = True,
    close_memory: bool = False,
    store_id: str | None = None,
    warm_up: Callable[[], object] | None = None,
    requests_in_flight: Callable[[], int] | None = None,
    recall_threads: int | None = None,
) -> ASGIApp:
    """The ASGI app serving ``memory``.

    ``token``: bearer token required on every route but ``/health`` (``None``: open).
    ``allowed_hosts``: ``Host`` names accepted, loopback names by default; ``None`` accepts any
    (use it with a token when binding a non-loopback address). ``close_memory``: close the
    store when the app shuts down (the server runner owns the store; tests may not).
    ``store_id``: :func:`memwire.locations.store_id` of the store, answered by ``/health``.
    ``warm_up``: run in a thread of its own once the app has started (the runner builds its
    Memory and loads the embedder there, so the server answers ``/health`` first).
    ``requests_in_flight``: how many requests the HTTP server is answering (the runner passes
    uvicorn's count). With it, a recall of a bank already loaded runs on the event loop instead
    of a worker thread when no other request needs the loop
    (:func:`memwire.server.threads.alone`); without it every recall runs on a worker thread.
    ``recall_threads``: recalls (and reflects) of banks already loaded run on a lane of that
    many threads of their own (:func:`memwire.server.threads.compute_lane`; the runner gives
    one per CPU but the event loop's on a local store) instead of the general workers; None:
    the general workers.
    """
    recall_lane = compute_lane(recall_threads) if recall_threads is not None else None
    lazy_mcp = LazyMCP(memory, max_body) if mcp else None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # Plain asyncio tasks, not an anyio task group: the server starts listening without
        # importing anyio's asyncio backend (~1 MiB; the first request that runs in a worker
        # thread imports it).
        trimming = asyncio.get_running_loop().create_task(_trim_now_and_then())
        warming = _start_warm_up(warm_up) if warm_up is not None else None
        if lazy_mcp is not None:
            lazy_mcp.open()
        try:
            yield
        finally:
            trimming.cancel()
            if lazy_mcp is not None:
                await lazy_mcp.close()
            if warming is not None:  # the Memory is not closed under a warm-up building it
                await warming
            await asyncio.wait([trimming])
            if close_memory:
                await in_thread(memory.close)

    app = Starlette(
        routes=build_routes(memory, lazy_mcp, store_id, requests_in_flight, recall_lane)
        + ui_routes(memory)
        + compat_routes(memory),
        lifespan=lifespan,
        exception_handlers={HTTPException: _http_exception, Exception: _server_error},
    )
    limited: ASGIApp = _CatchTooLarge(app, max_body)
    return Guard(limited, token=token, max_body=max_body, allowed_hosts=allowed_hosts)
