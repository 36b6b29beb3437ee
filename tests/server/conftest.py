"""A real memwire server on a free loopback port, driven by a real HTTP client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    with Memory(tmp_path / "memory.db") as mem:
        yield mem


@pytest.fixture
def base_url(memory: Memory) -> Iterator[str]:
    with serve_in_thread(memory) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=30) as http:
        yield http
