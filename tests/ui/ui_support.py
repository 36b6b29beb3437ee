"""Helpers of the web page's tests (the fixtures are in conftest.py): Debian's headless
Chromium driven by selenium, against a real ``python -m memwire serve`` child on a scratch
store and a free loopback port.

No browser is downloaded: the system ``chromium`` and ``chromedriver`` are used, named
explicitly so selenium's driver manager never runs. Without them the browser tests skip,
except when ``MEMWIRE_REQUIRE_BROWSER=1`` (set by scripts/ci/chromium.sh for CI), where a
missing browser fails them.

``MEMWIRE_UI_SCREENSHOTS=DIR`` makes the tests save the screenshots docs/ui.md shows into DIR.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import memwire
import pytest

BIG_BANK = "alpha"
BIG_COUNT = 1000
SMALL_BANK = "team/repo"
START = datetime(2026, 10, 1, 9, 0, tzinfo=timezone.utc)
WORDS = ["kettle", "harbor", "violet", "ledger", "cobalt", "meadow", "quartz", "saddle"]


def browser_paths() -> tuple[str, str] | None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        return None
    try:
        import selenium  # noqa: F401
    except ImportError:
        return None
    return chromium, driver


def need_browser() -> tuple[str, str]:
    found = browser_paths()
    if found is None:
        why = "chromium, chromedriver and selenium are needed for the browser tests"
        if os.environ.get("MEMWIRE_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{why} (MEMWIRE_REQUIRE_BROWSER=1: run scripts/ci/chromium.sh)")
        pytest.skip(why)
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class Server:
    """A ``memwire serve`` child process."""

    url: str
    db: Path
    token: str | None
    process: subprocess.Popen[bytes]

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck server
            self.process.kill()
            self.process.wait()


def start_server(db: Path, token: str | None = None) -> Server:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "MEMWIRE_TOKEN"}
    if token:
        env["MEMWIRE_TOKEN"] = token  # through the environment, as memwire daemon does
    process = subprocess.Popen(
        [sys.executable, "-m", "memwire", "serve", "--db", str(db), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"memwire serve exited with {process.returncode}")
        try:
            if httpx.get(url + "/health", timeout=2).text == "ok":
                break
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("memwire serve did not answer /health")
        time.sleep(0.1)
    return Server(url, db, token, process)


def seed(db: Path) -> dict[str, Any]:
    """1,000 memories in one bank (one a word of WORDS, spread over a month), 3 in another."""
    with memwire.Memory(db) as memory:
        items = []
        for i in range(BIG_COUNT):
            word = WORDS[i % len(WORDS)]
            items.append(
                {
                    "content": f"note {i:04d}: the {word} story, item {i}",
                    "tags": [word, f"batch{i % 4}"],
                    "context": f"session {i // 100}",
                    "created_at": (START + timedelta(minutes=43 * i)).isoformat(),
                }
            )
        memory.retain_many(items, bank=BIG_BANK)
        memory.retain_many(
            [
                {"content": "The deploy key lives in the vault, never in git", "tags": ["ops"]},
                {"content": "Alice prefers tabs over spaces in Go code", "tags": ["style"]},
                {"content": "The staging database is refreshed every Monday", "tags": ["ops"]},
            ],
            bank=SMALL_BANK,
        )
        newest_first = [r.id for r in memory.memories(bank=BIG_BANK, limit=BIG_COUNT)]
    return {"newest_first": newest_first}


@dataclass
class Browser:
    """A headless Chromium and the URLs of every request it made since it started."""

    driver: Any
    requested: list[str] = field(default_factory=list)
    console: list[dict[str, Any]] = field(default_factory=list)
    downloads: Path | None = None

    def drain(self) -> None:
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") == "Network.requestWillBeSent":
                self.requested.append(message["params"]["request"]["url"])
        self.console.extend(self.driver.get_log("browser"))

    def foreign(self, origin: str) -> list[str]:
        self.drain()
        return [u for u in self.requested if not u.startswith(origin + "/") and u != origin]


def make_browser(download_dir: Path | None = None) -> Browser:
    chromium, chromedriver = need_browser()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
    if download_dir is not None:
        options.add_experimental_option(
            "prefs", {"download.default_directory": str(download_dir), "download.prompt": False}
        )
    driver = webdriver.Chrome(service=Service(executable_path=chromedriver), options=options)
    driver.implicitly_wait(0)
    return Browser(driver, downloads=download_dir)
