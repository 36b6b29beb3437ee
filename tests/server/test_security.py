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
    check_bind(host, "a-token")


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
    r = client.post(
        "/banks/a/retain", json={"content": "x"}, headers={"Origin": "http://localhost:3000"}
    )
    assert r.status_code == 200


def test_serve_cli_refuses_public_bind_without_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memwire.__main__ import main

    monkeypatch.delenv("MEMWIRE_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--db", ":memory:"]) == 2
    assert "token" in capsys.readouterr().err
