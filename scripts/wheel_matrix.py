#!/usr/bin/env python3
"""Install a built wheel (or the sdist) into a fresh virtualenv per CPython and test it there.

    python scripts/wheel_matrix.py \
        dist/memwire_agent_memory-V-cp311-abi3-manylinux_2_28_x86_64.whl \
        --python 3.11 --python 3.12 --python 3.13 [-- PYTEST ARGS]
    python scripts/wheel_matrix.py dist/memwire_agent_memory-V-py3-none-any.whl --python 3.11
    python scripts/wheel_matrix.py dist/memwire_agent_memory-V.tar.gz --python 3.13

A platform wheel runs with ``MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust`` (an extension that
fails to load fails the run) and by default the golden vectors, the parity suite, backend
selection and packaging: the tests whose results must be bit-identical on every interpreter
(Python 3.12 and 3.13 change Unicode data and float ``sum()``). The pure wheel runs the whole
suite with ``MEMWIRE_BACKEND=python`` in a virtualenv where no extension exists. The sdist is
built by pip from source (Rust and a C++ compiler needed) and then tested as a platform wheel.
Before pytest, a smoke check in the virtualenv prints ``backend_info()`` and the install's tag
and fails the run unless the expected kernel (rust; python for the pure wheel) is the one in use.

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
from dataclasses import dataclass
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


# What the machine provides the suite (scripts/ci/): kept, so the PostgreSQL and browser tests
# run (and fail, not skip, when CI requires them). Every other MEMWIRE_ variable is dropped.
PASS_THROUGH = ("MEMWIRE_TEST_POSTGRES_URL", "MEMWIRE_REQUIRE_POSTGRES", "MEMWIRE_REQUIRE_BROWSER")
# Run in the virtualenv before pytest: the installed memwire, its kernel and how it was installed.
SMOKE = """
import sys, memwire
info = memwire.backend_info()
print(info, "|", info.wheel_tag, "|", memwire.__file__, flush=True)
assert info.name == sys.argv[1], f"backend {info.name}, expected {sys.argv[1]}"
assert not info.wheel_tag.startswith(("editable", "not installed")), info.wheel_tag
"""


@dataclass
class Row:
    python: str
    code: int
    counts: str
    install_s: float
    total_s: float


def run_one(artifact: Path, version: str, pytest_args: list[str]) -> Row:
    python = interpreter(version)
    venv = ROOT / "rust" / "target" / "wheel-venvs" / f"py{version}"
    shutil.rmtree(venv, ignore_errors=True)
    started = time.monotonic()
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    vpy = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k in PASS_THROUGH or not k.startswith("MEMWIRE_")}
    if artifact.name.endswith(".tar.gz"):
        # pip builds the sdist as a user's pip would (isolated build env, maturin from PyPI at
        # the pinned version), compiling the Rust crates and usearch's C++ from scratch.
        print(f"building {artifact.name} from source: Rust + C++, several minutes", flush=True)
        env["PIP_CONSTRAINT"] = str(PINS)
    subprocess.run(
        [vpy, "-m", "pip", "install", "-q", "--disable-pip-version-check", "-c", str(PINS),
         f"{artifact}[test]"],
        check=True,
        env=env,
    )  # fmt: skip
    installed = time.monotonic() - started
    pure = artifact.name.endswith("-py3-none-any.whl")
    env.update(MEMWIRE_TEST_INSTALLED="1", PYTHONDONTWRITEBYTECODE="1")
    env.update({"MEMWIRE_BACKEND": "python"} if pure else {"MEMWIRE_BACKEND": "rust"})
    if not pure:
        env["MEMWIRE_REQUIRE_RUST"] = "1"
    # Outside the checkout, so `import memwire` can only find the installed one.
    smoke = subprocess.run(
        [vpy, "-c", SMOKE, env["MEMWIRE_BACKEND"]], cwd=venv, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    print(smoke.stdout, end="", flush=True)
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
    code = proc.returncode or smoke.returncode
    counts = summary(proc.stdout) if smoke.returncode == 0 else "smoke check FAILED"
    return Row(version_line, code, counts, installed, time.monotonic() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="a wheel, or the sdist (built from source)")
    parser.add_argument("--python", action="append", required=True, help="3.11, 3.12...")
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (after --)")
    args = parser.parse_intermixed_args()  # pytest arguments may follow the options
    wheel = args.wheel.resolve()
    rows = [run_one(wheel, v, args.pytest_args) for v in args.python]
    print(f"\n{wheel.name}:")
    for row in rows:
        state = "ok" if row.code == 0 else f"FAILED (exit {row.code})"
        print(
            f"  CPython {row.python}: {state}, {row.counts}, {row.total_s:.0f} s "
            f"(install {row.install_s:.0f} s)"
        )
    return max(row.code for row in rows)


if __name__ == "__main__":
    sys.exit(main())
