"""memwire: durable, offline, exact memory for AI agents.

The hot path runs in a Rust extension; a pure-Python kernel that ranks identically takes over
when the extension is unavailable. See :func:`backend_info`.
"""

from __future__ import annotations

from memwire._backend import BackendInfo, backend_info

__version__ = "0.1.0"

__all__ = ["BackendInfo", "__version__", "backend_info"]
