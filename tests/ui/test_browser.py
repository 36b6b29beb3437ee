"""The memory page in headless Chromium against a real ``memwire serve`` (see ui_support.py)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

from memwire.config import DEFAULT_MIN_SCORE
from ui_support import (
    BIG_BANK,
    BIG_COUNT,
    SMALL_BANK,
    START,
    Browser,
    Server,
    seed,
    start_server,
)

TIMEOUT = 20


def wait(browser: Browser, condition: Callable[[Any], Any], what: str) -> Any:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import WebDriverWait

    waiting = WebDriverWait(
        browser.driver, TIMEOUT, ignored_exceptions=(StaleElementReferenceException,)
    )
    return waiting.until(condition, message=what)


def by_id(browser: Browser, name: str) -> Any:
    from selenium.webdriver.common.by import By

    return browser.driver.find_element(By.ID, name)


def css(browser: Browser, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(browser.driver.find_elements(By.CSS_SELECTOR, selector))


def open_page(browser: Browser, server: Server, hash_: str = "") -> None:
    browser.driver.get(server.url + "/" + hash_)
    wait(
        browser,
        lambda d: css(browser, "#bank-list a") or by_id(browser, "login").is_displayed(),
        "the page to load",
    )


def open_bank(browser: Browser, server: Server, bank: str) -> None:
    open_page(browser, server)
    link = next(a for a in css(browser, "#bank-list a") if a.get_attribute("data-bank") == bank)
    link.click()
    wait(browser, lambda d: css(browser, "#memory-rows tr"), "the first page of memories")


def page_ids(browser: Browser) -> list[str]:
    # One script call: the rows are read in one go, never half re-rendered.
    script = "return [...document.querySelectorAll('#memory-rows tr')].map(r => r.dataset.id)"
    ids: list[str] = browser.driver.execute_script(script)
    return ids


def search(browser: Browser, query: str) -> list[Any]:
    css(browser, '.tabs button[data-view="search"]')[0].click()
    box = by_id(browser, "query")
    wait(browser, lambda d: box.is_displayed(), "the search form")
    box.clear()
    box.send_keys(query)
    before = by_id(browser, "hits").get_attribute("data-answers")
    by_id(browser, "search-form").submit()
    wait(
        browser,
        lambda d: by_id(browser, "hits").get_attribute("data-answers") != before,
        "the recall answer",
    )
    return css(browser, "#hits li")


def assert_clean(browser: Browser, server: Server, expected: tuple[int, ...] = ()) -> None:
    """Nothing was asked of another origin, and the console has no error (a CSP violation or
    a script error would be one) but the refusals the test provoked (``expected`` statuses)."""
    assert browser.foreign(server.url) == []
    assert browser.requested, "the performance log recorded no request at all"
    allowed = tuple(f"status of {n} " for n in expected)
    errors = [
        c["message"]
        for c in browser.console
        if c.get("level") == "SEVERE"
        and not (c.get("source") == "network" and any(a in c["message"] for a in allowed))
    ]
    browser.console.clear()
    assert errors == []


def test_lists_banks_with_counts(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    open_page(browser, server)
    with server.client() as client:
        expected = {
            b: client.get(f"/banks/{b}/stats").json()["count"] for b in (BIG_BANK, SMALL_BANK)
        }
    shown = {
        a.get_attribute("data-bank"): a.find_element("css selector", ".count").text
        for a in css(browser, "#bank-list a")
    }
    assert shown == {b: f"{n:,}" for b, n in expected.items()}
    assert expected[BIG_BANK] == BIG_COUNT
    screenshot("banks")
    assert_clean(browser, server)


def test_pages_through_a_thousand_memories_newest_first(
    browser: Browser, server: Server, facts: dict[str, Any], screenshot: Callable[[str], None]
) -> None:
    open_bank(browser, server, BIG_BANK)
    assert "1,000 memories" in by_id(browser, "bank-count").text
    first = css(browser, "#memory-rows tr")[0]
    cells = first.find_elements("css selector", "td")
    assert cells[1].text.startswith("note 0999:")  # newest first
    assert [t.text for t in cells[2].find_elements("css selector", ".tag")] == ["saddle", "batch3"]
    assert cells[3].text == "session 9"
    newest = START + timedelta(minutes=43 * (BIG_COUNT - 1))  # shown in UTC
    assert cells[0].text == newest.strftime("%Y-%m-%d %H:%M")
    screenshot("memories")
    seen: list[str] = []
    pages = 0
    while True:
        ids = page_ids(browser)
        seen.extend(ids)
        pages += 1
        assert by_id(browser, "page-info").text.endswith(f"of {BIG_COUNT:,}")
        nxt = by_id(browser, "next")
        if not nxt.is_enabled():
            break
        nxt.click()
        wait(
            browser,
            lambda d, ids=ids: page_ids(browser) and page_ids(browser) != ids,
            "the next page",
        )
    assert pages == BIG_COUNT // 50
    assert seen == facts["newest_first"]
    assert by_id(browser, "page-info").text == "951\u20131,000 of 1,000"
    # and back one page
    by_id(browser, "prev").click()
    wait(browser, lambda d: by_id(browser, "page-info").text.startswith("901"), "the newer page")
    assert page_ids(browser) == facts["newest_first"][900:950]
    # A memory's link opens its detail; back returns to the same page.
    target = facts["newest_first"][905]
    css(browser, f'#memory-rows tr[data-id="{target}"] td.content a')[0].click()
    wait(browser, lambda d: target in by_id(browser, "memory-detail").text, "the detail")
    detail = by_id(browser, "memory-detail").text
    assert "note 0094:" in detail and "session 0" in detail and "retained" in detail
    by_id(browser, "back").click()
    wait(browser, lambda d: by_id(browser, "page-info").text.startswith("901"), "the page again")
    assert_clean(browser, server)


def test_search_shows_scores_and_stream_ranks(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    open_bank(browser, server, BIG_BANK)
    hits = search(browser, "note 0421 violet")
    assert hits, "the recall found nothing"
    with server.client() as client:
        agents = client.post(
            f"/banks/{BIG_BANK}/recall",
            json={"query": "note 0421 violet", "limit": 10, "format": "full"},
        ).json()
    # The same recall the agents get: same memories, same order, same scores.
    assert [h.get_attribute("data-id") for h in hits] == [h["id"] for h in agents]
    top = hits[0]
    assert top.find_element("css selector", ".content").text.startswith("note 0421:")
    assert top.find_element("css selector", ".score").text == f"{agents[0]['score']:.5f}"
    ranks = {
        r.get_attribute("data-stream"): r.text for r in top.find_elements("css selector", ".rank")
    }
    assert ranks["bm25"] == "bm25 #1"
    assert set(ranks) == {"bm25", "overlap", "dense"}
    # The bank's default floor applies, and each hit says why it passed it.
    info = by_id(browser, "search-info").text
    assert f"relevance floor {DEFAULT_MIN_SCORE} (from the default)" in info
    assert f"\u2265 floor {DEFAULT_MIN_SCORE}" in top.find_element("css selector", ".why").text
    screenshot("search")
    # With a floor, each hit says why it passed it, and a floor above every score finds nothing.
    floor = agents[0]["score"] - 1e-9
    by_id(browser, "min-score").send_keys(repr(floor))
    hits = search(browser, "note 0421 violet")
    assert [h.get_attribute("data-id") for h in hits] == [agents[0]["id"]]
    assert f"floor {floor!r}" in hits[0].find_element("css selector", ".why").text
    by_id(browser, "min-score").clear()
    assert_clean(browser, server)


def test_forget_a_memory_and_see_it_gone_from_recall(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    open_bank(browser, server, SMALL_BANK)
    hits = search(browser, "deploy key vault")
    target = hits[0].get_attribute("data-id")
    assert "deploy key" in hits[0].text
    hits[0].click()
    wait(browser, lambda d: by_id(browser, "view-memory").is_displayed(), "the memory's detail")
    wait(browser, lambda d: target in by_id(browser, "memory-detail").text, "the detail")
    assert "ops" in by_id(browser, "memory-detail").text
    screenshot("memory")
    by_id(browser, "forget").click()
    wait(browser, lambda d: by_id(browser, "confirm").is_displayed(), "the confirmation")
    assert "Move this memory to the trash" in by_id(browser, "confirm-message").text
    screenshot("forget-confirm")
    # Cancel keeps it.
    by_id(browser, "confirm-cancel").click()
    with server.client() as client:
        assert client.get(f"/banks/{SMALL_BANK}/memories/{target}").status_code == 200
    by_id(browser, "forget").click()
    wait(browser, lambda d: by_id(browser, "confirm").is_displayed(), "the confirmation")
    by_id(browser, "confirm-ok").click()
    wait(browser, lambda d: by_id(browser, "view-memories").is_displayed(), "the list again")
    wait(browser, lambda d: len(page_ids(browser)) == 2, "the list without it")
    assert target not in page_ids(browser)
    assert "2 memories" in by_id(browser, "bank-count").text
    hits = search(browser, "deploy key vault")
    assert target not in [h.get_attribute("data-id") for h in hits]
    with server.client() as client:
        # In the trash (restorable; tests/ui/test_browser_history.py), not in recall.
        assert client.get(f"/banks/{SMALL_BANK}/memories/{target}").json()["status"] == "trashed"
        agents = client.post(
            f"/banks/{SMALL_BANK}/recall", json={"query": "deploy key vault", "format": "full"}
        ).json()
        assert target not in [h["id"] for h in agents]
    assert_clean(browser, server)


def test_plots_and_config(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    open_bank(browser, server, BIG_BANK)
    css(browser, '.tabs button[data-view="insights"]')[0].click()
    wait(browser, lambda d: css(browser, "#days-plot rect"), "the per-day plot")
    # 1,000 memories 43 minutes apart: one bar per UTC day from the first to the last.
    last = START + timedelta(minutes=43 * (BIG_COUNT - 1))
    bars = css(browser, "#days-plot rect")
    assert len(bars) == (last.date() - START.date()).days + 1
    titles = [b.find_element("css selector", "title").get_attribute("textContent") for b in bars]
    assert titles[0].startswith(f"{START.date()}: ") and titles[-1].startswith(f"{last.date()}: ")
    assert sum(int(t.split(": ")[1]) for t in titles) == BIG_COUNT
    tag_titles = [
        b.find_element("css selector", "title").get_attribute("textContent")
        for b in css(browser, "#tags-plot rect")
    ]
    assert "batch0: 250" in tag_titles and "kettle: 125" in tag_titles
    screenshot("insights")

    css(browser, '.tabs button[data-view="config"]')[0].click()
    box = by_id(browser, "config-text")
    wait(browser, lambda d: box.get_attribute("value").strip().startswith("{"), "the config")
    current = json.loads(box.get_attribute("value"))
    current["recall_max_tokens"] = 1234
    box.clear()
    box.send_keys(json.dumps(current))
    by_id(browser, "config-save").click()
    wait(browser, lambda d: by_id(browser, "config-info").text == "saved", "the saved config")
    with server.client() as client:
        assert client.get(f"/banks/{BIG_BANK}/config").json()["recall_max_tokens"] == 1234
    # A key removed in the editor is removed from the config; a bad value is refused.
    del current["recall_max_tokens"]
    box.clear()
    box.send_keys(json.dumps(current))
    by_id(browser, "config-save").click()
    wait(browser, lambda d: by_id(browser, "config-info").text == "saved", "the removal")
    box.clear()
    box.send_keys('{"recall_max_tokens": -5}')
    by_id(browser, "config-save").click()
    wait(browser, lambda d: "recall_max_tokens" in by_id(browser, "config-info").text, "refusal")
    with server.client() as client:
        assert "recall_max_tokens" not in client.get(f"/banks/{BIG_BANK}/config").json()
    screenshot("config")
    assert_clean(browser, server, expected=(400,))


def test_export_then_import_restores_a_purged_memory(browser: Browser, server: Server) -> None:
    assert browser.downloads is not None
    downloads = browser.downloads
    open_bank(browser, server, SMALL_BANK)
    by_id(browser, "export").click()
    wait(browser, lambda d: list(downloads.glob("*.jsonl")), "the exported file")
    exported = next(downloads.glob("*.jsonl"))
    with server.client() as client:
        stored = client.get(f"/banks/{SMALL_BANK}/memories").json()

    def live_lines() -> list[dict[str, object]]:
        """The file's live memories (format 2 also carries the trash and history, whose
        lines have a ``status``: earlier tests on this server trashed some)."""
        lines = [json.loads(x) for x in exported.read_text().splitlines() if x.strip()]
        return [x for x in lines if "content" in x and "status" not in x]

    wait(browser, lambda d: len(live_lines()) == len(stored), "the file")
    assert sorted(str(x["id"]) for x in live_lines()) == sorted(m["id"] for m in stored)
    # Purge one behind the page's back (a forgotten one would wait in the trash, where
    # restoring is the way back), then import the file: it is back, the rest skipped.
    gone = stored[0]["id"]
    with server.client() as client:
        assert client.post(f"/banks/{SMALL_BANK}/memories/{gone}/purge").status_code == 200
    by_id(browser, "import-file").send_keys(str(exported))
    wait(
        browser,
        lambda d: "imported" in by_id(browser, "notice").text or by_id(browser, "status").text,
        "the import",
    )
    assert by_id(browser, "status").text == ""
    assert by_id(browser, "notice").text == f"imported 1 from {exported.name}"
    wait(browser, lambda d: gone in page_ids(browser), "the restored memory in the list")
    with server.client() as client:
        assert client.get(f"/banks/{SMALL_BANK}/memories/{gone}").status_code == 200
    assert_clean(browser, server)


def test_backend_note(browser: Browser, server: Server, screenshot: Callable[[str], None]) -> None:
    open_page(browser, server)
    with server.client() as client:
        backend = client.get("/ui/api/overview").json()["backend"]
    note = by_id(browser, "fallback")
    assert by_id(browser, "version").text.endswith(f"{backend} kernel")
    if backend == "python":
        assert note.is_displayed() and "pure-Python fallback" in note.text
        screenshot("fallback")
    else:
        assert not note.is_displayed()


def test_a_token_server_refuses_the_page_without_it(
    tmp_path: Path, screenshot: Callable[[str], None]
) -> None:
    from ui_support import make_browser

    token = secrets.token_hex(16)
    db = tmp_path / "memory.db"
    seed(db)
    server = start_server(db, token=token)
    browser = make_browser()
    try:
        open_page(browser, server)
        assert by_id(browser, "login").is_displayed()
        assert not by_id(browser, "app").is_displayed()
        assert css(browser, "#bank-list a") == []
        screenshot("token")
        # A wrong token is refused and nothing is shown.
        by_id(browser, "token").send_keys("wrong")
        by_id(browser, "login-form").submit()
        wait(browser, lambda d: by_id(browser, "login-error").is_displayed(), "the refusal")
        assert "refused" in by_id(browser, "login-error").text
        assert css(browser, "#bank-list a") == []
        # The right one opens it, and is kept for this tab only.
        by_id(browser, "token").send_keys(token)
        by_id(browser, "login-form").submit()
        wait(browser, lambda d: css(browser, "#bank-list a"), "the banks")
        driver = browser.driver
        assert driver.execute_script("return sessionStorage.getItem('memwire.token')") == token
        assert driver.execute_script("return localStorage.length") == 0
        assert driver.get_cookies() == []
        assert driver.execute_script("return document.cookie") == ""
        # A reload keeps the session; a new tab's storage (a fresh browser) would not.
        driver.refresh()
        wait(browser, lambda d: css(browser, "#bank-list a"), "the banks after a reload")
        with server.client() as client:
            assert client.get("/banks").status_code == 200
        import httpx

        assert httpx.get(server.url + "/ui/api/overview").status_code == 401
        assert httpx.get(server.url + "/banks").status_code == 401
        by_id(browser, "signout").click()
        assert by_id(browser, "login").is_displayed()
        assert driver.execute_script("return sessionStorage.getItem('memwire.token')") is None
        assert_clean(browser, server, expected=(401,))
    finally:
        browser.driver.quit()
        server.stop()


def test_memory_text_is_shown_as_text_never_run(browser: Browser, server: Server) -> None:
    # Agents write memories; one may hold markup. It must show as characters, never as HTML.
    evil = '<img src="/pwned.png" onerror="document.title=\'pwned\'"><script>alert(1)</script>'
    with server.client() as client:
        made = client.post("/banks/markup/retain", json={"content": evil, "tags": ["<b>x</b>"]})
        memory_id = made.json()["id"]
    open_bank(browser, server, "markup")
    row = css(browser, "#memory-rows tr")[0]
    assert row.get_attribute("data-id") == memory_id
    assert row.find_elements("css selector", "td")[1].text == evil
    assert row.find_element("css selector", ".tag").text == "<b>x</b>"
    assert css(browser, "#memory-rows img") == [] and css(browser, "#memory-rows script") == []
    assert browser.driver.title == "memwire"
    assert not [u for u in (browser.foreign(server.url) + browser.requested) if "pwned" in u]
    assert_clean(browser, server)
