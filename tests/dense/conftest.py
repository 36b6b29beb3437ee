"""Fixtures of the dense-stream tests: each runs on every kernel backend available."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))

from backends import require
from dense_support import DENSE_BACKENDS, RUST_SKIP
from memwire.memory import Memory


def pytest_report_header() -> str:
    note = f" ({RUST_SKIP})" if RUST_SKIP else ""
    return f"memwire dense tests on backends: {', '.join(DENSE_BACKENDS)}{note}"


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    return require(request.param)


@pytest.fixture(params=["rust", "python"])
def any_backend(request: pytest.FixtureRequest) -> str:
    """A backend for tests that use only user embedders (the same set as ``backend``)."""
    return require(request.param)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(db_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(db_path, backend=backend) as memory:
        yield memory
