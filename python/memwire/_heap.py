"""Giving freed heap memory back to the system (glibc's ``malloc_trim``).

glibc keeps memory that was freed inside its arenas for reuse instead of returning it. A
long-running server frees large transients (an index snapshot being encoded, a graph being
built, SQLite page caches of short-lived connections) from many threads, each allocating in its
own arena, so its resident size climbs far above what it uses: the soak benchmark measured
~120 MiB in use beside ~250 MiB freed but kept after two minutes (docs/BENCHMARKS.md, "Soak").
``malloc_trim(0)`` returns the free pages of every arena's bins. It cannot reach the free top of
a thread's arena, which glibc shrinks only past a trim threshold that it raises (to twice its
mmap threshold, up to 64 MiB) once a large mmapped block is freed; a server therefore also fixes
the mmap threshold (:func:`tune_for_server`), which turns that adjustment off: blocks of 1 MiB
and more are mmapped and unmapped when freed, and arena tops are trimmed past 128 KiB again.
Elsewhere (musl, macOS, Windows) both are no-ops: their allocators return memory on their own
terms."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable

__all__ = ["MMAP_THRESHOLD", "trim", "tune_for_server"]

MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (glibc malloc.h)

_lock = threading.Lock()
_loaded = False
_malloc_trim: Callable[[int], int] | None = None


def _libc_function(name: str, arguments: int) -> Callable[..., int] | None:
    """glibc's ``name`` (taking ``arguments`` integers), or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes  # only when first needed: ctypes costs start-up time

    try:
        function = getattr(ctypes.CDLL(None), name)  # this process's own C library
    except (OSError, AttributeError):  # musl has neither malloc_trim nor mallopt's knobs
        return None
    function.argtypes = [ctypes.c_size_t if name == "malloc_trim" else ctypes.c_int] * arguments
    function.restype = ctypes.c_int
    found: Callable[..., int] = function
    return found


def tune_for_server() -> bool:
    """Fix glibc's mmap threshold at :data:`MMAP_THRESHOLD` for a long-running process (see
    above); True if set. Affects the whole process: only ``memwire serve`` and ``memwire mcp``
    call it, never the library on import (its host's allocator is its host's business)."""
    if platform_libc() != "glibc":
        return False
    mallopt = _libc_function("mallopt", 2)
    return mallopt is not None and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def platform_libc() -> str:
    """``"glibc"`` when this process runs on glibc, else ``""``."""
    if not sys.platform.startswith("linux"):
        return ""
    try:
        version = os.confstr("CS_GNU_LIBC_VERSION") or ""
    except (ValueError, OSError):  # musl does not know the name
        return ""
    return "glibc" if version.startswith("glibc") else ""


def trim() -> bool:
    """Return freed heap memory to the system; True if some was (always False off glibc).
    Takes each arena's lock briefly: call it after large transient work, not per request."""
    global _loaded, _malloc_trim
    with _lock:
        if not _loaded:
            _malloc_trim, _loaded = _libc_function("malloc_trim", 1), True
        function = _malloc_trim
    return function is not None and bool(function(0))
