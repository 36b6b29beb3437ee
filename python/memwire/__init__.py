"""memwire: durable, offline, exact memory for AI agents.

The hot path runs in a Rust extension; a pure-Python kernel that ranks identically takes over
when the extension is unavailable. See :func:`backend_info`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memwire.errors import (
    ConflictError,
    InvalidInputError,
    MemwireError,
    NotFoundError,
    SnapshotError,
    StorageError,
    StorageFullError,
)

if TYPE_CHECKING:
    from memwire._kernel.backend import BackendInfo, backend_info
    from memwire.memory import Memory
    from memwire.records import Hit, Record

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    # The Memory API (and sqlite3 with it) and the kernel backend load on first use, keeping
    # `import memwire` light: `memwire hook`, run before every prompt, needs neither.
    if name in ("backend_info", "BackendInfo"):
        from memwire._kernel import backend

        return getattr(backend, name)
    if name == "Memory":
        from memwire.memory import Memory

        return Memory
    if name in ("Hit", "Record"):
        from memwire import records

        return getattr(records, name)
    raise AttributeError(f"module 'memwire' has no attribute {name!r}")


__all__ = [
    "BackendInfo",
    "ConflictError",
    "Hit",
    "InvalidInputError",
    "Memory",
    "MemwireError",
    "NotFoundError",
    "Record",
    "SnapshotError",
    "StorageError",
    "StorageFullError",
    "__version__",
    "backend_info",
]
