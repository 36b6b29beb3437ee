#!/usr/bin/env python3
"""Build the pure-Python ``py3-none-any`` wheel of memwire (no compiled kernel inside).

    python scripts/build_pure_wheel.py [--out dist]

It is the fallback for platforms without a platform wheel: the same package, the pure kernel
only (``memwire.backend_info()`` then reports python). Metadata comes from pyproject.toml and
the version from rust/Cargo.toml (the one version source, as for maturin's wheels), so the two
kinds of wheel never disagree on version or dependencies.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import re
import zipfile
from pathlib import Path
from typing import Any

import tomllib

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "python"
PACKAGE = "memwire"  # the import name; the distribution's is pyproject's [project] name


def version() -> str:
    """The package version: rust/Cargo.toml's ``[workspace.package] version``."""
    cargo = tomllib.loads((ROOT / "rust" / "Cargo.toml").read_text(encoding="utf-8"))
    return str(cargo["workspace"]["package"]["version"])


def project() -> dict[str, Any]:
    """pyproject.toml's ``[project]`` table."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return dict(tomllib.loads(text)["project"])


def file_prefix() -> str:
    """The distribution name as wheel and sdist file names spell it (PEP 427, PEP 625):
    ``memwire-agent-memory`` -> ``memwire_agent_memory``."""
    return re.sub(r"[-_.]+", "_", str(project()["name"])).lower()


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def metadata(meta: dict[str, Any]) -> str:
    """The METADATA file (core metadata 2.1) of the pure wheel."""
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {meta['name']}",
        f"Version: {version()}",
        f"Summary: {meta['description']}",
        f"Requires-Python: {meta['requires-python']}",
        f"License: {meta['license']['text']}",
    ]
    lines += [f"Classifier: {c}" for c in meta.get("classifiers", [])]
    lines += [f"Requires-Dist: {dep.split('#')[0].strip()}" for dep in meta["dependencies"]]
    for extra, deps in meta.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {dep}; extra == "{extra}"' for dep in deps]
    lines += ["Description-Content-Type: text/markdown", ""]
    readme = ROOT / str(meta["readme"])
    return "\n".join(lines) + readme.read_text(encoding="utf-8")


def build(out: Path) -> Path:
    meta = project()
    name, ver = file_prefix(), version()
    dist_info = f"{name}-{ver}.dist-info"
    files: dict[str, bytes] = {}
    for path in sorted((SOURCE / PACKAGE).rglob("*")):
        rel = path.relative_to(SOURCE).as_posix()
        if path.is_dir() or "__pycache__" in rel or path.suffix in {".so", ".pyd", ".pyc"}:
            continue
        if path.name.startswith("_native") and path.suffix != ".pyi":
            continue
        files[rel] = path.read_bytes()
    files[f"{dist_info}/METADATA"] = metadata(meta).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: memwire build_pure_wheel\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n"
    )
    scripts = meta.get("scripts", {})
    if scripts:
        entry = "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())
        files[f"{dist_info}/entry_points.txt"] = entry.encode()
    record = "".join(f"{p},{_record_hash(d)},{len(d)}\n" for p, d in files.items())
    record += f"{dist_info}/RECORD,,\n"
    files[f"{dist_info}/RECORD"] = record.encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{name}-{ver}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for rel, data in files.items():
            zf.writestr(rel, data)
    return wheel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder")
    args = parser.parse_args()
    print(build(args.out))


if __name__ == "__main__":
    main()
