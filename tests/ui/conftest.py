"""Fixtures of the web page's tests: one seeded server and one browser for the session, and
screenshots when ``MEMWIRE_UI_SCREENSHOTS`` names a folder (see ui_support.py)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ui_support import Browser, Server, make_browser, need_browser, seed, start_server


@pytest.fixture(scope="session")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    need_browser()
    db = tmp_path_factory.mktemp("ui") / "memory.db"
    facts = seed(db)
    server = start_server(db)
    yield server, facts
    server.stop()


@pytest.fixture(scope="session")
def server(seeded: tuple[Server, dict[str, Any]]) -> Server:
    return seeded[0]


@pytest.fixture(scope="session")
def facts(seeded: tuple[Server, dict[str, Any]]) -> dict[str, Any]:
    return seeded[1]


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    found = make_browser(tmp_path_factory.mktemp("downloads"))
    yield found
    found.driver.quit()


@pytest.fixture
def screenshot(browser: Browser) -> Callable[[str], None]:
    """``screenshot("name")`` saves docs' PNG when MEMWIRE_UI_SCREENSHOTS names a folder."""

    def take(name: str) -> None:
        folder = os.environ.get("MEMWIRE_UI_SCREENSHOTS")
        if folder:
            Path(folder).mkdir(parents=True, exist_ok=True)
            browser.driver.save_screenshot(str(Path(folder) / f"{name}.png"))

    return take
