"""The database going away and coming back (issue 14): a clear error from the library, a 503 from
the server, no acknowledged write lost, and recovery without a restart."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from memwire import Memory
from memwire.errors import StorageError, StoreUnavailableError
from memwire.store.postgres import PostgresStore
from pg_servers import Proxy, free_port, proxied, scratch_url, start_server, stop, wait_healthy
from postgres_support import postgres_url

UNREACHABLE = "the database cannot be reached; try again later"


@pytest.fixture
def proxy() -> Iterator[Proxy]:
    relay = proxied(postgres_url())
    yield relay
    relay.cut()


def no_secrets(message: str, url: str) -> None:
    assert "memwire_test" not in message  # the role and password of the test URL
    assert url not in message and "SELECT" not in message and "Traceback" not in message


def test_the_library_says_the_database_is_unreachable_then_recovers(proxy: Proxy) -> None:
    url = proxy.url(scratch_url())
    with Memory(store=PostgresStore(url)) as memory:
        kept = memory.retain("the release train leaves on thursdays")
        assert [h.id for h in memory.recall("release train")] == [kept]

        proxy.cut()
        for attempt in (
            lambda: memory.retain("written while the database is away"),
            lambda: memory.recall("release train"),
            lambda: memory.get(kept),
        ):
            with pytest.raises(StoreUnavailableError) as caught:
                attempt()
            assert str(caught.value) == UNREACHABLE
            assert isinstance(caught.value, StorageError)
            no_secrets(str(caught.value), url)

        proxy.resume()  # the same Memory, the same store object: it reconnects by itself
        later = memory.retain("written after the database came back")
        assert {h.id for h in memory.recall("release train database")} >= {kept, later}
        assert memory.get(kept) is not None
        # The write refused during the outage was never stored.
        assert [r.content for r in memory.memories(limit=10)] == [
            "written after the database came back",
            "the release train leaves on thursdays",
        ]


def test_a_store_cannot_open_while_the_database_is_unreachable(proxy: Proxy) -> None:
    url = proxy.url(scratch_url())
    proxy.cut()
    with pytest.raises(StoreUnavailableError) as caught:
        PostgresStore(url)
    no_secrets(str(caught.value), url)


@pytest.mark.backend_independent  # the server is a child that picks its own kernel
def test_the_server_answers_503_while_the_database_is_away_and_recovers(proxy: Proxy) -> None:
    url = proxy.url(scratch_url())
    port = free_port()
    server = start_server(url, port)
    try:
        wait_healthy(server, port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            r = client.post("/banks/ops/retain", json={"content": "pager rota is on the wiki"})
            assert r.status_code == 200
            kept = r.json()["id"]

            proxy.cut()
            for method, path, body in (
                ("POST", "/banks/ops/retain", {"content": "lost in the outage"}),
                ("POST", "/banks/ops/recall", {"query": "pager rota"}),
                ("GET", f"/banks/ops/memories/{kept}", None),
            ):
                r = client.request(method, path, json=body)
                assert r.status_code == 503, (path, r.text)
                assert r.json() == {"error": UNREACHABLE}
                assert r.headers["retry-after"] == "1"
            assert client.get("/health").text == "ok"  # the process is alive

            proxy.resume()
            r = client.post("/banks/ops/recall", json={"query": "pager rota", "format": "full"})
            assert r.status_code == 200 and [h["id"] for h in r.json()] == [kept]
            r = client.post("/banks/ops/retain", json={"content": "back to normal"})
            assert r.status_code == 200
            assert client.get("/banks/ops/stats").json()["count"] == 2
    finally:
        err = stop(server)
    no_secrets(err, url)
