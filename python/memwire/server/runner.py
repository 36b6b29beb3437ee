"""Run the HTTP server with uvicorn: bind checks, graceful shutdown, the store closed last."""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from memwire.memory import Memory
    from memwire.store import Store

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "LazyMemory",
    "ServeFailed",
    "ServeRefused",
    "check_bind",
    "is_loopback",
    "make_server",
    "serve",
    "tune_threads",
]

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8888
GRACE_SECONDS = 10
# The server's GIL switch interval (CPython's default: 5 ms); see tune_threads.
SWITCH_INTERVAL_S = 0.001


class ServeRefused(Exception):
    """The server must not start as asked (e.g. a public address without a token)."""


class ServeFailed(Exception):
    """The server could not start (e.g. the port is in use)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ``::1``."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def tune_threads() -> None:
    """Shorten the interpreter's GIL switch interval for a serving process.

    A recall gives the GIL up and takes it back many times (each kernel call and each SQLite
    step releases it). Beside a CPU-bound thread, such as another client's ``retain_many``,
    every reacquisition waits until that thread is made to yield, up to the switch interval:
    with CPython's 5 ms a recall's p99 was 18-20x its p50 during a 10k-item write, 7-10x with
    1 ms, the write no slower (docs/BENCHMARKS.md, "Issue 18 on a quiet machine")."""
    sys.setswitchinterval(SWITCH_INTERVAL_S)


MIN_TOKEN_CHARS = 16


def check_bind(host: str, token: str | None) -> None:
    """Refuse a non-loopback bind without a bearer token, and any token too weak to guard."""
    if token is not None and token and len(token.strip()) < MIN_TOKEN_CHARS:
        raise ServeRefused(
            f"the token is too short: at least {MIN_TOKEN_CHARS} characters (not counting "
            "spaces); generate one with: python -c 'import secrets; print(secrets.token_urlsafe())'"
        )
    if not is_loopback(host) and not token:
        raise ServeRefused(
            f"refusing to listen on {host}, which is not a loopback address, without a token: "
            "pass --token or set MEMWIRE_TOKEN (clients send 'Authorization: Bearer <token>')"
        )


def _loopback_hosts(host: str) -> frozenset[str]:
    """The Host names a loopback server answers: the usual ones plus the address it is bound
    to (``--host 127.0.0.2`` must answer ``Host: 127.0.0.2``, not 421)."""
    from memwire.server.app import LOOPBACK_NAMES

    name = host.strip().lower()
    bound = {name}
    if ":" in name and not name.startswith("["):
        bound.add(f"[{name}]")  # IPv6 literals arrive bracketed in Host
    return frozenset(LOOPBACK_NAMES) | bound


_uvicorn_lock = threading.RLock()  # reentrant: completing the package may run under it


def _uvicorn_core() -> tuple[Any, Any]:
    """uvicorn's ``Config`` and ``Server`` classes, imported without the package's
    ``__init__``, which also imports its command line (click) and its reload and worker
    supervisors (multiprocessing): a tenth of the server's start-up and ~1 MiB that serving
    never uses. The package module stands in sys.modules with ``Config`` and ``Server`` set;
    any other attribute (``uvicorn.run``, ``uvicorn.__version__``) runs the real ``__init__``
    first, so whoever imports uvicorn later finds it whole."""
    with _uvicorn_lock:
        if "uvicorn" not in sys.modules:
            spec = importlib.util.find_spec("uvicorn")
            if spec is not None and spec.loader is not None and spec.submodule_search_locations:
                loader = spec.loader
                package = importlib.util.module_from_spec(spec)

                def complete(name: str) -> Any:
                    with _uvicorn_lock:
                        if "__getattr__" in vars(package):
                            del package.__getattr__
                            loader.exec_module(package)
                    return getattr(package, name)

                package.__getattr__ = complete  # type: ignore[method-assign]
                sys.modules["uvicorn"] = package
                try:
                    from uvicorn.config import Config
                    from uvicorn.server import Server
                except BaseException:
                    for name in [n for n in sys.modules if n.split(".")[0] == "uvicorn"]:
                        del sys.modules[name]
                    raise
                package.Config, package.Server = Config, Server  # type: ignore[attr-defined]
    from uvicorn.config import Config
    from uvicorn.server import Server

    return Config, Server


def _server_class() -> Any:
    _config, base = _uvicorn_core()

    class Server(base):  # type: ignore[misc,valid-type]
        """uvicorn's server, minus re-raising the signal after a graceful shutdown.

        uvicorn re-delivers SIGINT/SIGTERM once it has drained; memwire instead returns from
        :func:`serve` so the caller closes the store and exits 0.
        """

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            sigs = [signal.SIGINT, signal.SIGTERM]
            originals = {sig: signal.signal(sig, self.handle_exit) for sig in sigs}
            try:
                yield
            finally:
                for sig, handler in originals.items():
                    signal.signal(sig, handler)

    return Server


def recall_threads_for(location: str | os.PathLike[str]) -> int | None:
    """The threads ``memwire serve`` recalls banks in memory on, for the store at ``location``:
    :func:`memwire.server.threads.compute_threads` (one per CPU but the event loop's) when its
    reads are local (a recall then only computes: :func:`memwire.server.threads.compute_lane`);
    None, the general workers, on PostgreSQL, where each recall also waits on the network."""
    from memwire.server.threads import compute_threads
    from memwire.store import is_postgres_url

    return None if is_postgres_url(location) else compute_threads()


def make_server(
    memory: Memory,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    log_level: str = "warning",
    mcp: bool = True,
    store_id: str | None = None,
    warm_up: Callable[[], object] | None = None,
    recall_threads: int | None = None,
) -> Any:
    """A configured (not yet running) uvicorn server for ``memory``; ``store_id`` names its
    store on ``/health`` (:func:`memwire.locations.store_id`); ``warm_up`` and
    ``recall_threads``: see :func:`~memwire.server.app.create_app`."""
    from memwire.server.app import create_app

    check_bind(host, token)
    servers: list[Any] = []  # the one built below: the app asks it once requests come

    def requests_in_flight() -> int:
        # uvicorn keeps one task per request, from its headers to its response's end.
        return len(servers[0].server_state.tasks)

    app = create_app(
        memory,
        token=token,
        allowed_hosts=_loopback_hosts(host) if is_loopback(host) else None,
        mcp=mcp,
        store_id=store_id,
        warm_up=warm_up,
        requests_in_flight=requests_in_flight,
        recall_threads=recall_threads,
    )
    config_class, _server = _uvicorn_core()
    config = config_class(
        app,
        host=host,
        port=port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        loop="asyncio",  # uvloop is no dependency: "auto" would only look for it
        server_header=False,
        timeout_graceful_shutdown=GRACE_SECONDS,
        # httptools (a dependency: ~1 ms less CPU per request than h11) is picked up by
        # uvicorn's "auto"; uvloop would be too when present. No route speaks WebSocket:
        # "none" spares start-up the import of a WebSocket library.
        ws="none",
    )
    servers.append(_server_class()(config))
    return servers[0]


class LazyMemory:
    """The server's :class:`~memwire.memory.Memory`, built when first needed.

    Building a Memory imports the kernel and numpy (most of a server's start-up time and
    resident memory); ``/health`` and the routes that fail before touching the store need
    neither. The store is opened at start (so a bad location fails ``serve`` at once); the
    first route that needs the Memory builds it, in the worker thread running that route.
    Every attribute is the Memory's."""

    def __init__(self, store: Store, *, embedder: str | None = None) -> None:
        self._store = store
        self._embedder = embedder
        self._memory: Memory | None = None
        self._lock = threading.Lock()

    def built(self) -> Memory:
        """The Memory, built now if it was not yet (named so as not to shadow any of the
        Memory's own attributes, which this object forwards)."""
        with self._lock:
            if self._memory is None:
                from memwire.memory import Memory

                self._memory = Memory(store=self._store, embedder=self._embedder)
            return self._memory

    def __getattr__(self, name: str) -> Any:
        return getattr(self.built(), name)

    def is_loaded(self, *, bank: str = "default") -> bool:
        """:meth:`Memory.is_loaded <memwire.memory.Memory.is_loaded>`, False while the Memory
        is not built (asking never builds it: the event loop asks)."""
        memory = self._memory
        return memory is not None and memory.is_loaded(bank=bank)

    def warm_up(self) -> None:
        """Build the Memory and load its embedder (the server runs this in the background
        right after start, so that the first requests find them ready)."""
        _ = self.built().embedder_id

    def health_report(self) -> dict[str, Any]:
        """``/health?details=1`` (:func:`memwire.server.ops.health_report`), without building
        the Memory: before it is built no background work exists, and the store's loss check
        ran when it was opened."""
        from memwire.server.ops import shape_health
        from memwire.store.loss import store_loss

        with self._lock:
            memory = self._memory
        if memory is not None:
            return shape_health(memory.health(), loaded=True)
        loss = store_loss(self._store)
        unbuilt = {"ok": loss is None, "background": "not started", "loss": loss}
        return shape_health(unbuilt, loaded=False)

    def close(self) -> None:
        """Close the Memory (snapshots, then the store), or the store alone if never built."""
        with self._lock:
            if self._memory is not None:
                self._memory.close()
            else:
                self._store.close()


def serve(
    db: str | None = None,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    log_level: str = "warning",
    sock: socket.socket | None = None,
    embedder: str | None = None,
    warm: bool = False,
) -> None:
    """Serve the store at ``db`` (a location :func:`memwire.store.open_store` takes: a file, or
    a ``postgresql://`` URL) until SIGINT/SIGTERM, then drain and close it. ``embedder``: the
    embedder new banks take (a tier name; None: ``$MEMWIRE_EMBEDDER``, else ``static``); a tier
    that is not installed refuses to start (:class:`ServeRefused`, naming the install
    command). The Memory (kernel, numpy) and its embedder load with the first request that
    needs them, or, with ``warm``, in the background right after start."""
    check_bind(host, token)
    from memwire import _heap
    from memwire.locations import default_store
    from memwire.store import open_store

    _heap.tune_for_server()  # a long-running process: give freed memory back (memwire._heap)
    tune_threads()

    logging.basicConfig(level=logging.WARNING, format="memwire: %(levelname)s %(message)s")
    from memwire.config import default_tier
    from memwire.errors import InvalidInputError
    from memwire.locations import store_id

    try:
        tier = default_tier(embedder)
    except InvalidInputError as exc:
        raise ServeRefused(str(exc)) from None
    if tier == "minilm":
        # Refuse now, naming the install command; only this tier needs the check, and importing
        # memwire.embed loads numpy, which /health must not wait for (the Memory is lazy).
        from memwire.embed import tiers
        from memwire.embed.minilm import EmbedExtraMissing

        try:
            tiers.check_installed(tier)
        except EmbedExtraMissing as exc:
            raise ServeRefused(str(exc)) from None
    location = default_store() if db is None else db
    memory = LazyMemory(open_store(location), embedder=tier)
    try:
        server = make_server(
            cast("Memory", memory),
            host=host,
            port=port,
            token=token,
            log_level=log_level,
            store_id=store_id(db),
            warm_up=memory.warm_up if warm else None,
            recall_threads=recall_threads_for(location),
        )
        shown = f"[{host}]" if ":" in host else host
        print(f"memwire: serving http://{shown}:{port} (MCP at /mcp)", file=sys.stderr)
        try:
            server.run(sockets=[sock] if sock is not None else None)
        except SystemExit:  # uvicorn exits when it cannot bind or start the app
            server.started = False
        if not server.started:
            raise ServeFailed(f"could not listen on {host}:{port} (is the port in use?)")
    finally:
        memory.close()
    print("memwire: stopped; the store is closed", file=sys.stderr)
