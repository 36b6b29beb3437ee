"""Opening a PostgreSQL store: locations, a missing psycopg, bad URLs; ``serve --store``. None of
these needs a server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from memwire.cli import main
from memwire.errors import InvalidInputError, StorageError, StoreUnavailableError
from memwire.store import open_store
from memwire.store.postgres import PostgresStore
from memwire.store.postgres.base import MISSING
from memwire.store.sqlite import SQLiteStore

pytestmark = pytest.mark.backend_independent

REFUSED = "postgresql://someone:hunter2@127.0.0.1:1/db"  # port 1: nothing listens


def test_without_psycopg_opening_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    with pytest.raises(StorageError) as caught:
        open_store(REFUSED)
    assert str(caught.value) == MISSING
    assert "pip install 'memwire-agent-memory[postgres]'" in MISSING


def test_an_unreachable_server_is_a_clear_error_without_the_url() -> None:
    with pytest.raises(StoreUnavailableError) as caught:
        open_store(REFUSED)
    message = str(caught.value)
    assert message == "the database cannot be reached; try again later"
    assert "hunter2" not in message and "someone" not in message


@pytest.mark.parametrize(
    ("url", "schema", "needle"),
    [
        ("sqlite:x.db", None, "needs a postgresql:// URL"),
        ("postgresql://127.0.0.1:1/db", "Bad-Name", "lower-case SQL identifier"),
        ("postgresql://127.0.0.1:1/db", "x; DROP TABLE banks", "lower-case SQL identifier"),
        ("postgresql://h/db?nosuchoption=hunter2", None, "URL is not valid"),
    ],
)
def test_bad_locations_are_invalid_input(url: str, schema: str | None, needle: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        PostgresStore(url, schema=schema)
    assert needle in str(caught.value) and "hunter2" not in str(caught.value)


def test_sqlite_prefix_names_a_file(tmp_path: Path) -> None:
    store = open_store(f"sqlite:{tmp_path / 'm.db'}")
    try:
        assert isinstance(store, SQLiteStore)
        store.write("b", [])
    finally:
        store.close()
    assert (tmp_path / "m.db").is_file()
    with pytest.raises(InvalidInputError, match="sqlite: needs a path"):
        open_store("sqlite:")


def test_serve_takes_a_store_or_a_db_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--store", REFUSED, "--db", "x.db"]) == 2
    assert "give --store or --db, not both" in capsys.readouterr().err


def test_serve_on_an_unreachable_database_fails_clearly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMWIRE_STORE", REFUSED)
    monkeypatch.setenv("MEMWIRE_BACKEND", "python")  # the Memory loads a kernel before the store
    assert main(["serve", "--port", "0"]) == 1
    err = capsys.readouterr().err
    assert "the database cannot be reached" in err and "hunter2" not in err
