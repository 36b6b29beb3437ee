"""Run a real memwire server in a background thread, for tests (yours and ours).

    with serve_in_thread(memory) as url:
        httpx.get(url + "/health")

The server listens on a free loopback port and stops (gracefully) when the block ends.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memwire.memory import Memory

__all__ = ["serve_in_thread"]


@contextmanager
def serve_in_thread(
    memory: Memory,
    *,
    token: str | None = None,
    host: str = "127.0.0.1",
    startup_timeout: float = 20.0,
    warm_up: Callable[[], object] | None = None,
    recall_threads: int | None = None,
) -> Iterator[str]:
    """Serve ``memory`` on ``host`` (a free port) while the block runs; yields the base URL.

    The caller keeps ownership of ``memory`` (the server does not close it).
    ``recall_threads``: see :func:`memwire.server.app.create_app` (None: recalls run on the
    general workers; ``memwire serve`` gives one per CPU but one on a local store).
    """
    from memwire.server.runner import make_server

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = make_server(
        memory,
        host=host,
        port=port,
        token=token,
        warm_up=warm_up,
        recall_threads=recall_threads,
    )
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="memwire-test-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
