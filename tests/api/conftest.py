"""Fixtures of the Memory API tests: every test runs on each kernel backend available."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_support import BACKENDS
from backends import require
from memwire.memory import Memory


def pytest_report_header() -> str:
    return f"memwire API tests on backends: {', '.join(BACKENDS)}"


@pytest.fixture(params=["rust", "python"])
def backend(request: pytest.FixtureRequest) -> str:
    return require(request.param)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def mem(db_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(db_path, backend=backend) as memory:
        yield memory
