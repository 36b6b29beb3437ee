"""The README's Python example runs as written (on a private memwire home)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import memwire

README = Path(__file__).resolve().parent.parent / "README.md"


def test_library_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has no Python example"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "MEMWIRE_HOME": str(tmp_path / "home"),
        "PYTHONPATH": str(Path(memwire.__file__).resolve().parent.parent),
    }
    for code in blocks:
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        assert "The API listens on port 8080" in out.stdout
    assert (tmp_path / "home" / "memory.db").exists()  # the default store, under MEMWIRE_HOME
