#!/usr/bin/env python3
"""Install a built wheel into a fresh virtualenv per CPython and run tests against it.

    python scripts/wheel_matrix.py dist/memwire-V-cp311-abi3-manylinux_2_28_x86_64.whl \
        --python 3.11 --python 3.12 --python 3.13 [-- PYTEST ARGS]
    python scripts/wheel_matrix.py dist/memwire-V-py3-none-any.whl --python 3.11

A platform wheel runs with ``MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust`` (an extension that
fails to load fails the run) and by default the golden vectors, the parity suite, backend
selection and packaging: the tests whose results must be bit-identical on every interpreter
(Python 3.12 and 3.13 change Unicode data and float ``sum()``). The pure wheel runs the whole
suite with ``MEMWIRE_BACKEND=python`` in a virtualenv where no extension exists.

Each virtualenv (rust/target/wheel-venvs/) gets the wheel with its [test] extra, pinned by
requirements-dev.txt; pytest imports memwire from there (``MEMWIRE_TEST_INSTALLED=1``), never
from python/. An interpreter is found as ``python3.X`` on PATH or under pyenv.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = ROOT / "requirements-dev.txt"
PLATFORM_TESTS = ["tests/parity", "tests/test_backend.py", "tests/test_packaging.py"]


def interpreter(version: str) -> str:
    # pyenv's own installs first: its shims on PATH answer only for the selected versions.
    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates = sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"))
    if candidates:
        return candidates[-1]
    found = shutil.which(f"python{version}")
    if found is None:
        sys.exit(f"no CPython {version}: neither under {pyenv} nor python{version} on PATH")
    return found


def summary(output: str) -> str:
    """pytest's closing counts, e.g. ``329 passed, 2 skipped``."""
    found = re.findall(r"^=*\s*(\d+ (?:passed|failed|error).*?) in [\d.]+s", output, re.M)
    return found[-1] if found else "no summary"


def run_one(wheel: Path, version: str, pytest_args: list[str]) -> tuple[str, int, str, float]:
    python = interpreter(version)
    venv = ROOT / "rust" / "target" / "wheel-venvs" / f"py{version}"
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    vpy = str(venv / "bin" / "python")
    pins = ["-c", str(PINS)] if PINS.exists() else []
    subprocess.run(
        [vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins, f"{wheel}[test]"],
        check=True,
    )
    pure = wheel.name.endswith("-py3-none-any.whl")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    env.update(MEMWIRE_TEST_INSTALLED="1", PYTHONDONTWRITEBYTECODE="1")
    env.update({"MEMWIRE_BACKEND": "python"} if pure else {"MEMWIRE_BACKEND": "rust"})
    if not pure:
        env["MEMWIRE_REQUIRE_RUST"] = "1"
    tests = pytest_args or ([] if pure else PLATFORM_TESTS)
    cmd = [vpy, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    print(proc.stdout[-3000:], flush=True)
    version_line = subprocess.run(
        [vpy, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return version_line, proc.returncode, summary(proc.stdout), time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path)
    parser.add_argument("--python", action="append", required=True, help="3.11, 3.12...")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (after --)")
    args = parser.parse_intermixed_args()  # pytest arguments may follow the options
    wheel = args.wheel.resolve()
    rows = [run_one(wheel, v, args.pytest_args) for v in args.python]
    print(f"\n{wheel.name}:")
    for full, code, counts, seconds in rows:
        state = "ok" if code == 0 else f"FAILED (exit {code})"
        print(f"  CPython {full}: {state}, {counts}, {seconds:.0f} s with the install")
    return max(code for _, code, _, _ in rows)


if __name__ == "__main__":
    sys.exit(main())
