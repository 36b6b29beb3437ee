"""A tiny loopback HTTP probe for ``daemon`` and ``doctor`` (standard library only)."""

from __future__ import annotations

import http.client

__all__ = ["health", "probe_host", "url_of"]


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


def health(host: str, port: int, timeout: float = 1.0) -> tuple[bool, str]:
    """(answers ``ok``?, what happened) for ``GET /health``."""
    conn = http.client.HTTPConnection(probe_host(host), port, timeout=timeout)
    try:
        conn.request("GET", "/health")
        response = conn.getresponse()
        body = response.read(64)
    except (OSError, http.client.HTTPException) as exc:
        return False, f"no answer ({type(exc).__name__}: {exc})"
    finally:
        conn.close()
    if response.status == 200 and body == b"ok":
        return True, "answers ok"
    return False, f"answers HTTP {response.status}, not a memwire health check"
