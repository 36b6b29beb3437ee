"""Backend selection: MEMWIRE_BACKEND, backend_info() and refusal of a stale extension."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
from backends import BACKENDS
from memwire.errors import BackendError


def fake_extension(monkeypatch: pytest.MonkeyPatch, module: types.ModuleType | None) -> None:
    """Make ``from memwire._kernel import _native`` find ``module`` (None: fail to import).

    The loader imports the extension by name, which looks at the package attribute before
    ``sys.modules``, so both are replaced."""
    import memwire._kernel as package

    monkeypatch.setitem(sys.modules, "memwire._kernel._native", module)
    if module is None:
        monkeypatch.delattr(package, "_native", raising=False)
    else:
        monkeypatch.setattr(package, "_native", module, raising=False)


def run_info(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "MEMWIRE_BACKEND"}
    if value is not None:
        env["MEMWIRE_BACKEND"] = value
    code = (
        "import memwire; i = memwire.backend_info(); print(i.name, i.requested, i.reason, sep='|')"
    )
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )


def test_python_on_request() -> None:
    out = run_info("python")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "python|python|MEMWIRE_BACKEND=python"


def test_unknown_value_is_an_error() -> None:
    out = run_info("fortran")
    assert out.returncode != 0
    assert "BackendError" in out.stderr
    assert "MEMWIRE_BACKEND='fortran' is not one of auto, rust, python" in out.stderr


@pytest.mark.skipif("rust" not in BACKENDS, reason="the Rust extension is not built")
def test_rust_is_the_default_after_a_normal_install() -> None:
    for value in (None, "auto", "RUST"):
        out = run_info(value)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split("|")[0] == "rust"


def test_stale_extension_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from memwire._kernel import backend as _backend

    fake = types.ModuleType("memwire._kernel._native")
    fake.CONTRACT_VERSION = -1  # type: ignore[attr-defined]
    fake.__version__ = "0.0.0"  # type: ignore[attr-defined]
    fake_extension(monkeypatch, fake)
    with pytest.raises(BackendError, match="kernel contract -1"):
        _backend.load_kernel("rust")
    fake.CONTRACT_VERSION = _backend.load_kernel("python").CONTRACT_VERSION  # type: ignore[attr-defined]
    with pytest.raises(BackendError, match=r"the Rust extension is version 0\.0\.0"):
        _backend.load_kernel("rust")


def test_rust_requested_but_missing_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from memwire._kernel import backend as _backend

    fake_extension(monkeypatch, None)  # the import now raises ImportError
    monkeypatch.setenv("MEMWIRE_BACKEND", "rust")
    monkeypatch.setattr(_backend, "_chosen", None)
    with pytest.raises(BackendError, match="not installed"):
        _backend.backend_info()
    monkeypatch.setenv("MEMWIRE_BACKEND", "auto")
    monkeypatch.setattr(_backend, "_chosen", None)
    info = _backend.backend_info()
    assert info.name == "python" and info.reason.startswith("fallback:")
