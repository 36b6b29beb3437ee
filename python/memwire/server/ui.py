"""The web page at ``/``: see and fix an agent's memory (docs/ui.md).

Four static files shipped in the package (``static/``: the page, its script, its stylesheet,
its icon), served with a strict Content-Security-Policy: scripts and styles from this origin
only, no inline code, no eval, no string-to-HTML sinks (Trusted Types), no frames, no other
origin. They hold no data, so they are the only paths besides ``/health`` served without the
token (:data:`PUBLIC_PATHS`); everything the page shows comes from the token-checked JSON API.

The page uses the ordinary routes (``/banks/{bank}/memories``, ``.../config``, ``DELETE``,
``PATCH`` and ``.../history`` of a memory, the trash's routes, ...) and a few of its own under
``/ui/api/`` for what those do not answer: banks with their counts and the backend in one
call, recall hits with their stream ranks and the floor they passed, memories per day, export
and import of a bank. Every one of them calls the Memory API the way the shared operations do
(:mod:`memwire.server.ops`), so a search here is the recall the agents get.
"""

from __future__ import annotations

import io
from collections import Counter
from functools import cache
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from memwire.config import DEFAULT_MIN_SCORE
from memwire.errors import InvalidInputError, NotFoundError
from memwire.server._deferred import Deferred

if TYPE_CHECKING:
    from memwire.memory import Memory
    from memwire.server import ops
else:
    ops = Deferred("memwire.server.ops")  # imported by the first request using it

__all__ = ["CSP", "MAX_DAY_SCAN", "PUBLIC_PATHS", "STATIC_FILES", "ui_routes"]

# Path -> (file in static/, media type). Nothing else is served from the package.
STATIC_FILES: dict[str, tuple[str, str]] = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/ui/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/ui/app.css": ("app.css", "text/css; charset=utf-8"),
    "/ui/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
PUBLIC_PATHS = frozenset(STATIC_FILES)
"""Paths served without the bearer token: the static page, which holds no data."""

CSP = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "trusted-types 'none'",
    ]
)
"""No inline script or style, no eval, nothing from another origin, no HTML from strings."""

SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-cache",
}

MAX_DAY_SCAN = 100_000
"""Memories per day are counted over at most this many of the newest memories of a bank."""
DAY_PAGE = 1000


@cache
def _static(name: str) -> bytes:
    from importlib import resources  # with the first page served, not at start

    return resources.files("memwire.server").joinpath("static", name).read_bytes()


def _require_json(request: Request) -> None:
    # The Origin guard already refuses other sites; a JSON content type also keeps every write
    # out of reach of an HTML form (which cannot send one without a CORS preflight).
    kind = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind != "application/json":
        raise InvalidInputError("send the body as application/json")


def _bank(request: Request) -> str:
    bank: str = request.path_params["bank"]
    return bank


# -- what the routes compute (blocking; run in a thread) ----------------------------------------


def overview(memory: Memory) -> dict[str, Any]:
    """The backend, and every bank with its count and dates."""
    from memwire import __version__
    from memwire._kernel.backend import backend_info

    info = backend_info()
    banks = []
    for name in memory.banks():
        try:
            found = ops.stats(memory, name)
        except Exception:  # a bank deleted meanwhile: leave it out
            continue
        banks.append(
            {
                "bank": name,
                "count": found["count"],
                "oldest": found["oldest"],
                "newest": found["newest"],
            }
        )
    return {
        "version": __version__,
        "backend": memory.backend,
        "fallback": memory.backend == "python",
        "reason": info.reason if info.name == memory.backend else "",
        "banks": banks,
    }


def recall_explained(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    """The recall an agent gets (same fields, same call), each hit with its stream ranks."""
    f = ops.read(body, "recall")
    hits = ops.recall_hits(memory, bank, f)
    try:
        config = memory.get_config(bank)
    except NotFoundError:  # no such bank yet: nothing was found either
        config = {}
    # The floor this recall applied, and where it came from (memory/relevance.py).
    if f["min_score"] is not None:
        floor, source = f["min_score"], "this search"
    elif config.get("min_score") is not None:
        floor, source = config["min_score"], "the bank's config"
    else:
        floor, source = DEFAULT_MIN_SCORE, "the default"
    return {
        "hits": [ops.jsonable(h) for h in hits],
        "min_score": f["min_score"],
        "bank_min_score": config.get("min_score"),
        "floor": floor,
        "floor_source": source,
        "fusion_weights": config.get("fusion_weights"),
    }


def per_day(memory: Memory, bank: str) -> dict[str, Any]:
    """Memories per UTC day of ``created_at`` over the newest :data:`MAX_DAY_SCAN`, and the
    tag counts."""
    stats = ops.stats(memory, bank)
    days: Counter[str] = Counter()
    seen = 0
    while seen < min(stats["count"], MAX_DAY_SCAN):
        page = memory.memories(bank=bank, limit=DAY_PAGE, offset=seen)
        if not page:
            break
        for record in page:
            days[record.created_at.date().isoformat()] += 1
        seen += len(page)
    return {
        "bank": bank,
        "count": stats["count"],
        "counted": seen,
        "days": sorted(days.items()),
        "tags": sorted(stats["tags"].items(), key=lambda kv: (-kv[1], kv[0])),
    }


def export_bank(memory: Memory, bank: str) -> str:
    out = io.StringIO()
    memory.export(out, bank=bank)
    return out.getvalue()


def import_bank(memory: Memory, bank: str, body: object) -> dict[str, Any]:
    fields = ops.require_object(body)
    data = fields.get("data")
    if not isinstance(data, str) or not data.strip():
        raise InvalidInputError("data must be the text of an export file (JSONL)")
    written = memory.import_(io.StringIO(data), bank=bank)
    return {"bank": bank, "imported": written}


# -- routes ------------------------------------------------------------------------------------


def ui_routes(memory: Memory) -> list[Route]:
    """The page's routes, mounted by :func:`memwire.server.app.create_app`."""
    from memwire.server.app import endpoint, read_json
    from memwire.server.threads import in_thread

    def static(path: str) -> Route:
        name, media_type = STATIC_FILES[path]

        async def serve(request: Request) -> Response:
            return Response(_static(name), media_type=media_type, headers=SECURITY_HEADERS)

        serve.__name__ = f"static_{name.replace('.', '_')}"
        return Route(path, serve, methods=["GET", "HEAD"])

    async def info(request: Request) -> Any:
        return await in_thread(overview, memory)

    async def recall(request: Request) -> Any:
        _require_json(request)
        body = await read_json(request)
        return await in_thread(recall_explained, memory, _bank(request), body)

    async def days(request: Request) -> Any:
        return await in_thread(per_day, memory, _bank(request))

    async def export(request: Request) -> Any:
        bank = _bank(request)
        text = await in_thread(export_bank, memory, bank)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in bank)[:64] or "bank"
        return Response(
            text,
            media_type="application/x-ndjson",
            headers={"Content-Disposition": f'attachment; filename="memwire-{safe}.jsonl"'},
        )

    async def import_(request: Request) -> Any:
        _require_json(request)
        body = await read_json(request)
        return await in_thread(import_bank, memory, _bank(request), body)

    return [
        *(static(path) for path in STATIC_FILES),
        Route("/ui/api/overview", endpoint(info), methods=["GET"]),
        Route("/ui/api/banks/{bank:path}/recall", endpoint(recall), methods=["POST"]),
        Route("/ui/api/banks/{bank:path}/days", endpoint(days), methods=["GET"]),
        Route("/ui/api/banks/{bank:path}/export", endpoint(export), methods=["GET"]),
        Route("/ui/api/banks/{bank:path}/import", endpoint(import_), methods=["POST"]),
    ]
