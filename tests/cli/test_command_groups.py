"""Every command group is an ordinary part of the CLI: none is optional, none can vanish."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import memwire.cli
import pytest
from memwire.cli import _GROUPS, build_parser

pytestmark = pytest.mark.backend_independent  # builds the parser only


def test_every_group_module_is_registered() -> None:
    modules = {
        info.name
        for info in pkgutil.iter_modules(memwire.cli.__path__)
        if not info.name.startswith("_")
    }
    assert modules == set(_GROUPS)
    assert {"hook", "connect"} <= modules


def test_hook_and_connect_are_listed_in_help() -> None:
    text = build_parser().format_help()
    for command in ("hook", "connect", "serve", "daemon"):
        assert f"    {command}" in text, command


def test_hook_builds_only_its_own_group(tmp_path: Path) -> None:
    """`memwire hook prompt` runs before every prompt: through a server it imports no other
    command group, no kernel, no store and no server code."""
    code = (
        "import sys, memwire.cli as c; c.main(['hook', 'prompt']); "
        "print(sorted(m for m in sys.modules if m.startswith(('memwire.cli.', 'memwire.server', "
        "'memwire.memory', 'memwire.store', 'memwire._kernel', 'numpy'))))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    # a server that cannot be reached: the hook gives up on it, imports stay the same
    env.update(MEMWIRE_HOME=str(tmp_path), MEMWIRE_URL="http://127.0.0.1:9")
    done = subprocess.run(
        [sys.executable, "-c", code],
        input='{"session_id": "s", "prompt": "how do we deploy?", "cwd": "/"}',
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert loaded == "['memwire.cli._common', 'memwire.cli.doctor', 'memwire.cli.hook']", loaded


def test_serve_builds_only_its_own_group() -> None:
    """`memwire serve` imports no other command group (agent hosts, importers, HTTP client):
    its time to the first /health and its idle memory are measured (docs/BENCHMARKS.md). A
    non-loopback bind without a token is refused right after parsing, so nothing is served."""
    code = (
        "import sys, memwire.cli as c; code = c.main(['serve', '--host', '192.0.2.1']); "
        "print(code, sorted(m for m in sys.modules if m.startswith(('memwire.cli.', "
        "'memwire.hosts', 'memwire.importers', 'memwire.eval', 'memwire.connect'))))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    loaded = done.stdout.strip().splitlines()[-1]
    assert "a token" in done.stderr  # refused: the check ran, in the serving group
    assert loaded.endswith("['memwire.cli._common', 'memwire.cli.doctor', 'memwire.cli.serving']")
    assert not loaded.startswith("0 "), loaded


def test_embedder_option_lists_the_config_modes() -> None:
    # The option names its choices without importing memwire.config (the hook's path must not
    # load the kernel contract); the names must still be the config's.
    import argparse

    from memwire import config
    from memwire.cli._common import add_embedder

    parser = argparse.ArgumentParser()
    add_embedder(parser)
    action = next(a for a in parser._actions if a.dest == "embedder")
    assert action.metavar == "{" + ",".join(config.EMBEDDER_MODES) + "}"
    for mode in config.EMBEDDER_MODES:
        assert parser.parse_args(["--embedder", mode]).embedder == mode
