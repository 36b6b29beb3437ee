"""The memory page's edits, history and trash (issues 15 and 17) in headless Chromium against a
real ``memwire serve`` (see ui_support.py): each test makes its own bank over HTTP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from test_browser import assert_clean, by_id, css, open_bank, page_ids, search, wait
from ui_support import Browser, Server


def retain(server: Server, bank: str, content: str, **fields: object) -> str:
    with server.client() as client:
        r = client.post(f"/banks/{bank}/retain", json={"content": content, **fields})
        assert r.status_code == 200, r.text
        memory_id: str = r.json()["id"]
        return memory_id


def open_memory(browser: Browser, memory_id: str) -> None:
    css(browser, f'#memory-rows tr[data-id="{memory_id}"] td.content a')[0].click()
    wait(browser, lambda d: memory_id in by_id(browser, "memory-detail").text, "the detail")
    wait(browser, lambda d: css(browser, "#history li"), "the history")


def open_trash(browser: Browser) -> None:
    before = by_id(browser, "trash-rows").get_attribute("data-shown")
    css(browser, '.tabs button[data-view="trash"]')[0].click()
    wait(
        browser,
        lambda d: by_id(browser, "trash-rows").get_attribute("data-shown") != before,
        "the trash",
    )


def trash_ids(browser: Browser) -> list[str]:
    script = "return [...document.querySelectorAll('#trash-rows tr')].map(r => r.dataset.id)"
    ids: list[str] = browser.driver.execute_script(script)
    return ids


def confirm(browser: Browser, words: str) -> None:
    wait(browser, lambda d: by_id(browser, "confirm").is_displayed(), "the confirmation")
    assert words in by_id(browser, "confirm-message").text
    by_id(browser, "confirm-ok").click()


def hit_ids(hits: list[Any]) -> list[str]:
    return [h.get_attribute("data-id") for h in hits]


def test_edit_tags_then_see_them_in_the_list_and_in_recall(
    browser: Browser, server: Server
) -> None:
    bank = "edits"
    target = retain(server, bank, "the release train leaves on thursdays", tags=["ops"])
    other = retain(server, bank, "the release notes live in the wiki", tags=["docs"])
    open_bank(browser, server, bank)
    open_memory(browser, target)
    box = by_id(browser, "tags-edit")
    assert box.get_attribute("value") == "ops"
    box.clear()
    box.send_keys("ops, Train")
    by_id(browser, "tags-save").click()
    wait(browser, lambda d: by_id(browser, "tags-info").text == "saved", "the saved tags")
    shown = [t.text for t in css(browser, "#memory-tags .tag")]
    assert shown == ["ops", "train"]  # stored casefolded
    # Same id (tags change in place), and the list shows the new tags.
    by_id(browser, "back").click()
    wait(browser, lambda d: by_id(browser, "view-memories").is_displayed(), "the list")
    wait(
        browser,
        lambda d: (
            [t.text for t in css(browser, f'#memory-rows tr[data-id="{target}"] .tag')]
            == ["ops", "train"]
        ),
        "the new tags in the list",
    )
    assert sorted(page_ids(browser)) == sorted([target, other])
    # The agents' recall filters by the new tag.
    css(browser, '.tabs button[data-view="search"]')[0].click()
    wait(browser, lambda d: by_id(browser, "search-tags").is_displayed(), "the search form")
    by_id(browser, "search-tags").send_keys("train")
    hits = search(browser, "release")
    assert hit_ids(hits) == [target]
    by_id(browser, "search-tags").clear()
    with server.client() as client:
        agents = client.post(
            f"/banks/{bank}/recall", json={"query": "release", "tags": ["train"], "format": "full"}
        ).json()
    assert [h["id"] for h in agents] == [target]
    assert_clean(browser, server)


def test_forget_to_the_trash_then_restore(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    bank = "trashy"
    target = retain(server, bank, "the on-call phone is in the top drawer", tags=["ops"])
    keep = retain(server, bank, "the spare keys are with reception")
    open_bank(browser, server, bank)
    open_memory(browser, target)
    by_id(browser, "forget").click()
    wait(browser, lambda d: by_id(browser, "confirm").is_displayed(), "the confirmation")
    assert "trash" in by_id(browser, "confirm-message").text
    confirm(browser, "Move this memory to the trash")
    wait(browser, lambda d: page_ids(browser) == [keep], "the list without it")
    assert "trash" in by_id(browser, "notice").text
    assert "on-call phone" not in " ".join(h.text for h in search(browser, "on-call phone"))
    open_trash(browser)
    assert trash_ids(browser) == [target]
    screenshot("trash")
    css(browser, f'#trash-rows tr[data-id="{target}"] button.restore')[0].click()
    wait(browser, lambda d: trash_ids(browser) == [], "the trash without it")
    assert f"restored {target}" in by_id(browser, "notice").text
    hits = search(browser, "on-call phone drawer")
    assert hit_ids(hits)[0] == target
    with server.client() as client:
        assert client.get(f"/banks/{bank}/memories/{target}").json()["status"] == "live"
    assert_clean(browser, server)


def test_purge_from_the_trash_and_empty_it(browser: Browser, server: Server) -> None:
    bank = "purges"
    ids = [retain(server, bank, f"scratch note {n} about the printer") for n in range(3)]
    keep = retain(server, bank, "the printer is on the second floor")
    with server.client() as client:
        for memory_id in ids:
            assert client.delete(f"/banks/{bank}/memories/{memory_id}").json()["trashed"]
    open_bank(browser, server, bank)
    open_trash(browser)
    assert sorted(trash_ids(browser)) == sorted(ids)
    first = ids[0]
    css(browser, f'#trash-rows tr[data-id="{first}"] button.purge')[0].click()
    wait(browser, lambda d: by_id(browser, "confirm").is_displayed(), "the confirmation")
    by_id(browser, "confirm-cancel").click()  # cancel keeps it
    with server.client() as client:
        assert client.get(f"/banks/{bank}/memories/{first}").status_code == 200
    css(browser, f'#trash-rows tr[data-id="{first}"] button.purge')[0].click()
    confirm(browser, "cannot be undone")
    wait(browser, lambda d: first not in trash_ids(browser), "the trash without it")
    with server.client() as client:
        assert client.get(f"/banks/{bank}/memories/{first}").status_code == 404
    by_id(browser, "trash-empty").click()
    confirm(browser, "Empty the trash")
    wait(browser, lambda d: trash_ids(browser) == [], "the empty trash")
    assert "deleted 2 trashed memories" in by_id(browser, "notice").text
    assert by_id(browser, "trash-info").text == "the trash is empty"
    with server.client() as client:
        assert client.get(f"/banks/{bank}/trash").json() == []
        assert [m["id"] for m in client.get(f"/banks/{bank}/memories").json()] == [keep]
    assert_clean(browser, server)


def test_a_memorys_history_shows_its_versions(
    browser: Browser, server: Server, screenshot: Callable[[str], None]
) -> None:
    bank = "versions"
    first = retain(server, bank, "the API listens on port 8080", tags=["api"])
    with server.client() as client:
        r = client.patch(f"/banks/{bank}/memories/{first}", json={"content": "port 9090 now"})
        second = r.json()["id"]
    open_bank(browser, server, bank)
    open_memory(browser, second)
    items = css(browser, "#history li")
    assert [i.get_attribute("data-id") for i in items] == [first, second]
    statuses = [i.find_element("css selector", ".status").text for i in items]
    assert statuses == ["superseded", "live"]
    assert "until" in items[0].text and "until" not in items[1].text
    assert by_id(browser, "history-info").text == "2 versions, oldest first"
    screenshot("history")
    # The old version's detail says what superseded it and cannot be edited.
    items[0].find_element("css selector", "a").click()
    wait(browser, lambda d: first in by_id(browser, "memory-detail").text, "the old version")
    assert "superseded" in by_id(browser, "memory-status").text
    assert second in by_id(browser, "memory-status").text
    assert not by_id(browser, "tags-form").is_displayed()
    assert not by_id(browser, "forget").is_displayed()
    assert_clean(browser, server)
