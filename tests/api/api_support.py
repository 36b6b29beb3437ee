"""Helpers shared by the Memory API tests (imported by conftest and the test modules)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import memwire

# Children import the very memwire this test process imported (the installed package in
# CI, the source tree in an editable install), never the source tree behind its back.
PYTHON_DIR = Path(memwire.__file__).resolve().parent.parent

from backends import BACKENDS  # noqa: E402
from memwire.records import Hit  # noqa: E402

__all__ = ["BACKENDS", "PYTHON_DIR", "child_env", "lexical", "run_and_kill"]


def child_env() -> dict[str, str]:
    """The environment for subprocesses that import memwire from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PYTHON_DIR), env.get("PYTHONPATH", "")) if p
    )
    return env


def lexical(hits: list[Hit]) -> list[Hit]:
    """The hits a word of the query matched (BM25 or overlap). With the dense stream on
    (the default) recall also returns the nearest memories by meaning, so "no memory mentions
    this" is asserted on these."""
    return [h for h in hits if h.bm25_rank or h.overlap_rank]


def run_and_kill(script: str, args: list[str], at_least: int) -> dict[int, str]:
    """Run ``script`` (which prints ``<n> <memory id>`` per acknowledged retain) in a child,
    SIGKILL it once ``at_least`` ids were printed, and return every acknowledged id by number."""
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    acknowledged: dict[int, str] = {}
    assert child.stdout is not None
    try:
        for line in child.stdout:
            number, mid = line.split()
            acknowledged[int(number)] = mid
            if len(acknowledged) >= at_least:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        rest, err = child.communicate()
    for line in rest.splitlines():  # ids printed before the kill landed were acknowledged too
        parts = line.split()
        if len(parts) == 2:
            acknowledged[int(parts[0])] = parts[1]
    assert child.returncode == -signal.SIGKILL, err
    return acknowledged
