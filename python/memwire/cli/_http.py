"""A tiny loopback HTTP probe for ``daemon`` and ``doctor`` (standard library only)."""

from __future__ import annotations

import http.client
from dataclasses import dataclass

__all__ = ["Health", "access", "health", "probe", "probe_host", "url_of"]


def probe_host(host: str) -> str:
    """Where to reach a server bound to ``host``: a wildcard bind is probed on loopback."""
    name = host.strip().strip("[]")
    if name in ("", "0.0.0.0"):
        return "127.0.0.1"
    if name == "::":
        return "::1"
    return name


def url_of(host: str, port: int) -> str:
    name = probe_host(host)
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


@dataclass(frozen=True)
class Health:
    """What ``GET /health`` said: a memwire server answers ``ok`` and names its process and
    store (``X-Memwire-Pid``, ``X-Memwire-Store``; empty when it does not)."""

    ok: bool
    detail: str
    pid: int | None = None
    store: str = ""


def _get(
    host: str, port: int, path: str, timeout: float, token: str | None = None
) -> tuple[int, bytes, dict[str, str]] | str:
    """``(status, body start, headers)``, or what went wrong."""
    conn = http.client.HTTPConnection(probe_host(host), port, timeout=timeout)
    try:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        body = response.read(64)
        found = {k.lower(): v for k, v in response.getheaders()}
    except (OSError, http.client.HTTPException) as exc:
        return f"no answer ({type(exc).__name__}: {exc})"
    finally:
        conn.close()
    return response.status, body, found


def probe(host: str, port: int, timeout: float = 1.0) -> Health:
    """``GET /health`` and who answered it."""
    answer = _get(host, port, "/health", timeout)
    if isinstance(answer, str):
        return Health(False, answer)
    status, body, headers = answer
    if status != 200 or body != b"ok":
        return Health(False, f"answers HTTP {status}, not a memwire health check")
    pid_text = headers.get("x-memwire-pid", "")
    pid = int(pid_text) if pid_text.isdigit() else None
    return Health(True, "answers ok", pid, headers.get("x-memwire-store", ""))


def health(host: str, port: int, timeout: float = 1.0) -> tuple[bool, str]:
    """(answers ``ok``?, what happened) for ``GET /health``."""
    found = probe(host, port, timeout)
    return found.ok, found.detail


def access(host: str, port: int, token: str | None, timeout: float = 1.0) -> int | str:
    """The HTTP status ``GET /banks`` gets with ``token`` (what the hooks would send): 200
    when they may read, 401 when the server wants another token; or what went wrong."""
    answer = _get(host, port, "/banks", timeout, token)
    return answer if isinstance(answer, str) else answer[0]
