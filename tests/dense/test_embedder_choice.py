"""Choosing the embedder by configuration: the bank key ``embedder``, the store-wide default
(``Memory(embedder=...)``, ``MEMWIRE_EMBEDDER``), the tier that is not installed, and the rule
that a new bank takes the configured embedder while a bank with vectors keeps its own until
``reembed``. The ``minilm`` tier's loader is replaced by a small user embedder where a test
needs it installed (CI installs no ``[embed]`` extra); what is checked is the choice."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from dense_support import TinyEmbedder, bank_space, stored_vectors
from memwire import Memory
from memwire.embed import minilm, tiers
from memwire.embed.minilm import EmbedExtraMissing
from memwire.embed.static import MODEL_ID as STATIC_ID
from memwire.errors import InvalidInputError

FAKE = TinyEmbedder("fake-minilm", dim=12)


@pytest.fixture
def minilm_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``minilm`` tier as if the extra were installed, answering with :data:`FAKE`."""
    real_load, real_tier_of = tiers.load, tiers.tier_of
    monkeypatch.setattr(tiers, "check_installed", lambda tier: None)
    monkeypatch.setattr(
        tiers,
        "load",
        lambda tier, backend=None: FAKE if tier == "minilm" else real_load(tier, backend),
    )
    monkeypatch.setattr(tiers, "tier_of", lambda i: "minilm" if i == FAKE.id else real_tier_of(i))


@pytest.fixture
def minilm_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)


def test_default_is_static_and_none_turns_new_banks_off(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        assert m.embedder_id == STATIC_ID
        m.retain("the deploy key rotates monthly", bank="old")
    with Memory(db_path, backend=backend, embedder="none") as m:
        assert m.embedder_id is None
        m.retain("staging runs on eu-west-1", bank="new")
        m.retain("the cache is flushed nightly", bank="old")  # keeps its recorded embedder
        assert m.recall("deploy key", bank="old")[0].content.startswith("the deploy key")
    assert bank_space(db_path, "new") == (None, 0)
    assert list(stored_vectors(db_path, "new").values()) == [None]
    assert bank_space(db_path, "old")[0] == STATIC_ID
    assert None not in stored_vectors(db_path, "old").values()


def test_environment_variable_is_the_default(
    db_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_EMBEDDER", "none")
    with Memory(db_path, backend=backend) as m:
        m.retain("a note without a vector")
        # an argument wins over the environment
    with Memory(db_path, backend=backend, embedder="static") as m:
        m.retain("a note with a vector", bank="other")
    assert bank_space(db_path) == (None, 0)
    assert bank_space(db_path, "other")[0] == STATIC_ID
    monkeypatch.setenv("MEMWIRE_EMBEDDER", "bert")
    with pytest.raises(InvalidInputError, match="MEMWIRE_EMBEDDER must be one of"):
        Memory(db_path, backend=backend)


def test_bank_key_wins_over_the_default(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend, embedder="none") as m:
        m.set_config("on", {"embedder": "static"})
        m.retain("the invoice job runs at midnight", bank="on")
        m.set_config("off", {"embedder": "none"})
    with Memory(db_path, backend=backend) as m:
        m.retain("nothing to embed here", bank="off")
    assert bank_space(db_path, "on")[0] == STATIC_ID
    assert bank_space(db_path, "off") == (None, 0)


def test_missing_tier_names_the_install_command(
    db_path: Path, backend: str, minilm_missing: None
) -> None:
    with pytest.raises(EmbedExtraMissing) as caught:
        Memory(db_path, backend=backend, embedder="minilm")
    assert minilm.INSTALL_HINT in str(caught.value)
    with Memory(db_path, backend=backend) as m:
        m.set_config("b", {"ttl_days": 3})
        with pytest.raises(InvalidInputError) as refused:
            m.set_config("b", {"embedder": "minilm", "ttl_days": 9})
        assert minilm.INSTALL_HINT in str(refused.value)
        assert m.get_config("b") == {"ttl_days": 3}  # nothing changed
        with pytest.raises(EmbedExtraMissing):
            m.reembed("b", embedder="minilm")


def test_new_bank_takes_the_configured_tier_and_old_keeps_its_own(
    db_path: Path, backend: str, minilm_installed: None
) -> None:
    with Memory(db_path, backend=backend) as m:
        m.retain("bob is allergic to peanuts", bank="notes")
    with Memory(db_path, backend=backend, embedder="minilm") as m:
        assert m.embedder_id == FAKE.id
        m.retain("alice prefers dark mode", bank="fresh")
        m.retain("carol works from lisbon", bank="notes")
        assert bank_space(db_path, "fresh") == (FAKE.id, FAKE.dim)
        assert bank_space(db_path, "notes")[0] == STATIC_ID  # kept until reembed
        assert m.recall("peanuts allergy", bank="notes")[0].content.startswith("bob")
        # reembed with the bank's key (set here), else the default, moves it over
        m.set_config("notes", {"embedder": "minilm"})
    with Memory(db_path, backend=backend) as m:
        assert m.reembed("notes") == 2
        assert bank_space(db_path, "notes") == (FAKE.id, FAKE.dim)
        # a plain Memory (default static) uses each bank's recorded tier
        m.retain("dave likes tea", bank="notes")
        assert bank_space(db_path, "notes") == (FAKE.id, FAKE.dim)
        assert m.reembed("fresh", embedder="static") == 1
        assert bank_space(db_path, "fresh")[0] == STATIC_ID


def test_a_users_embedder_does_not_take_over_a_tier_bank(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        m.retain("the build cache lives in s3", bank="notes")
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("mine", dim=8)) as m:
        m.retain("the linter runs before tests", bank="notes")
        m.retain("a bank of my own", bank="mine")
    assert bank_space(db_path, "notes")[0] == STATIC_ID
    assert bank_space(db_path, "mine") == ("mine", 8)
    with (
        Memory(db_path, backend=backend) as m,  # "mine" cannot be loaded here: refused
        pytest.raises(InvalidInputError, match="holds vectors of embedder 'mine'"),
    ):
        m.retain("x", bank="mine")


# -- the doors ---------------------------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from memwire.__main__ import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_option_and_environment(
    db_path: Path, backend: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_BACKEND", backend)
    monkeypatch.setenv("MEMWIRE_BANK", "default")  # not the checkout's project bank
    db = str(db_path)
    assert run(capsys, "retain", "no vector here", "--db", db, "--embedder", "none")[0] == 0
    assert run(capsys, "--embedder", "static", "retain", "a vector", "--db", db, "-b", "v")[0] == 0
    monkeypatch.setenv("MEMWIRE_EMBEDDER", "none")
    assert run(capsys, "retain", "from the environment", "--db", db, "-b", "env")[0] == 0
    assert bank_space(db_path) == (None, 0)
    assert bank_space(db_path, "v")[0] == STATIC_ID
    assert bank_space(db_path, "env") == (None, 0)
    code, _, err = run(capsys, "retain", "x", "--db", db, "--embedder", "bert")
    assert code == 2 and "invalid choice: 'bert'" in err


def test_cli_reembed_takes_the_option(
    db_path: Path, backend: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMWIRE_BACKEND", backend)
    monkeypatch.setenv("MEMWIRE_BANK", "default")  # not the checkout's project bank
    db = str(db_path)
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("mine", dim=8)) as m:
        m.retain("the linter runs before tests")
    code, _, err = run(capsys, "reembed", "--db", db, "--embedder", "static", "--no-progress")
    assert code == 0, err
    assert bank_space(db_path)[0] == STATIC_ID


def test_cli_and_serve_name_the_install_command(
    db_path: Path,
    backend: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    minilm_missing: None,
) -> None:
    monkeypatch.setenv("MEMWIRE_BACKEND", backend)
    db = str(db_path)
    code, _, err = run(capsys, "retain", "x", "--db", db, "--embedder", "minilm")
    assert code == 2 and minilm.INSTALL_HINT in err
    code, _, err = run(capsys, "serve", "--db", db, "--port", "0", "--embedder", "minilm")
    assert code == 2 and minilm.INSTALL_HINT in err
    code, _, err = run(capsys, "config", "--db", db, "--set", "embedder=minilm")
    assert code == 2 and minilm.INSTALL_HINT in err


def test_http_config_refuses_a_missing_tier(
    db_path: Path, backend: str, minilm_missing: None
) -> None:
    import httpx
    from memwire.server.testing import serve_in_thread

    with Memory(db_path, backend=backend) as m, serve_in_thread(m) as url:
        r = httpx.put(f"{url}/banks/b/config", json={"embedder": "minilm"}, timeout=30)
        assert r.status_code == 400 and minilm.INSTALL_HINT in r.json()["error"]
        r = httpx.put(f"{url}/banks/b/config", json={"embedder": "bert"}, timeout=30)
        assert r.status_code == 400
        assert r.json()["error"] == "embedder must be one of 'static', 'minilm', 'none', got 'bert'"
        r = httpx.put(f"{url}/banks/b/config", json={"embedder": "none"}, timeout=30)
        assert r.status_code == 200 and r.json() == {"embedder": "none"}


def test_a_minilm_bank_without_the_extra_is_a_clear_error(
    db_path: Path, backend: str, minilm_installed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Memory(db_path, backend=backend, embedder="minilm") as m:
        m.retain("alice prefers dark mode", bank="m")
    # the extra goes away: the bank's recorded tier cannot load
    monkeypatch.setattr(minilm.importlib.util, "find_spec", lambda name: None)

    def load(tier: str, backend: str | None = None) -> object:
        minilm.check_installed()
        return FAKE

    monkeypatch.setattr(tiers, "load", load)
    with Memory(db_path, backend=backend) as m:
        for attempt in (lambda: m.retain("more", bank="m"), lambda: m.recall("dark", bank="m")):
            with pytest.raises(InvalidInputError) as caught:
                attempt()
            assert str(caught.value).startswith("bank 'm': the MiniLM embedder needs")
            assert minilm.INSTALL_HINT in str(caught.value)
        assert m.stats(bank="m")["count"] == 1
        m.set_config("m", {"embedder": "none"})  # the way to use it lexically meanwhile
        assert m.recall("dark mode", bank="m")[0].content == "alice prefers dark mode"
