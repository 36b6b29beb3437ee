"""Every command group is an ordinary part of the CLI: none is optional, none can vanish."""

from __future__ import annotations

import pkgutil

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
    assert modules == {group.__name__.rsplit(".", 1)[1] for group in _GROUPS}
    assert {"hook", "connect"} <= modules


def test_hook_and_connect_are_listed_in_help() -> None:
    text = build_parser().format_help()
    for command in ("hook", "connect", "serve", "daemon"):
        assert f"    {command}" in text, command
