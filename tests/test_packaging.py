"""Packaging: the pure wheel carries the whole package but no compiled code, and its metadata
matches pyproject.toml; package data (model files, skill) is where the code looks for it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


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
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert f"Version: {project['version']}" in meta
    assert "Requires-Dist: snowballstemmer==2.2.0" in meta
    assert "Requires-Dist: usearch==2.26.6" in meta


def test_package_data_is_installed() -> None:
    from importlib import resources

    import memwire

    base = resources.files(memwire)
    assert base.joinpath("models/minilm_static_256_int8/model.safetensors").is_file()
    assert base.joinpath("skill/SKILL.md").is_file()
