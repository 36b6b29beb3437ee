"""Input edges of the HTTP door (issue 19): each gets a clear 4xx and changes nothing."""

from __future__ import annotations

import httpx
import pytest
from memwire.errors import InvalidInputError
from memwire.memory import Memory
from memwire.server.testing import serve_in_thread


def test_huge_integer_literal_is_a_400(client: httpx.Client, memory: Memory) -> None:
    body = '{"query": "x", "limit": ' + "9" * 5001 + "}"
    r = client.post("/banks/big/recall", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert r.json() == {"error": "invalid JSON: an integer of more than 20 digits"}
    body = '{"content": "x", "tags": [' + "1" * 30 + "]}"
    r = client.post("/banks/big/retain", content=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    assert memory.banks() == []
    # An ordinary integer still parses.
    assert client.post("/banks/big/recall", json={"query": "x", "limit": 3}).json() == []


@pytest.mark.parametrize(
    "path", ["/banks/a%FFb/retain", "/banks/a%C3b/retain", "/banks/ok/retain?x=%FE"]
)
def test_url_that_is_not_utf8_is_refused(client: httpx.Client, memory: Memory, path: str) -> None:
    r = client.post(path, json={"content": "hello"})
    assert r.status_code == 400
    assert r.json() == {"error": "the URL is not valid UTF-8 once percent-decoded"}
    assert memory.banks() == []


def test_percent_encoded_utf8_bank_names_work(client: httpx.Client, memory: Memory) -> None:
    r = client.post("/banks/caf%C3%A9/retain", json={"content": "espresso at nine"})
    assert r.status_code == 200
    assert memory.banks() == ["café"]


def test_a_bank_http_could_not_address_is_refused_everywhere(
    client: httpx.Client, memory: Memory
) -> None:
    for bank in ("x/memories/y", "x/memories"):
        r = client.post(f"/banks/{bank}/retain", json={"content": "hello"})
        assert r.status_code == 400
        assert "/memories/<name>" in r.json()["error"]
        with pytest.raises(InvalidInputError, match="could not address"):
            memory.retain("hello", bank=bank)
    assert memory.banks() == []


@pytest.mark.parametrize(
    "bank", ["memories", "memories/x", "a/memories/b/c", "a/retain", "a/stats/b"]
)
def test_every_bank_it_creates_can_be_read_and_deleted(
    client: httpx.Client, memory: Memory, bank: str
) -> None:
    r = client.post(f"/banks/{bank}/retain", json={"content": "the relay runs at dawn"})
    assert r.status_code == 200
    memory_id = r.json()["id"]
    assert client.get(f"/banks/{bank}/memories/{memory_id}").json()["id"] == memory_id
    hits = client.post(
        f"/banks/{bank}/recall", json={"query": "relay dawn", "format": "full"}
    ).json()
    assert [hit["id"] for hit in hits] == [memory_id]
    assert client.get(f"/banks/{bank}/stats").json()["count"] == 1
    assert client.delete(f"/banks/{bank}").json() == {"bank": bank, "deleted": True}
    assert memory.banks() == []


def test_a_server_on_another_loopback_address_answers_its_own_host(memory: Memory) -> None:
    with serve_in_thread(memory, host="127.0.0.2") as url, httpx.Client(base_url=url) as http:
        assert http.get("/banks").status_code == 200
        assert http.get("/banks", headers={"Host": "localhost"}).status_code == 200
        r = http.get("/banks", headers={"Host": "127.0.0.3"})
        assert r.status_code == 421
