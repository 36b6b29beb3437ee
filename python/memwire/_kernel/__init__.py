"""The kernel: the hot half of memwire, written twice (docs/parity.md). Private.

:mod:`~memwire._kernel.backend` chooses the backend (the only importer of the compiled
``memwire._kernel._native``); :mod:`~memwire._kernel.contract` states the shape both backends
provide; :mod:`~memwire._kernel.pure` is the pure-Python kernel (fallback and reference
oracle); :mod:`~memwire._kernel.vectors` turns caller vectors into the kernel's int16 form.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memwire._kernel.backend import BackendInfo, backend_info, get_kernel, load_kernel

__all__ = ["BackendInfo", "backend_info", "get_kernel", "load_kernel"]


def __getattr__(name: str) -> Any:
    # The backend's names are imported when first asked for: a module that needs only the
    # contract's numbers (the store protocol's MAX_ORDINAL, on `memwire serve`'s path to its
    # first /health) does not pay for the backend's choice.
    if name in __all__:
        from memwire._kernel import backend

        return getattr(backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
