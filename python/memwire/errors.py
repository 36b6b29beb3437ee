"""The one exception hierarchy of memwire, raised by both kernels and every layer above them.

Catch :class:`MemwireError` for anything memwire raises on purpose. Invalid input is also a
:class:`ValueError` and a missing memory or bank also a :class:`LookupError`, so code that does
not know memwire still handles them sensibly. Storage failures are opaque: their message never
echoes SQL, file paths or tracebacks.
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "ConflictError",
    "HnswError",
    "InvalidInputError",
    "MemwireError",
    "NotFoundError",
    "SnapshotError",
    "StorageError",
    "StorageFullError",
    "StoreUnavailableError",
]


class MemwireError(Exception):
    """Base class of every error memwire raises on purpose."""


class InvalidInputError(MemwireError, ValueError):
    """An argument was rejected; nothing was changed."""


class NotFoundError(MemwireError, LookupError):
    """The memory or bank named does not exist."""


class ConflictError(MemwireError):
    """The request conflicts with the stored state, nothing was changed: a second memory for a
    document in ``append`` mode, or a re-encoding that another process finished, discarded or
    replaced meanwhile. Retrying the same request gives the same answer until the state
    changes (HTTP 409, an MCP tool error, CLI exit code 6)."""


class StorageError(MemwireError):
    """The store failed; the message is deliberately opaque."""


class StoreUnavailableError(StorageError):
    """The store's database cannot be reached (a networked store whose server is down or cut
    off). Nothing was written unless the message says the outcome is unknown; retry later, the
    store reconnects by itself (HTTP 503)."""


class StorageFullError(StorageError):
    """The disk holding the store is full, or failed a read or write (an I/O error); the
    message says which. The transaction was rolled back: nothing of it was written, and nothing
    acknowledged before it is lost. Free space (or fix the disk) and retry: the store resets
    its connections and recovers without a restart (HTTP 507, an MCP tool error, CLI exit
    code 7)."""


class SnapshotError(MemwireError):
    """An index snapshot could not be read (corrupt, foreign or from another version)."""


class HnswError(MemwireError, RuntimeError):
    """The HNSW library failed to create, build, search or save a dense graph (in practice: out
    of memory). Not the caller's fault and not a damaged snapshot; the index is unchanged, and a
    graph that failed to build leaves the dense search to the sign scan (docs/dense.md)."""


class BackendError(MemwireError, ImportError):
    """The kernel backend asked for (``MEMWIRE_BACKEND``) cannot be used."""
