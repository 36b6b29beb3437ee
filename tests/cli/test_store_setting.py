"""One store setting for every door (issue 14): an explicit location, else $MEMWIRE_STORE, else
``store`` in memwire.toml (in $MEMWIRE_HOME, else $XDG_CONFIG_HOME/memwire), else the default
file; honoured by Memory(), the CLI commands, ``serve`` and ``doctor``, which says where the
setting came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memwire import Memory
from memwire.cli import build_parser, main
from memwire.cli.serving import store_of
from memwire.errors import InvalidInputError
from memwire.locations import config_path, default_path, store_id, store_setting
from memwire.store.postgres import PostgresStore
from memwire.store.sqlite import SQLiteStore

pytestmark = pytest.mark.backend_independent


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    place = tmp_path / "home"
    place.mkdir()
    monkeypatch.setenv("MEMWIRE_HOME", str(place))
    monkeypatch.delenv("MEMWIRE_STORE", raising=False)
    monkeypatch.setenv("MEMWIRE_BACKEND", "python")
    return place


def configure(home: Path, text: str) -> Path:
    path = home / "memwire.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_precedence_argument_then_environment_then_file_then_default(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert store_setting() == (str(default_path()), "default")
    assert default_path() == home / "memory.db"
    path = configure(home, f'store = "sqlite:{tmp_path / "from-file.db"}"\n')
    assert config_path() == path
    assert store_setting() == (f"sqlite:{tmp_path / 'from-file.db'}", str(path))
    monkeypatch.setenv("MEMWIRE_STORE", "  postgresql://h/db  ")
    assert store_setting() == ("postgresql://h/db", "$MEMWIRE_STORE")
    assert store_setting(tmp_path / "given.db") == (str(tmp_path / "given.db"), "argument")
    # The short name two processes compare follows the same rule.
    assert store_id(None) == store_id("postgresql://h/db")


def test_the_config_file_without_memwire_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMWIRE_HOME", raising=False)
    monkeypatch.delenv("MEMWIRE_STORE", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert config_path() == tmp_path / "cfg" / "memwire" / "memwire.toml"
    config_path().parent.mkdir(parents=True)
    config_path().write_text('store = ":memory:"\n', encoding="utf-8")
    assert store_setting() == (":memory:", str(config_path()))


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("store = ", "not valid TOML"),
        ("store = 5", "'store' must be a non-empty string"),
        ('store = "  "', "'store' must be a non-empty string"),
    ],
)
def test_a_bad_config_file_is_a_clear_error(home: Path, text: str, needle: str) -> None:
    path = configure(home, text)
    with pytest.raises(InvalidInputError) as caught:
        store_setting()
    assert str(path) in str(caught.value) and needle in str(caught.value)
    with pytest.raises(InvalidInputError):
        Memory()


def test_a_config_file_without_a_store_key_is_the_default(home: Path) -> None:
    configure(home, "[other]\nkey = 1\n")
    assert store_setting().source == "default"


def test_memory_and_the_cli_open_the_configured_file(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "configured.db"
    configure(home, f"store = '{target}'\n")
    with Memory() as memory:
        kept = memory.retain("the configured store holds this")
    assert main(["recall", "configured store", "--json"]) == 0
    assert kept in {h["id"] for h in json.loads(capsys.readouterr().out)}
    store = SQLiteStore(str(target))
    try:
        assert store.get(kept) is not None
    finally:
        store.close()
    assert not default_path().exists()


def test_memory_and_the_cli_open_the_store_of_the_environment(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from postgres_support import connect, fresh_schema, postgres_url

    schema = fresh_schema()
    with connect() as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{postgres_url()}?options=-csearch_path%3D{schema}"
    configure(home, 'store = "sqlite:/nonexistent/never.db"\n')  # the environment wins
    monkeypatch.setenv("MEMWIRE_STORE", url)
    assert main(["retain", "the deploy freeze starts on friday", "--json"]) == 0
    kept = json.loads(capsys.readouterr().out)["id"]
    with Memory() as memory:
        assert isinstance(memory._store, PostgresStore)
        assert kept in {h.id for h in memory.recall("deploy freeze")}
    code = main(["doctor", "--json", "--port", "1"])
    report = json.loads(capsys.readouterr().out)
    checks = {c["name"]: c for c in report["checks"]}
    assert checks["store setting"]["source"] == "$MEMWIRE_STORE"
    assert "memwire_test@" in checks["store setting"]["location"]
    assert ":memwire_test@" not in checks["store setting"]["location"]  # no password
    assert checks["store health"]["memories"] == 1 and code == 0
    assert not default_path().exists()


def test_doctor_names_the_config_file(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = configure(home, f'store = "{tmp_path / "doc.db"}"\n')
    assert main(["retain", "x"]) == 0
    capsys.readouterr()
    main(["doctor", "--json", "--port", "1"])
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    assert checks["store setting"]["source"] == str(path)
    assert checks["store path"]["path"] == str(tmp_path / "doc.db")


def test_serve_takes_the_command_line_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWIRE_STORE", "postgresql://h/db")
    parse = build_parser().parse_args
    assert store_of(parse(["serve"])) is None  # resolved by store_setting, like every door
    assert store_of(parse(["serve", "--db", "x.db"])) == "x.db"
    assert store_of(parse(["--db", "y.db", "serve"])) == "y.db"
    assert store_of(parse(["serve", "--store", "sqlite:z.db"])) == "sqlite:z.db"
