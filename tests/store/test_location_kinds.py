"""Which locations name the PostgreSQL store: one test (memwire.locations.is_postgres_url) for
the store, the server, the CLI and the hooks, so that none takes for a file what the store
opens as a URL."""

from __future__ import annotations

from pathlib import Path

import memwire.store
import pytest
from memwire.cli.daemon import _store_name
from memwire.errors import InvalidInputError
from memwire.locations import is_postgres_url, store_id
from memwire.store.postgres.store import PostgresStore

pytestmark = pytest.mark.backend_independent


@pytest.mark.parametrize(
    "location",
    [
        "postgresql://memwire@db.example/memwire",
        "postgres://memwire@db.example/memwire",
        "  postgresql://memwire:secret@db.example/memwire\n",
    ],
)
def test_postgres_urls_are_named_as_such(location: str) -> None:
    assert is_postgres_url(location)


@pytest.mark.parametrize(
    "location",
    [
        "memory.db",
        "sqlite:memory.db",
        ":memory:",
        "mysql://memwire@db.example/memwire",
        "/srv/postgresql://odd/name.db",
        Path("postgresql:"),
        None,
        b"postgresql://memwire@db.example/memwire",
    ],
)
def test_anything_else_is_not_a_postgres_url(location: object) -> None:
    assert not is_postgres_url(location)


def test_the_store_package_answers_with_the_same_test() -> None:
    assert memwire.store.is_postgres_url is is_postgres_url


def test_a_url_with_leading_spaces_is_never_echoed_with_its_password() -> None:
    # The daemon names the store it serves; a URL it took for a file was shown as given.
    assert _store_name("  postgresql://memwire:secret@db.example/memwire") == "a PostgreSQL store"


def test_the_store_id_of_a_url_ignores_its_password() -> None:
    one = store_id(" postgresql://memwire:secret@db.example/memwire")
    assert one == store_id("postgresql://memwire:other@db.example/memwire")


def test_the_postgres_store_refuses_anything_but_a_postgres_url() -> None:
    with pytest.raises(InvalidInputError, match="needs a postgresql:// URL"):
        PostgresStore("sqlite:memory.db")
