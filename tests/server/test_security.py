"""Loopback by default, bearer tokens, host and origin checks."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from memwire.memory import Memory
from memwire.server.runner import ServeRefused, check_bind, is_loopback
from memwire.server.testing import serve_in_thread

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def secured(memory: Memory) -> Iterator[str]:
    with serve_in_thread(memory, token=TOKEN) as url:
        yield url


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"])
def test_loopback_names(host: str) -> None:
    assert is_loopback(host)
    check_bind(host, None)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10", "example.org"])
def test_non_loopback_bind_needs_a_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ServeRefused, match="token"):
        check_bind(host, None)
    with pytest.raises(ServeRefused):
        check_bind(host, "")
    for weak in ("a-token", "x", " " * 20, "fifteen-chars-x"):
        with pytest.raises(ServeRefused, match="too short"):
            check_bind(host, weak)
    check_bind(host, "sixteen-chars-xy")


def test_token_required_everywhere_but_health(secured: str) -> None:
    with httpx.Client(base_url=secured) as http:
        assert http.get("/health").text == "ok"
        for method, path in [
            ("GET", "/banks"),
            ("GET", "/openapi.json"),
            ("POST", "/banks/a/recall"),
            ("GET", "/banks/a/stats"),
            ("POST", "/mcp"),
            ("POST", "/mcp/a"),
        ]:
            r = http.request(method, path, json={"query": "x"})
            assert r.status_code == 401, (method, path)
            assert r.headers["www-authenticate"] == "Bearer"
            assert r.json() == {"error": "a bearer token is required"}
        bad = http.get("/banks", headers={"Authorization": "Bearer wrong"})
        assert bad.status_code == 401
        basic = http.get("/banks", headers={"Authorization": f"Basic {TOKEN}"})
        assert basic.status_code == 401
        good = http.get("/banks", headers={"Authorization": f"Bearer {TOKEN}"})
        assert good.status_code == 200 and good.json() == []
        lower = http.get("/banks", headers={"Authorization": f"bearer {TOKEN}"})
        assert lower.status_code == 200


def test_foreign_host_header_is_refused(client: httpx.Client) -> None:
    r = client.get("/banks", headers={"Host": "attacker.example:8888"})
    assert r.status_code == 421
    assert client.get("/banks", headers={"Host": "localhost:8888"}).status_code == 200


def test_cross_origin_browser_requests_are_refused(client: httpx.Client) -> None:
    r = client.post(
        "/banks/a/retain", json={"content": "x"}, headers={"Origin": "https://attacker.example"}
    )
    assert r.status_code == 403
    r = client.get("/banks", headers={"Origin": "null"})
    assert r.status_code == 403
    # Another port on localhost is another origin (issue 19); only the server's own is let in.
    r = client.post(
        "/banks/a/retain", json={"content": "x"}, headers={"Origin": "http://localhost:3000"}
    )
    assert r.status_code == 403
    own = str(client.base_url).rstrip("/")
    port = client.base_url.port
    for origin in (own, f"http://localhost:{port}", f"http://[::1]:{port}"):
        r = client.post("/banks/a/retain", json={"content": "x"}, headers={"Origin": origin})
        assert r.status_code == 200, origin
    for origin in (f"https://127.0.0.1:{port}", f"http://127.0.0.1:{port + 1}", "http://127.0.0.1"):
        r = client.post("/banks/a/retain", json={"content": "x"}, headers={"Origin": origin})
        assert r.status_code == 403, origin


def test_serve_cli_refuses_public_bind_without_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memwire.__main__ import main

    monkeypatch.delenv("MEMWIRE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--db", ":memory:"]) == 2
    assert "token" in capsys.readouterr().err
