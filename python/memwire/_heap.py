"""Giving freed heap memory back to the system (glibc's ``malloc_trim``).

glibc keeps memory that was freed inside its arenas for reuse instead of returning it. A
long-running server frees large transients (an index snapshot being encoded, a graph being
built, SQLite page caches of short-lived connections) from many threads, each allocating in its
own arena, so its resident size climbs far above what it uses: the soak benchmark measured
~120 MiB in use beside ~250 MiB freed but kept after two minutes (docs/BENCHMARKS.md, "Soak").
``malloc_trim(0)`` returns the free pages of every arena. Elsewhere (musl, macOS, Windows) this
is a no-op: their allocators return memory on their own terms."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable

__all__ = ["trim"]

_lock = threading.Lock()
_loaded = False
_malloc_trim: Callable[[int], int] | None = None


def _load() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only when first needed: ctypes costs start-up time

    try:
        function = ctypes.CDLL(None).malloc_trim  # this process's own C library
    except (OSError, AttributeError):  # musl has no malloc_trim
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    found: Callable[[int], int] = function
    return found


def trim() -> bool:
    """Return freed heap memory to the system; True if some was (always False off glibc).
    Takes each arena's lock briefly: call it after large transient work, not per request."""
    global _loaded, _malloc_trim
    with _lock:
        if not _loaded:
            _malloc_trim, _loaded = _load(), True
        function = _malloc_trim
    return function is not None and bool(function(0))
