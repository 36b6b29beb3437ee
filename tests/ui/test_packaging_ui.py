"""The page's files ship in the wheels and are what the server reads."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from memwire.server import ui

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.backend_independent
def test_the_static_files_are_package_data(tmp_path: Path) -> None:
    from importlib import resources

    static = resources.files("memwire.server").joinpath("static")
    names = {name for name, _ in ui.STATIC_FILES.values()}
    assert {p.name for p in static.iterdir() if p.is_file()} == names
    # The pure wheel (scripts/build_pure_wheel.py) carries them; the maturin wheel takes the
    # same python-source tree.
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_pure_wheel.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    shipped = set(zipfile.ZipFile(out.stdout.strip()).namelist())
    for name in names:
        assert f"memwire/server/static/{name}" in shipped, name
