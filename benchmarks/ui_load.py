"""First page load of the web page for a 10k-memory bank, in headless Chromium.

    python benchmarks/ui_load.py [--n 10000] [--loads 30] [--backend rust|python]

Builds a scratch store with one bank of ``--n`` memories (the benchmark corpus's documents,
with tags, context and dates), starts ``python -m memwire serve`` on a free loopback port, and
opens ``/#bank=bench`` in Debian's headless Chromium (selenium, the system chromedriver) ``--loads``
times, each a fresh navigation of a new tab state (the static files are ``no-cache``, so each
load fetches them again). A load's time is from the navigation's start to the page's
``memwire:memories-shown`` performance mark, set once the first 50 memories are in the table:
the HTML, script and stylesheet, ``/ui/api/overview`` and the first ``/memories`` page, parsed
and rendered. Also printed: the server time of that first-page API call alone (httpx, keep-alive).
Nothing here asserts: it prints numbers for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BANK = "bench"


def _corpus(n: int) -> Any:
    spec = importlib.util.spec_from_file_location("corpus_cache", HERE / "corpus_cache.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["corpus_cache"] = module
    spec.loader.exec_module(module)
    return module.load_corpus(n)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def build_store(db: Path, n: int) -> None:
    import memwire

    corpus = _corpus(n)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    items = [
        {
            "content": doc,
            "tags": [f"topic{i % 17}", f"session{i % 5}"],
            "context": f"conversation {i // 40}",
            "created_at": (start + timedelta(minutes=47 * i)).isoformat(),
        }
        for i, doc in enumerate(corpus.texts[:n])
    ]
    with memwire.Memory(db) as memory:
        for at in range(0, len(items), 1000):
            memory.retain_many(items[at : at + 1000], bank=BANK)


def start_server(db: Path, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = free_port()
    command = [sys.executable, "-m", "memwire", "serve", "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).text == "ok":
                return process, url
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the server did not start")


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver:
        raise SystemExit("needs Debian's chromium and chromium-driver (scripts/ci/chromium.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-extensions",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def one_load(driver: Any, url: str) -> float:
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get("about:blank")
    driver.get(f"{url}/#bank={BANK}")
    script = "return performance.getEntriesByName('memwire:memories-shown').map(e => e.startTime)"
    marks = WebDriverWait(driver, 30).until(lambda d: d.execute_script(script))
    rows = driver.execute_script("return document.querySelectorAll('#memory-rows tr').length")
    assert rows == 50, rows
    first: float = marks[0]
    return first


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=30)
    parser.add_argument("--backend", choices=["rust", "python"], default="rust")
    args = parser.parse_args()
    import httpx

    env = dict(os.environ, MEMWIRE_BACKEND=args.backend)
    os.environ["MEMWIRE_BACKEND"] = args.backend
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "memory.db"
        build_store(db, args.n)
        process, url = start_server(db, env)
        driver = browser()
        try:
            for _ in range(3):  # warm-up: the server's first reads, the browser's first tab
                one_load(driver, url)
            loads = [one_load(driver, url) for _ in range(args.loads)]
            with httpx.Client(base_url=url) as client:
                api = []
                for _ in range(200):
                    t0 = time.perf_counter()
                    client.get(f"/banks/{BANK}/memories?limit=50&offset=0").raise_for_status()
                    api.append((time.perf_counter() - t0) * 1000)
        finally:
            driver.quit()
            process.terminate()
            process.wait(timeout=30)
    loads.sort()
    api.sort()
    p95 = loads[min(len(loads) - 1, int(len(loads) * 0.95))]
    print(
        f"backend {args.backend}, {args.n} memories, {args.loads} loads, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    print(
        f"first page load: median {statistics.median(loads):.1f} ms, p95 {p95:.1f} ms, "
        f"min {loads[0]:.1f} ms, max {loads[-1]:.1f} ms"
    )
    print(f"GET /banks/{BANK}/memories?limit=50 alone: median {statistics.median(api):.2f} ms")


if __name__ == "__main__":
    main()
