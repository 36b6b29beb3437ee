"""memwire's HTTP server (Starlette on uvicorn): ``memwire serve`` / ``python -m memwire serve``.

Importing this package is cheap: :func:`create_app` and :func:`serve` import the web stack
when called, so the CLI's other commands never load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from starlette.types import ASGIApp

    from memwire.memory import Memory

__all__ = ["create_app", "serve"]


def create_app(memory: Memory, **options: Any) -> ASGIApp:
    """The ASGI app serving ``memory``; see :func:`memwire.server.app.create_app`."""
    from memwire.server.app import create_app as _create_app

    return _create_app(memory, **options)


def serve(db: str | None = None, **options: Any) -> None:
    """Serve the store at ``db``; see :func:`memwire.server.runner.serve`."""
    from memwire.server.runner import serve as _serve

    _serve(db, **options)
