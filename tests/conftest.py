"""Shared fixtures (every kernel test runs on both backends) and the two passes of ``make test``.

Two passes
----------
``make test`` runs pytest twice: first every test with ``MEMWIRE_BACKEND=rust``, then with
``MEMWIRE_BACKEND=python`` only the tests that depend on it (``-m "not both_kernels and not
backend_independent"``). At collection every test gets exactly one of three markers:

- ``both_kernels``: the test covers both kernels in one run, so the first pass is enough. Given
  to a test that uses a fixture in ``BOTH_KERNELS_FIXTURES`` (each runs the test once per
  backend, or hands it both kernels), to every test under ``BOTH_KERNELS_PATHS``, or by hand.
- ``backend_independent``: it runs no kernel that ``MEMWIRE_BACKEND`` picks (static checks,
  packaging, code that never opens a store, children started with their own environment).
  Given to every test under ``BACKEND_INDEPENDENT_PATHS``, or by hand.
- ``backend_chosen``: everything else. It runs on the kernel ``MEMWIRE_BACKEND`` picks, so it
  runs in both passes. A new test lands here unless it says otherwise: it can cost time, never
  coverage.

The first two are claims the suite checks rather than trusts: such a test runs with
``MEMWIRE_BACKEND`` set to a value no kernel answers to and the process-wide choice forgotten,
so a test (or a child process inheriting its environment) that reaches for the chosen kernel
fails with a BackendError naming ``NOT_CHOSEN``; mark it ``backend_chosen`` instead. The first
pass has no ``-m``, and tests/test_passes.py checks against the Makefile itself that every test
runs in at least one pass. Each run ends with a line counting what it ran of each kind.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections import Counter
from pathlib import Path

import memwire
import pytest
from backends import BACKENDS
from memwire._kernel import backend as _backend
from memwire._kernel.backend import load_kernel
from memwire._kernel.contract import Kernel

# The store setting of whoever runs the tests must not leak into them (memwire.locations):
# tests that want one set $MEMWIRE_STORE, or $MEMWIRE_HOME with a memwire.toml, themselves.
os.environ.pop("MEMWIRE_STORE", None)

TESTS = Path(__file__).resolve().parent
SOURCE = TESTS.parent / "python"

KINDS = ("both_kernels", "backend_independent", "backend_chosen")
# Fixtures parametrised over both backends (or giving both kernels at once).
BOTH_KERNELS_FIXTURES = frozenset({"kernel", "both_kernels", "backend", "any_backend"})
# Paths relative to tests/; a trailing slash means the whole directory.
BOTH_KERNELS_PATHS = (
    "parity/",  # the differential suite: compares the two kernels in every test
    "api/test_durability.py",  # the rest of these modules use the backend fixture; these
    "api/test_memory.py",  # also hold tests that open both kernels by name, or need no kernel
    "dense/",
)
BACKEND_INDEPENDENT_PATHS = (
    "test_layers.py",  # reads the source
    "test_packaging.py",  # builds the pure wheel, reads package data
    "test_readme.py",  # child with its own environment (backend: auto)
    "test_offline.py",  # children with their own environment (backend: auto)
    "test_backend.py",  # sets MEMWIRE_BACKEND itself, in every test
    "test_passes.py",  # collects the suite
    "api/test_redact.py",  # pure functions, no store
    "api/test_validation.py",  # pure functions, no store
    "connect/",  # host config files; children without MEMWIRE_* variables
    "eval/test_metrics.py",  # arithmetic on rankings
    "hooks/test_units.py",  # payload parsing and formatting, no store
    "embed_extra/",  # the optional embedder, on backend="python" by name
)
# What MEMWIRE_BACKEND holds while a both_kernels or backend_independent test runs.
NOT_CHOSEN = "none-for-both_kernels-and-backend_independent-tests-see-tests/conftest.py"

_COLLECTED = pytest.StashKey[Counter[str]]()
_SELECTED = pytest.StashKey[Counter[str]]()


def pytest_configure(config: pytest.Config) -> None:
    # make test sets this: the package under test must be the installed one, not the sources
    # (an editable install would import python/memwire and test nothing about the wheel).
    if os.environ.get("MEMWIRE_TEST_INSTALLED") == "1":
        found = Path(memwire.__file__).resolve()
        roots = {Path(sysconfig.get_path(k)).resolve() for k in ("purelib", "platlib")}
        if found.is_relative_to(SOURCE) or not any(found.is_relative_to(r) for r in roots):
            raise pytest.UsageError(
                f"MEMWIRE_TEST_INSTALLED=1 but memwire was imported from {found.parent}, not "
                f"from the site-packages of {sys.executable} (run the tests with make test)"
            )


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [
        f"memwire {memwire.__version__} from {os.path.dirname(memwire.__file__)}",
        f"backend in use: {memwire.backend_info()}",
        f"kernels under test: {', '.join(BACKENDS)}",
    ]


def _under(item: pytest.Item, paths: tuple[str, ...]) -> bool:
    try:
        rel = item.path.resolve().relative_to(TESTS).as_posix()
    except ValueError:
        return False
    return any(rel.startswith(p) if p.endswith("/") else rel == p for p in paths)


def kind_of(item: pytest.Item) -> str:
    """The one kind of ``item``: a marker on the test itself first, then fixtures, then paths."""
    marked = [k for k in KINDS if item.get_closest_marker(k) is not None]
    if len(marked) > 1:
        raise pytest.UsageError(f"{item.nodeid} is marked {' and '.join(marked)}; choose one")
    if marked:
        return marked[0]
    fixtures = set(getattr(item, "fixturenames", ()))
    if fixtures & BOTH_KERNELS_FIXTURES or _under(item, BOTH_KERNELS_PATHS):
        return "both_kernels"
    if _under(item, BACKEND_INDEPENDENT_PATHS):
        return "backend_independent"
    return "backend_chosen"


@pytest.hookimpl(tryfirst=True)  # before -m deselects on these markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    counts: Counter[str] = Counter()
    for item in items:
        kind = kind_of(item)
        if item.get_closest_marker(kind) is None:
            item.add_marker(kind)
        counts[kind] += 1
    config.stash[_COLLECTED] = counts


def pytest_collection_finish(session: pytest.Session) -> None:
    session.config.stash[_SELECTED] = Counter(kind_of(item) for item in session.items)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    collected = config.stash.get(_COLLECTED, None)
    selected = config.stash.get(_SELECTED, None)
    if collected is None or selected is None:
        return
    kinds = ", ".join(f"{k} {selected[k]}/{collected[k]}" for k in KINDS)
    backend = os.environ.get("MEMWIRE_BACKEND", "(unset)")
    terminalreporter.write_line(
        f"memwire pass, MEMWIRE_BACKEND={backend}: ran {sum(selected.values())} of "
        f"{sum(collected.values())} collected tests (by kind, ran/collected: {kinds})"
    )


@pytest.fixture(autouse=True)
def _backend_claim(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test that claims not to need the chosen kernel gets none to choose (see the top)."""
    if request.node.get_closest_marker("backend_chosen") is None:
        monkeypatch.setenv("MEMWIRE_BACKEND", NOT_CHOSEN)
        monkeypatch.setattr(_backend, "_chosen", None)


@pytest.fixture(params=BACKENDS)
def kernel(request: pytest.FixtureRequest) -> Kernel:
    """Each backend's kernel module, one test run per backend."""
    return load_kernel(request.param)


@pytest.fixture(scope="session")
def both_kernels() -> tuple[Kernel, Kernel]:
    """(rust, python) for differential tests; skipped where the extension is not built."""
    if "rust" not in BACKENDS:
        pytest.skip("the Rust extension is not built")
    return load_kernel("rust"), load_kernel("python")
