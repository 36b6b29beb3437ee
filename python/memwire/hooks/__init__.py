"""Agent-host hooks: prompt-time recall and transcript capture that never loses a write.

``memwire hook <event>`` (see :mod:`memwire.hooks.events`) is what the agent hosts
(:mod:`memwire.hosts`) run at their lifecycle events; ``memwire connect``
(:mod:`memwire.connect`) writes those hook entries into their configs. :func:`hook_health` is
what ``memwire doctor`` shows about them: spool depth and the last failures.

Importing this package is cheap; nothing here loads a kernel or opens a store until a hook runs.
"""

from __future__ import annotations

from typing import Any

__all__ = ["drain", "hook_health", "resolve_bank", "run_hook"]


def run_hook(event: str, data: bytes | str, **options: Any) -> Any:
    """Run one hook event; see :func:`memwire.hooks.events.run_hook`."""
    from memwire.hooks.events import run_hook as _run

    return _run(event, data, **options)


def resolve_bank(cwd: str | None, explicit: str | None = None) -> str:
    """The bank for a working directory; see :mod:`memwire.project` (the rule every door
    follows)."""
    from memwire.project import resolve_bank as _resolve

    return _resolve(cwd, explicit)


def drain(url: str | None = None, db: str | None = None, budget: float = 30.0) -> dict[str, Any]:
    """Deliver the spooled writes now; ``{"delivered", "remaining", "store"}``."""
    from memwire.hooks import spool
    from memwire.hooks.client import open_client
    from memwire.hooks.events import drain_spool

    client = open_client(url, db)
    try:
        delivered = drain_spool(client, budget)
    finally:
        client.close()
    return {"delivered": delivered, "remaining": spool.depth()["items"], "store": client.kind}


def hook_health() -> dict[str, Any]:
    """What ``memwire doctor`` shows about the hooks (reads a few small files, no store).

    ``{"spool": {"items", "files", "bytes", "rejected"}, "spool_dir", "log",
    "last_failures": [{"at", "event", "error", "detail"}, ...] (newest last, at most 5),
    "status": "ok" | "warn"}``: ``warn`` when writes wait in the spool, some were rejected, or
    a failure was recorded in the last 24 hours.
    """
    import time

    from memwire.hooks import _log, _paths, spool

    depth = spool.depth()
    failures = _log.recent_failures(5)
    recent = False
    cutoff = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 86400))
    for failure in failures:
        at = failure.get("at")
        if isinstance(at, str) and at >= cutoff:
            recent = True
    status = "warn" if depth["items"] or depth["rejected"] or recent else "ok"
    return {
        "status": status,
        "spool": depth,
        "spool_dir": str(_paths.spool_dir()),
        "log": str(_paths.hooks_dir() / "hooks.log"),
        "last_failures": failures,
    }
