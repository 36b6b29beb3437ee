"""How a hook reaches the store: through a running server (HTTP) or in-process.

Choice, made once per hook run (:func:`open_client`):

- ``--url`` / ``$MEMWIRE_URL`` set to a URL: that server only. When it cannot be reached,
  writes go to the spool and reads return nothing (the hook never guesses which store the
  server uses).
- ``$MEMWIRE_URL`` set to ``off`` (or ``local``): in-process only, no network at all.
- Otherwise: the daemon's server (``<home>/server.pid``, written by ``memwire daemon
  start``), else the default server ``http://127.0.0.1:8888``, is tried: ``GET /health`` must
  answer exactly ``ok`` (so another program on that port is never mistaken for memwire) and
  name the store the hook would open itself (``--db``, else the default store; see
  :func:`memwire.locations.store_id`), so hooks and an MCP server started by the host always
  share one store. When no such server answers, the hook works in-process on that store.

HTTP uses the standard library only (a socket for ``http://``, see :func:`_exchange`), with
short timeouts; ``$MEMWIRE_TOKEN`` is sent as a bearer token when set.
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Protocol

from memwire.hooks.block import Entry

if TYPE_CHECKING:
    from memwire.memory import Memory

__all__ = [
    "DEFAULT_URL",
    "Client",
    "HTTPClient",
    "LocalClient",
    "Rejected",
    "Unavailable",
    "open_client",
]

DEFAULT_URL = "http://127.0.0.1:8888"
_OFF = {"off", "local", "none", "0", "false", "no"}


class Unavailable(Exception):
    """The store could not be reached or failed; the write should be spooled."""


class Rejected(Exception):
    """The store refused the write as invalid; retrying will not help."""


class Client(Protocol):
    kind: str

    def recall(
        self, bank: str, query: str, *, limit: int, budget: int, exclude_tags: Sequence[str]
    ) -> list[Entry]: ...

    def recent(self, bank: str, *, limit: int, exclude_tags: Sequence[str]) -> list[Entry]: ...

    def retain(self, bank: str, item: Mapping[str, Any]) -> str: ...

    def retain_many(self, bank: str, items: Sequence[Mapping[str, Any]]) -> list[str]: ...

    def close(self) -> None: ...


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            return None
        return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return None


def _excluded(tags: Any, exclude: Sequence[str]) -> bool:
    return isinstance(tags, (list, tuple)) and any(t in exclude for t in tags)


def _entry(row: Mapping[str, Any]) -> Entry:
    """An :class:`Entry` from a memory as the HTTP API answers it."""
    tags = row.get("tags")
    kept = tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else ()
    return Entry(str(row.get("id", "")), row["content"], _when(row.get("created_at")), kept)


MAX_ANSWER = 16 * 1024 * 1024


def _exchange(
    url: str, method: str, data: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request: ``(status, headers (lower-case names), body)``.

    Plain ``http://`` is spoken over a socket here: the hook runs before every prompt, and
    ``http.client``/``urllib.request`` cost more CPU to import (email parsing, ssl) than the
    whole exchange with a local server. ``https://`` goes through ``urllib.request``.
    Raises OSError (and TimeoutError) when the server cannot be reached, ValueError for an
    answer that is not HTTP."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme == "https":
        return _exchange_tls(url, method, data, headers, timeout)
    if parts.scheme != "http" or not parts.hostname:
        raise ValueError(f"not an http:// URL: {parts.scheme}://")
    import socket

    port = parts.port or 80
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}:{port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"Content-Length: {len(data or b'')}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (data or b"")
    chunks: list[bytes] = []
    size = 0
    with socket.create_connection((parts.hostname, port), timeout=timeout) as sock:
        sock.sendall(request)
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_ANSWER:
                raise ValueError("the answer is too large")
    return _parse_answer(b"".join(chunks))


def _parse_answer(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("an incomplete HTTP answer")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    words = status_line.split(" ", 2)
    if len(words) < 2 or not words[0].startswith("HTTP/") or not words[1].isdigit():
        raise ValueError("not an HTTP answer")
    headers: dict[str, str] = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    elif headers.get("content-length", "").isdigit():
        body = body[: int(headers["content-length"])]
    return int(words[1]), headers, body


def _unchunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, sep, rest = body.partition(b"\r\n")
        if not sep:
            raise ValueError("a broken chunked answer")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return bytes(out)


def _exchange_tls(
    url: str, method: str, data: bytes | None, headers: dict[str, str], timeout: float
) -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            found = {k.lower(): v for k, v in response.headers.items()}
            return int(response.status), found, response.read(MAX_ANSWER)
    except urllib.error.HTTPError as exc:
        return int(exc.code), {k.lower(): v for k, v in exc.headers.items()}, b""
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None


class HTTPClient:
    """The memwire HTTP API (``/banks/{bank}/...``)."""

    kind = "server"

    def __init__(self, url: str, *, timeout: float = 1.0, token: str | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.token = token
        self.last_headers: dict[str, str] = {}

    def _request(
        self, method: str, path: str, body: Any = None, timeout: float | None = None
    ) -> Any:
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        try:
            status, self.last_headers, raw = _exchange(
                self.url + path, method, data, headers, timeout or self.timeout
            )
        except (TimeoutError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise Unavailable(f"{type(reason).__name__}: {reason}") from None
        if status in (400, 409, 413, 422):
            raise Rejected(f"HTTP {status}")
        if status == 401:
            raise Unavailable(
                "HTTP 401: the server wants a token; give the hooks the server's token "
                "in MEMWIRE_TOKEN (memwire doctor shows this)"
            )
        if not 200 <= status < 300:
            raise Unavailable(f"HTTP {status}")
        if path == "/health":
            return raw.decode("utf-8", "replace")
        try:
            return json.loads(raw)
        except ValueError:
            raise Unavailable("the server answered something that is not JSON") from None

    def healthy(self, timeout: float) -> bool:
        """Does a memwire server answer ``/health`` with exactly ``ok``?"""
        return self.serves(timeout) is not None

    def serves(self, timeout: float) -> str | None:
        """The store id a healthy server names on ``/health`` (``""`` when it names none,
        None when no memwire server answers)."""
        try:
            if self._request("GET", "/health", timeout=timeout) != "ok":
                return None
        except (Unavailable, Rejected):
            return None
        return self.last_headers.get("x-memwire-store", "")

    @staticmethod
    def _bank(bank: str) -> str:
        return urllib.parse.quote(bank, safe="")

    def recall(
        self, bank: str, query: str, *, limit: int, budget: int, exclude_tags: Sequence[str]
    ) -> list[Entry]:
        body = {
            "query": query,
            "limit": limit,
            "budget": budget,
            "exclude_tags": list(exclude_tags),
            "format": "full",
        }
        try:
            hits = self._request("POST", f"/banks/{self._bank(bank)}/recall", body)
        except Rejected:
            return []
        out = []
        for hit in hits if isinstance(hits, list) else []:
            if isinstance(hit, dict) and isinstance(hit.get("content"), str):
                if _excluded(hit.get("tags"), exclude_tags):
                    continue
                out.append(_entry(hit))
        return out

    def recent(self, bank: str, *, limit: int, exclude_tags: Sequence[str]) -> list[Entry]:
        try:
            rows = self._request("GET", f"/banks/{self._bank(bank)}/memories?limit={limit}")
        except Rejected:
            return []
        out = []
        for row in rows if isinstance(rows, list) else []:
            if not isinstance(row, dict) or not isinstance(row.get("content"), str):
                continue
            if _excluded(row.get("tags"), exclude_tags):
                continue
            out.append(_entry(row))
        return out

    def retain(self, bank: str, item: Mapping[str, Any]) -> str:
        body = {k: v for k, v in item.items() if v is not None}
        answer = self._request("POST", f"/banks/{self._bank(bank)}/retain", body, timeout=5.0)
        return str(answer.get("id", "")) if isinstance(answer, dict) else ""

    def retain_many(self, bank: str, items: Sequence[Mapping[str, Any]]) -> list[str]:
        return [self.retain(bank, item) for item in items]

    def close(self) -> None:
        return None


class LocalClient:
    """The Memory API in this process, on the store file ``path`` (None: the default)."""

    kind = "local"

    def __init__(self, path: str | None = None) -> None:
        self.path = path
        self._memory: Memory | None = None

    def _open(self) -> Memory:
        if self._memory is None:
            from memwire.hooks._log import ensure_logging

            ensure_logging()  # the Memory API logs: to the hooks log, never to stderr
            from memwire.memory import Memory

            try:
                self._memory = Memory(self.path)
            except Exception as exc:
                raise Unavailable(f"the store could not be opened ({type(exc).__name__})") from None
        return self._memory

    def recall(
        self, bank: str, query: str, *, limit: int, budget: int, exclude_tags: Sequence[str]
    ) -> list[Entry]:
        from memwire.errors import InvalidInputError

        try:
            hits = self._open().recall(
                query, bank=bank, limit=limit, budget=budget, exclude_tags=list(exclude_tags)
            )
        except InvalidInputError:
            return []
        return [Entry(h.id, h.content, h.created_at, tuple(h.tags)) for h in hits]

    def recent(self, bank: str, *, limit: int, exclude_tags: Sequence[str]) -> list[Entry]:
        from memwire.errors import InvalidInputError

        try:
            rows = self._open().memories(bank=bank, limit=limit)
        except InvalidInputError:
            return []
        return [
            Entry(r.id, r.content, r.created_at, tuple(r.tags))
            for r in rows
            if not _excluded(list(r.tags), exclude_tags)
        ]

    def retain(self, bank: str, item: Mapping[str, Any]) -> str:
        return self.retain_many(bank, [item])[0]

    def retain_many(self, bank: str, items: Sequence[Mapping[str, Any]]) -> list[str]:
        from memwire.errors import InvalidInputError

        memory = self._open()
        try:
            return memory.retain_many([dict(i) for i in items], bank=bank)
        except InvalidInputError as exc:
            raise Rejected(str(exc)) from None
        except Exception as exc:
            raise Unavailable(f"the store failed ({type(exc).__name__})") from None

    def close(self) -> None:
        if self._memory is not None:
            memory, self._memory = self._memory, None
            memory.close()


def daemon_url() -> str | None:
    """The URL of the server ``memwire daemon start`` recorded in ``<home>/server.pid``."""
    from memwire.hooks import _paths

    try:
        record = json.loads((_paths.home() / "server.pid").read_text(encoding="utf-8"))
        host, port = record["host"], int(record["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(host, str):
        return None
    name = host.strip().strip("[]")
    name = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(name, name)
    return f"http://[{name}]:{port}" if ":" in name else f"http://{name}:{port}"


def open_client(
    url: str | None = None, db: str | None = None, *, probe_timeout: float = 0.25
) -> Client:
    """The client a hook should use; see the module docstring."""
    configured = url if url is not None else os.environ.get("MEMWIRE_URL")
    token = os.environ.get("MEMWIRE_TOKEN") or None
    if configured is not None and configured.strip():
        if configured.strip().lower() in _OFF:
            return LocalClient(db)
        return HTTPClient(configured.strip(), token=token)
    # The server only when it serves the very store this hook would open itself (a server
    # that names none predates store ids: trusted for the default store only).
    from memwire.locations import store_id

    candidate = HTTPClient(daemon_url() or DEFAULT_URL, token=token)
    served = candidate.serves(probe_timeout)
    if served is not None and (served == store_id(db) or (served == "" and db is None)):
        return candidate
    return LocalClient(db)
