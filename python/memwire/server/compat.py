"""memory-wire's HTTP API under ``/mw``: its shapes and status codes over the same Memory.

A memory-wire client pointed at ``http://HOST:PORT/mw`` gets what memory-wire 0.7 answers
(tests/compat/ replays requests recorded from the real binary): ``reflect`` a bare JSON string,
``DELETE`` ``{"deleted": bool}`` (false on a repeat, never 404), ``stats``
``{memories, tags: <count>, oldest, newest}`` (zeros for an unknown bank), ``PUT config``
replacing the memory-wire config (404 for an unknown bank), the config keys
``recallMaxTokens`` / ``retainTags`` / ``ttl_days`` acting, tags lowercased, ``[]`` when no
memory shares a word with the query, errors as plain text (400 bad input, 409 an append
conflict, 422 a body of the wrong shape), and unknown fields ignored, as memory-wire does.

Why a prefix and not a server flag: one server then answers memwire and memory-wire clients at
once over one store, so moving a fleet of hooks over is a URL change per client with no restart
and no mode to get wrong; the native routes keep their richer shapes and strict checks.

Every write goes through :class:`~memwire.Memory` (validation, NFKC, redaction, dedupe), so
the rules of the native doors hold here too. Documented differences: docs/compat.md.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from memwire import config
from memwire.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    StorageFullError,
    StoreUnavailableError,
)
from memwire.server._deferred import Deferred
from memwire.server.threads import in_thread

if TYPE_CHECKING:
    from memwire.memory import Memory
    from memwire.records import Hit
    from memwire.server import ops
else:
    ops = Deferred("memwire.server.ops")  # imported by the first request using it

__all__ = ["PREFIX", "compat_routes"]

log = logging.getLogger("memwire.server")

PREFIX = "/mw"
RECALL_LIMIT = 100
"""memory-wire has no ``limit``: it answers up to 100 hits, the client takes the first k."""
PAGE_LIMIT = 50
"""memory-wire's default page of ``GET .../memories`` (it has no maximum)."""


class Refused(Exception):
    """A memory-wire error answer: a status and a plain-text reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


# -- reading requests, as memory-wire's extractors do ------------------------------------------


def _shape(message: str) -> Refused:
    return Refused(422, f"Failed to deserialize the JSON body into the target type: {message}")


async def _json_value(request: Request) -> Any:
    """The JSON body: 415 without a JSON content type, 400 for bad JSON."""
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise Refused(415, "Expected request with `Content-Type: application/json`")
    raw = await request.body()
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise Refused(400, f"Failed to parse the request body as JSON: {exc}") from None


async def _body(request: Request) -> Mapping[str, Any]:
    """The JSON object of the body; 422 for JSON that is not an object."""
    value = await _json_value(request)
    if not isinstance(value, dict):
        raise _shape(f"expected a JSON object, got {ops._type_name(value)}")
    return value


def _string(body: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise _shape(f"missing field `{name}`")
        return None
    if not isinstance(value, str):
        raise _shape(f"{name}: invalid type: {ops._type_name(value)}, expected a string")
    return value


def _strings(body: Mapping[str, Any], name: str) -> list[str] | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _shape(
            f"{name}: invalid type: {ops._type_name(value)}, expected a sequence of strings"
        )
    return value


def _lower(tags: list[str] | None) -> list[str] | None:
    """memory-wire stores and filters tags lowercased."""
    return None if tags is None else [t.lower() for t in tags]


def _count(value: str | None, name: str, default: int) -> int:
    """A query-string integer >= 0 (memory-wire's are unsigned)."""
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()):
        raise Refused(400, f"Failed to deserialize query string: {name}: invalid digit")
    return int(value)


def _time(value: _dt.datetime | None) -> str | None:
    """memory-wire's timestamps: RFC 3339, UTC, milliseconds, ``Z``."""
    if value is None:
        return None
    utc = value.astimezone(_dt.timezone.utc)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


# -- operations (blocking; run in a thread) ----------------------------------------------------


def _retain(memory: Memory, bank: str, body: Mapping[str, Any]) -> dict[str, Any]:
    content = _string(body, "content", required=True)
    mode = _string(body, "update_mode")
    memory_id = memory.retain(
        content or "",
        bank=bank,
        tags=_lower(_strings(body, "tags")) or (),
        context=_string(body, "context"),
        document_id=_string(body, "document_id"),
        update_mode="replace" if mode is None else mode,
    )
    return {"id": memory_id}


def _lexical(memory: Memory, bank: str, body: Mapping[str, Any]) -> list[Hit]:
    """Recall as memory-wire ranks it: its engine is lexical, so a hit that shares no word
    with the query (a dense-only neighbour) is not an answer there, and nothing matching is
    ``[]``. A blank query or a zero budget finds nothing, as there."""
    query = _string(body, "query", required=True) or ""
    budget = body.get("budget")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 0
    ):
        raise _shape(f"budget: invalid value: {budget!r}, expected an unsigned integer")
    tags = _lower(_strings(body, "tags"))
    avoid = _lower(_strings(body, "exclude_tags"))
    if not query.strip() or budget == 0:
        return []
    hits = memory.recall(
        query,
        bank=bank,
        limit=RECALL_LIMIT,
        budget=None if budget is None else min(budget, config.MAX_RECALL_TOKENS),
        tags=tags,
        exclude_tags=avoid,
    )
    return [h for h in hits if h.bm25_rank or h.overlap_rank]


def _recall(memory: Memory, bank: str, body: Mapping[str, Any]) -> list[Any]:
    hits = _lexical(memory, bank, body)
    if body.get("format") == "full":
        return [{"content": h.content, "id": h.id, "score": h.score} for h in hits]
    return [h.content for h in hits]


def _reflect(memory: Memory, bank: str, body: Mapping[str, Any]) -> str:
    query = _string(body, "query", required=True) or ""
    if not query.strip():
        return "no relevant memories"
    if not _lexical(memory, bank, {"query": query}):
        return "no relevant memories"
    return memory.reflect(query, bank=bank)


def _config_get(memory: Memory, bank: str) -> dict[str, Any]:
    try:
        return config.to_memory_wire(memory.get_config(bank))
    except NotFoundError:
        raise Refused(404, "unknown bank") from None


def _config_put(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """Replace the bank's memory-wire config (memory-wire's PUT replaces, and answers 404 for
    a bank that does not exist). Its acting keys become memwire's; memwire-only keys
    (fusion_weights, min_score, ...) are left as they are."""
    if not isinstance(body, dict):
        raise Refused(400, "invalid bank config")
    try:
        memory.get_config(bank)
    except NotFoundError:
        raise Refused(404, "unknown bank") from None
    update = config.from_memory_wire(body)
    memory.set_config(bank, update)
    return body


def _memories(memory: Memory, bank: str, limit: int, offset: int) -> tuple[list[Any], int]:
    """A page oldest first, as memory-wire lists (memwire pages newest first), and the total."""
    from memwire.memory.api import MAX_LIST_LIMIT

    try:
        total = int(memory.stats(bank=bank)["count"])
    except NotFoundError:
        return [], 0
    end = min(total, offset + limit)
    page: list[Any] = []
    # oldest-first [offset, end) is newest-first [total - end, total - offset), reversed
    start = total - end
    while start < total - offset:
        count = min(MAX_LIST_LIMIT, total - offset - start)
        page.extend(memory.memories(bank=bank, limit=count, offset=start))
        start += count
    return [_record(r) for r in reversed(page)], total


def _record(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"content": record.content}
    if record.context is not None:
        out["context"] = record.context
    out["created_at"] = _time(record.created_at)
    out["id"] = record.id
    return out


def _get(memory: Memory, bank: str, memory_id: str) -> dict[str, Any]:
    try:
        found = memory.get(memory_id, bank=bank)
    except (NotFoundError, InvalidInputError):
        raise Refused(404, "unknown memory") from None
    # memory-wire has no history nor trash: a superseded or trashed memory is gone to it.
    if getattr(found, "status", "live") != "live":
        raise Refused(404, "unknown memory")
    return _record(found)


def _delete(memory: Memory, bank: str, memory_id: str) -> dict[str, Any]:
    try:
        return {"deleted": memory.forget(memory_id, bank=bank)}
    except InvalidInputError:  # not an id memwire could have given: nothing to delete
        return {"deleted": False}


def _stats(memory: Memory, bank: str) -> dict[str, Any]:
    try:
        found = memory.stats(bank=bank)
    except NotFoundError:
        return {"memories": 0, "tags": 0, "oldest": None, "newest": None}
    return {
        "memories": found["count"],
        "tags": len(found["tags"]),
        "oldest": _time(found["oldest"]),
        "newest": _time(found["newest"]),
    }


# -- routes ------------------------------------------------------------------------------------


def _json(value: Any, headers: dict[str, str] | None = None) -> Response:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return Response(text.encode("utf-8", "surrogatepass"), 200, headers, "application/json")


def _refusal(exc: BaseException) -> Response:
    """memory-wire's error answers are plain text."""
    if isinstance(exc, Refused):
        status, reason = exc.status, str(exc)
    elif isinstance(exc, NotFoundError):
        status, reason = 404, str(exc)
    elif isinstance(exc, ConflictError):
        status, reason = 409, str(exc)
    elif isinstance(exc, InvalidInputError):
        status, reason = 400, str(exc)
    elif isinstance(exc, StoreUnavailableError):
        status, reason = 503, "the store's database cannot be reached; retry"
    elif isinstance(exc, StorageFullError):
        status, reason = 507, str(exc)
    else:
        log.error("memory-wire route failed: %s", type(exc).__name__, exc_info=exc)
        status, reason = 500, "internal error"
    return PlainTextResponse(reason, status)


Work = Callable[[Request], Awaitable[Response]]


def _guarded(work: Work) -> Work:
    async def run(request: Request) -> Response:
        try:
            return await work(request)
        except Exception as exc:
            return _refusal(exc)

    return run


def compat_routes(memory: Memory) -> list[Route]:
    """The ``/mw`` routes answering memory-wire clients over ``memory``."""

    async def call(fn: Callable[..., Any], *args: Any) -> Any:
        return await in_thread(fn, memory, *args)

    def bank(request: Request) -> str:
        name: str = request.path_params["bank"]
        return name

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def retain(request: Request) -> Response:
        return _json(await call(_retain, bank(request), await _body(request)))

    async def recall(request: Request) -> Response:
        return _json(await call(_recall, bank(request), await _body(request)))

    async def reflect(request: Request) -> Response:
        return _json(await call(_reflect, bank(request), await _body(request)))

    async def config_get(request: Request) -> Response:
        return _json(await call(_config_get, bank(request)))

    async def config_put(request: Request) -> Response:
        return _json(await call(_config_put, bank(request), await _json_value(request)))

    async def memories(request: Request) -> Response:
        limit = _count(request.query_params.get("limit"), "limit", PAGE_LIMIT)
        offset = _count(request.query_params.get("offset"), "offset", 0)
        page, total = await call(_memories, bank(request), limit, offset)
        return _json(page, {"x-total-count": str(total)})

    async def get_memory(request: Request) -> Response:
        return _json(await call(_get, bank(request), request.path_params["memory_id"]))

    async def delete_memory(request: Request) -> Response:
        return _json(await call(_delete, bank(request), request.path_params["memory_id"]))

    async def stats(request: Request) -> Response:
        return _json(await call(_stats, bank(request)))

    b = PREFIX + "/banks/{bank:path}"
    table: list[tuple[str, Work, str]] = [
        (PREFIX + "/health", health, "GET"),
        (b + "/retain", retain, "POST"),
        (b + "/recall", recall, "POST"),
        (b + "/reflect", reflect, "POST"),
        (b + "/config", config_get, "GET"),
        (b + "/config", config_put, "PUT"),
        (b + "/memories", memories, "GET"),
        (b + "/memories/{memory_id}", get_memory, "GET"),
        (b + "/memories/{memory_id}", delete_memory, "DELETE"),
        (b + "/stats", stats, "GET"),
    ]
    return [Route(path, _guarded(work), methods=[method]) for path, work, method in table]
