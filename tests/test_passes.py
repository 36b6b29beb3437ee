"""Every test runs in at least one of the two pytest passes of ``make test``.

The passes are read from the Makefile itself (``make -n test-python`` prints the commands it
would run) and each is collected as it would run, so a marker expression that deselects a test
from both passes fails here instead of dropping it silently (tests/conftest.py, "Two passes").
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COLLECT = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]


def make_passes() -> list[tuple[dict[str, str], list[str]]]:
    """(environment, pytest arguments) of each pytest command in ``make test-python``."""
    make = shutil.which("make")
    if make is None:
        pytest.skip("make is not installed")
    out = subprocess.run(
        [make, "-n", "-s", "test-python", f"TEST_PYTHON={sys.executable}", "PYTEST_ARGS="],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    passes = []
    for command in out.stdout.replace("\\\n", " ").splitlines():
        words = shlex.split(command)
        if "pytest" not in words:
            continue
        at = words.index(sys.executable)
        assert words[at + 1 : at + 3] == ["-m", "pytest"], command
        env = dict(word.split("=", 1) for word in words[:at])
        passes.append((env, words[at + 3 :]))
    return passes


_NOT_SELECTING = ("MEMWIRE_TEST_INSTALLED", "MEMWIRE_REQUIRE_RUST")


def collect(runs: list[tuple[dict[str, str], list[str]]]) -> list[set[str]]:
    """The test ids each (environment, arguments) run collects; the runs go side by side."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    children = [
        subprocess.Popen(
            [*COLLECT, *args],
            cwd=ROOT,
            # Where memwire is imported from changes nothing in what a pass selects, nor does
            # requiring the Rust kernel (absent where the pure wheel alone is installed).
            env={**base, **{k: v for k, v in env.items() if k not in _NOT_SELECTING}},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for env, args in runs
    ]
    found = []
    for child in children:
        out, err = child.communicate(timeout=300)
        assert child.returncode == 0, out[-2000:] + err[-2000:]
        found.append({line for line in out.splitlines() if "::" in line})
    return found


def test_every_test_runs_in_a_pass() -> None:
    passes = make_passes()
    assert [env.get("MEMWIRE_BACKEND") for env, _ in passes] == ["rust", "python"]
    # The whole suite is what pytest collects given no arguments at all; what is collected does
    # not depend on MEMWIRE_BACKEND (tests/backends.py looks only at the extension).
    everything, *selected = collect([(passes[0][0], []), *(p for p in passes if p[1])])
    assert all(selected), "a pass selects no test"
    ran = set().union(*selected, *(everything for _, args in passes if not args))
    missing = sorted(everything - ran)
    assert not missing, f"{len(missing)} tests run in neither pass, e.g. {missing[:10]}"
