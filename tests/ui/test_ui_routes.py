"""The page's routes and its security, over real HTTP without a browser."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import httpx
import memwire
import pytest
from memwire.config import DEFAULT_MIN_SCORE
from memwire.server import ui
from memwire.server.testing import serve_in_thread

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[memwire.Memory]:
    with memwire.Memory(tmp_path / "m.db") as m:
        m.retain_many(
            [
                {
                    "content": "the cobalt kettle is in the shed",
                    "tags": ["home"],
                    "created_at": "2026-03-01T10:00:00Z",
                },
                {
                    "content": "the violet harbor opens at nine",
                    "tags": ["travel", "home"],
                    "created_at": "2026-03-01T23:00:00Z",
                },
                {"content": "Bob's cobalt bike needs a chain", "created_at": "2026-03-03"},
            ],
            bank="b/x",
        )
        yield m


@pytest.fixture
def open_url(memory: memwire.Memory) -> Iterator[str]:
    with serve_in_thread(memory) as url:
        yield url


@pytest.fixture
def token_url(memory: memwire.Memory) -> Iterator[str]:
    with serve_in_thread(memory, token=TOKEN) as url:
        yield url


def static_text(name: str) -> str:
    return resources.files("memwire.server").joinpath("static", name).read_text("utf-8")


def test_the_static_files_need_no_token_and_hold_no_data(token_url: str) -> None:
    for path, (name, media_type) in ui.STATIC_FILES.items():
        answer = httpx.get(token_url + path)
        assert answer.status_code == 200, path
        assert answer.headers["content-type"] == media_type
        assert (
            answer.content
            == resources.files("memwire.server").joinpath("static", name).read_bytes()
        )
        assert answer.headers["content-security-policy"] == ui.CSP
        assert answer.headers["x-content-type-options"] == "nosniff"
    # Nothing else is public: the page's API, other paths under /ui, the ordinary routes.
    for path in ("/ui/api/overview", "/ui/api/banks/b%2Fx/days", "/banks", "/openapi.json"):
        assert httpx.get(token_url + path).status_code == 401, path
    assert httpx.get(token_url + "/ui/nothing.js").status_code == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(token_url + "/ui/nothing.js", headers=bearer).status_code == 404
    assert httpx.get(token_url + "/ui/api/overview", headers=bearer).status_code == 200


def test_the_policy_allows_no_inline_code_and_no_other_origin() -> None:
    directives = dict(d.split(" ", 1) for d in ui.CSP.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == "'self'"
    assert directives["connect-src"] == "'self'"
    assert "unsafe" not in ui.CSP and "*" not in ui.CSP and "http" not in ui.CSP
    html = static_text("index.html")
    # Every script has a src on this origin; no inline handlers or styles (the CSP would block
    # them, so a test here catches it before a browser does).
    assert re.findall(r"<script[^>]*>", html) == ['<script src="/ui/app.js" defer>']
    assert not re.search(r"\son[a-z]+=", html)
    assert not re.search(r"\sstyle=", html) and "<style" not in html
    assert not re.search(r"(src|href)=\"(https?:)?//", html)
    script = static_text("app.js")
    for sink in (
        "eval(",
        "new Function",
        "innerHTML",
        "outerHTML",
        "document.write",
        "localStorage",
        "document.cookie",
        "insertAdjacentHTML",
    ):
        assert sink not in script, sink
    assert "http://" not in script.replace("http://www.w3.org/2000/svg", "")


def test_cross_origin_requests_are_refused_and_no_cors_is_sent(open_url: str) -> None:
    evil = {"Origin": "https://evil.example"}
    assert httpx.get(open_url + "/ui/api/overview", headers=evil).status_code == 403
    preflight = httpx.options(
        open_url + "/ui/api/banks/b%2Fx/import",
        headers={**evil, "Access-Control-Request-Method": "POST"},
    )
    assert preflight.status_code == 403
    same = httpx.get(open_url + "/ui/api/overview", headers={"Origin": open_url})
    assert same.status_code == 200
    assert not [h for h in same.headers if h.lower().startswith("access-control-")]


def test_writes_need_a_json_body(open_url: str, memory: memwire.Memory) -> None:
    # What an HTML form could send (text/plain) is refused before anything is read or written.
    export = httpx.get(open_url + "/ui/api/banks/b%2Fx/export").text
    answer = httpx.post(
        open_url + "/ui/api/banks/other/import",
        content='{"data": ' + repr(export) + "}",
        headers={"Content-Type": "text/plain"},
    )
    assert answer.status_code == 400
    assert answer.json() == {"error": "send the body as application/json"}
    assert "other" not in memory.banks()
    answer = httpx.post(
        open_url + "/ui/api/banks/b%2Fx/recall",
        content='{"query": "cobalt"}',
        headers={"Content-Type": "text/plain"},
    )
    assert answer.status_code == 400


def test_overview_lists_banks_with_counts_and_the_backend(
    open_url: str, memory: memwire.Memory
) -> None:
    memory.retain("one more", bank="a")
    data = httpx.get(open_url + "/ui/api/overview").json()
    assert data["version"] == memwire.__version__
    assert data["backend"] == memory.backend
    assert data["fallback"] is (memory.backend == "python")
    assert [(b["bank"], b["count"]) for b in data["banks"]] == [("a", 1), ("b/x", 3)]
    assert data["banks"][1]["newest"] == "2026-03-03T00:00:00+00:00"


def test_recall_is_the_agents_recall_with_ranks(open_url: str) -> None:
    body = {"query": "cobalt kettle", "limit": 5}
    mine = httpx.post(open_url + "/ui/api/banks/b%2Fx/recall", json=body).json()
    agents = httpx.post(open_url + "/banks/b%2Fx/recall", json={**body, "format": "full"}).json()
    assert [(h["id"], h["score"]) for h in mine["hits"]] == [(h["id"], h["score"]) for h in agents]
    top = mine["hits"][0]
    assert top["content"] == "the cobalt kettle is in the shed"
    assert top["bm25_rank"] == 1 and top["overlap_rank"] >= 1
    assert {"dense_rank", "context", "tags", "created_at"} <= set(top)
    assert mine["min_score"] is None
    assert (mine["floor"], mine["floor_source"]) == (DEFAULT_MIN_SCORE, "the default")
    floored = httpx.post(
        open_url + "/ui/api/banks/b%2Fx/recall", json={**body, "min_score": top["score"]}
    ).json()
    assert floored["min_score"] == top["score"]
    assert (floored["floor"], floored["floor_source"]) == (top["score"], "this search")
    assert [h["id"] for h in floored["hits"]] == [top["id"]]
    bad = httpx.post(open_url + "/ui/api/banks/b%2Fx/recall", json={"query": "x", "limit": 0})
    assert bad.status_code == 400 and "limit" in bad.json()["error"]


def test_days_counts_by_utc_day_and_tags(open_url: str) -> None:
    data = httpx.get(open_url + "/ui/api/banks/b%2Fx/days").json()
    assert data["days"] == [["2026-03-01", 2], ["2026-03-03", 1]]
    assert data["count"] == data["counted"] == 3
    assert data["tags"] == [["home", 2], ["travel", 1]]
    assert httpx.get(open_url + "/ui/api/banks/nope/days").status_code == 404


def test_export_then_import_into_another_store(open_url: str, tmp_path: Path) -> None:
    answer = httpx.get(open_url + "/ui/api/banks/b%2Fx/export")
    assert answer.status_code == 200
    assert answer.headers["content-disposition"] == 'attachment; filename="memwire-b_x.jsonl"'
    assert httpx.get(open_url + "/ui/api/banks/nope/export").status_code == 404
    with memwire.Memory(tmp_path / "other.db") as other, serve_in_thread(other) as url:
        done = httpx.post(url + "/ui/api/banks/copy/import", json={"data": answer.text})
        assert done.json() == {"bank": "copy", "imported": 3}
        assert other.stats(bank="copy")["count"] == 3
        again = httpx.post(url + "/ui/api/banks/copy/import", json={"data": answer.text})
        assert again.json()["imported"] == 0  # ids already there are skipped
        bad = httpx.post(url + "/ui/api/banks/copy/import", json={"data": "not jsonl\n"})
        assert bad.status_code == 400
        assert httpx.post(url + "/ui/api/banks/copy/import", json={}).status_code == 400
        assert other.stats(bank="copy")["count"] == 3
