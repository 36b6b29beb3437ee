"""Packaging: one version everywhere; the pure wheel carries the whole package but no compiled
code, and its metadata matches pyproject.toml; package data (model files, skill) is where the
code looks for it."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import memwire
import tomllib

ROOT = Path(__file__).resolve().parent.parent


def cargo_version() -> str:
    """The one version source: rust/Cargo.toml's ``[workspace.package] version``."""
    cargo = tomllib.loads((ROOT / "rust" / "Cargo.toml").read_text(encoding="utf-8"))
    return str(cargo["workspace"]["package"]["version"])


def test_one_version_source() -> None:
    version = cargo_version()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    # pyproject states no version of its own: maturin fills it in from Cargo.toml.
    assert "version" not in project and "version" in project["dynamic"]
    assert memwire.__version__ == version
    # The installed metadata (built by maturin or the pure-wheel script) agrees.
    assert importlib.metadata.version("memwire") == version
    lock = (ROOT / "rust" / "Cargo.lock").read_text(encoding="utf-8")
    for crate in ("memwire-core", "memwire-py"):
        assert f'name = "{crate}"\nversion = "{version}"' in lock, crate


def test_python_range_is_what_the_pins_allow() -> None:
    # usearch==2.26.6 (the parity pin) ships files for CPython >= 3.11 only; the package, the
    # classifiers, the abi3 floor of the extension and the release builds all say the same.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == ">=3.11"
    minors = sorted(
        c.rsplit(".", 1)[1]
        for c in project["classifiers"]
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    )
    assert minors == ["11", "12", "13"]
    cargo = (ROOT / "rust" / "Cargo.toml").read_text(encoding="utf-8")
    assert '"abi3-py311"' in cargo and "abi3-py310" not in cargo
    cibw = tomllib.loads((ROOT / "cibuildwheel.toml").read_text(encoding="utf-8"))
    assert cibw["tool"]["cibuildwheel"]["build"].split() == ["cp311-*", "cp312-*", "cp313-*"]
    assert "MEMWIRE_REQUIRE_RUST=1" in cibw["tool"]["cibuildwheel"]["test-command"]


def test_pure_wheel(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_pure_wheel.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    wheel = Path(out.stdout.strip())
    assert wheel.name.endswith("-py3-none-any.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib"))]
    for needed in (
        "memwire/__init__.py",
        "memwire/_kernel/pure/_generated.py",
        "memwire/_kernel/_native.pyi",
        "memwire/py.typed",
        "memwire/models/minilm_static_256_int8/model.safetensors",
        "memwire/models/minilm_static_256_int8/LICENSE",
        "memwire/skill/SKILL.md",
    ):
        assert needed in names, needed
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert f"Version: {cargo_version()}" in meta
    assert "Requires-Python: >=3.11" in meta
    assert "Requires-Dist: snowballstemmer==2.2.0" in meta
    assert "Requires-Dist: usearch==2.26.6" in meta


def test_package_data_is_installed() -> None:
    from importlib import resources

    import memwire

    base = resources.files(memwire)
    assert base.joinpath("models/minilm_static_256_int8/model.safetensors").is_file()
    assert base.joinpath("skill/SKILL.md").is_file()
