"""The CLI tests run outside any git repository, so a command without ``--bank`` uses the
bank rule's last choice, ``default`` (in a checkout it would use the checkout's project)."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def outside_any_repository(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "cwd"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.delenv("MEMWIRE_BANK", raising=False)


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A store path in this test's folder, with the memwire home beside it."""
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "home"))
    return str(tmp_path / "memory.db")
