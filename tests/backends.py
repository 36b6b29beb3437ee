"""Which kernel backends this test run covers; shared by every conftest and support module.

Python is always there. Rust is there when the extension ``memwire._kernel._native`` loads; a build
that must have it (``MEMWIRE_REQUIRE_RUST=1``, as ``make test`` sets) fails instead of
quietly testing Python alone.
"""

from __future__ import annotations

import os

import pytest
from memwire._kernel.backend import load_kernel
from memwire.errors import BackendError

RUST_MISSING = "the Rust extension memwire._kernel._native is not built"


def available_backends() -> list[str]:
    names = ["python"]
    try:
        load_kernel("rust")
    except BackendError:
        if os.environ.get("MEMWIRE_REQUIRE_RUST") == "1":
            raise
    else:
        names.insert(0, "rust")
    return names


BACKENDS = available_backends()


def require(name: str) -> str:
    """``name`` if this run has that backend, else skip the test that asked for it."""
    if name not in BACKENDS:
        pytest.skip(RUST_MISSING if name == "rust" else f"the {name} backend is not available")
    return name
