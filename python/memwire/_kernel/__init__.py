"""The kernel: the hot half of memwire, written twice (docs/parity.md). Private.

:mod:`~memwire._kernel.backend` chooses the backend (the only importer of the compiled
``memwire._kernel._native``); :mod:`~memwire._kernel.contract` states the shape both backends
provide; :mod:`~memwire._kernel.pure` is the pure-Python kernel (fallback and reference
oracle); :mod:`~memwire._kernel.vectors` turns caller vectors into the kernel's int16 form.
"""

from __future__ import annotations

from memwire._kernel.backend import BackendInfo, backend_info, get_kernel, load_kernel

__all__ = ["BackendInfo", "backend_info", "get_kernel", "load_kernel"]
