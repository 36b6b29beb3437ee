"""Shared fixtures: every kernel test runs on both backends."""

from __future__ import annotations

import os

import memwire
import pytest
from backends import BACKENDS
from memwire._kernel.backend import load_kernel
from memwire._kernel.contract import Kernel


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"memwire {memwire.__version__} from {os.path.dirname(memwire.__file__)}",
        f"backend in use: {memwire.backend_info()}",
        f"kernels under test: {', '.join(BACKENDS)}",
    ]


@pytest.fixture(params=BACKENDS)
def kernel(request: pytest.FixtureRequest) -> Kernel:
    """Each backend's kernel module, one test run per backend."""
    return load_kernel(request.param)


@pytest.fixture(scope="session")
def both_kernels() -> tuple[Kernel, Kernel]:
    """(rust, python) for differential tests; skipped where the extension is not built."""
    if "rust" not in BACKENDS:
        pytest.skip("the Rust extension is not built")
    return load_kernel("rust"), load_kernel("python")
