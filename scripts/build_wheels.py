#!/usr/bin/env python3
"""Build every distribution of memwire: the manylinux wheels, the sdist, the pure wheel.

    python scripts/build_wheels.py [--out dist] [--arch x86_64] [--arch aarch64]
                                   [--no-sdist] [--no-pure]

File names start with the distribution name as PEP 427 spells it, ``memwire_agent_memory``
(pyproject's ``memwire-agent-memory``; the import name stays ``memwire``); V is the version.

- ``...-V-cp311-abi3-manylinux_2_28_{x86_64,aarch64}.whl``: the Rust extension, one wheel
  per architecture for every CPython >= 3.11 (abi3). Both are cross-compiled with maturin
  ``--zig`` (the ``ziglang`` package from PyPI), which links against glibc 2.28's symbols
  whatever the build machine's glibc is; ``auditwheel show`` must then find the wheel consistent
  with ``manylinux_2_28_<arch>``, else the build fails. glibc 2.28 is also the floor of
  usearch==2.26.6's own wheels, a dependency, so a lower tag would install nowhere new.
- ``...-V.tar.gz``: the sdist (``maturin sdist``); building it needs Rust and a C++ compiler.
- ``...-V-py3-none-any.whl``: the pure-Python fallback (scripts/build_pure_wheel.py).

Needs maturin, ziglang and auditwheel (``make wheels`` installs them) and the Rust standard
library of each target (``rustup target add aarch64-unknown-linux-gnu``, run here when missing).
The Rust build uses its own target folder (rust/target/wheels) so it never waits for, or
invalidates, the development build in rust/target.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import build_pure_wheel  # noqa: E402

MANYLINUX = "manylinux_2_28"
TRIPLES = {"x86_64": "x86_64-unknown-linux-gnu", "aarch64": "aarch64-unknown-linux-gnu"}
EXTENSION = "memwire/_kernel/_native.abi3.so"
# The zig whose clang compiles every SIMD kernel of usearch's numkong crate, which GCC builds
# as is: clang 21 and 22 (zig 0.16, 0.17) reject its aarch64 fp16 kernels (and 22 its SME ones);
# clang 20 (zig 0.15.2) builds them all, given the x86_64 flags below. `make wheels` pins it.
ZIG_VERSION = "0.15.2"
# numkong's x86_64 kernels use AVX-512 and POPCNT inside functions whose `#pragma clang attribute
# ... target(...)` lists leave out `evex512` and `popcnt`: GCC implies both, clang must be told.
# -mevex512 changes nothing outside those functions (AVX-512 stays off at the baseline);
# -mpopcnt lets the C code use POPCNT, which every x86_64 CPU since 2008 has and numpy >= 2.4, a
# dependency, requires already (its baseline is x86-64-v2). C flags only: Rust code is unchanged.
TARGET_CFLAGS = {"x86_64-unknown-linux-gnu": "-mevex512 -mpopcnt"}
# No SME kernels on linux aarch64: clang 20 makes them call the SME support routine
# __arm_get_current_vg, which neither zig's compiler-rt nor glibc provides, so the extension
# would fail to load ("undefined symbol"). No linux aarch64 server CPU has SME yet (Graviton
# 2-4, Ampere, Neoverse N1/N2/V1/V2); numkong's NEON and SVE kernels stay.
_SME = ("SME", "SME2", "SME2P1", "SMEF64", "SMEHALF", "SMEBF16", "SMEBI32", "SMELUT2", "SMEFA64")
TARGET_ENV = {"aarch64-unknown-linux-gnu": {f"NK_TARGET_{name}": "0" for name in _SME}}


class BuildError(Exception):
    """A step failed; the message says which and why."""


@dataclass
class Built:
    path: Path
    seconds: float
    detail: str = ""

    def line(self) -> str:
        size = self.path.stat().st_size / 2**20
        extra = f"  {self.detail}" if self.detail else ""
        return f"{self.path.name}  {size:.1f} MiB  {self.seconds:.0f} s{extra}"


def package_version() -> str:
    """rust/Cargo.toml's version, after checking ``memwire.__version__`` states the same."""
    version = build_pure_wheel.version()
    init = (ROOT / "python" / "memwire" / "__init__.py").read_text(encoding="utf-8")
    stated = None
    for node in ast.parse(init).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets
        ):
            stated = ast.literal_eval(node.value)
    if stated != version:
        raise BuildError(
            f"python/memwire/__init__.py says __version__ = {stated!r}, rust/Cargo.toml says "
            f"{version!r}: make them equal (Cargo.toml is the version source)"
        )
    return version


def run(cmd: list[str], env: dict[str, str] | None = None, capture: bool = False) -> str:
    """Run ``cmd``, echoing it; its output when ``capture`` (else it streams to the terminal: a
    10-minute compile shows its progress). A failure is a BuildError naming the command."""
    print("+", " ".join(cmd), flush=True)
    proc = subprocess.run(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
        text=True,
    )
    words = " ".join(Path(w).name for w in cmd[:4] if w != "-m")
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").splitlines()[-40:])
        raise BuildError(
            f"{words} failed (exit {proc.returncode})" + (f":\n{tail}" if tail else "")
        )
    return proc.stdout or ""


def need_tools() -> None:
    missing = [m for m in ("maturin", "ziglang", "auditwheel") if find_spec(m) is None]
    if not missing:
        from importlib.metadata import version

        if version("ziglang") != ZIG_VERSION:
            raise BuildError(
                f"ziglang {version('ziglang')} is installed, the build needs {ZIG_VERSION} "
                f"(see ZIG_VERSION in {Path(__file__).name}): "
                f"{sys.executable} -m pip install ziglang=={ZIG_VERSION}"
            )
    if missing:
        names = " ".join(missing)
        raise BuildError(
            f"missing build tools: {names} (`make wheels` installs them, or: "
            f"{sys.executable} -m pip install {names})"
        )
    if shutil.which("rustup") is None and shutil.which("cargo") is None:
        raise BuildError("no Rust toolchain: install one with rustup (https://rustup.rs)")


def ensure_rust_target(triple: str) -> None:
    """The target's Rust standard library, added with rustup when missing."""
    rustup = shutil.which("rustup")
    if rustup is None:
        return  # a toolchain without rustup: cargo reports a missing std itself
    installed = run([rustup, "target", "list", "--installed"], capture=True).split()
    if triple not in installed:
        run([rustup, "target", "add", triple])


def platform_tag(wheel: str) -> str:
    """The platform part of a wheel file name (``manylinux_2_28_x86_64``, ``any``...)."""
    stem = wheel.removesuffix(".whl")
    parts = stem.split("-")
    if len(parts) < 5:
        raise ValueError(f"not a wheel file name: {wheel}")
    return parts[-1]


def audited_tag(show_output: str) -> str | None:
    """The tag ``auditwheel show`` found the wheel consistent with (None when it found none)."""
    text = " ".join(show_output.split())
    found = re.search(r'consistent with the following platform tag: "([^"]+)"', text)
    return found.group(1) if found else None


def unresolved_symbols(library: bytes) -> list[str]:
    """Undefined symbols of a shared library that nothing but luck would resolve at load time.

    Every strong undefined symbol must carry a version (GLIBC_2.17, ...: a system library will
    provide it, auditwheel checks which) or belong to the C API of the interpreter that loads
    the extension (``Py*``, ``_Py*``). Anything else, such as a compiler-runtime routine the
    toolchain did not link in, fails the import with "undefined symbol" on the user's machine.
    """
    import io

    from elftools.elf.elffile import ELFFile  # pyelftools, a dependency of auditwheel

    elf = ELFFile(io.BytesIO(library))
    dynsym = elf.get_section_by_name(".dynsym")
    versions = elf.get_section_by_name(".gnu.version")
    missing = []
    for i, sym in enumerate(dynsym.iter_symbols()):  # type: ignore[union-attr]
        if sym["st_shndx"] != "SHN_UNDEF" or not sym.name or sym["st_info"]["bind"] == "STB_WEAK":
            continue
        unversioned = versions is None or versions.get_symbol(i)["ndx"] in (  # type: ignore[attr-defined]
            "VER_NDX_LOCAL",
            "VER_NDX_GLOBAL",
        )
        if unversioned and not sym.name.startswith(("Py", "_Py")):
            missing.append(sym.name)
    return sorted(missing)


def check_wheel(wheel: Path, arch: str) -> str:
    """The wheel holds the extension and auditwheel agrees with its manylinux tag."""
    expected = f"{MANYLINUX}_{arch}"
    if platform_tag(wheel.name) != expected:
        raise BuildError(f"{wheel.name}: platform tag is not {expected}")
    names = zipfile.ZipFile(wheel).namelist()
    if EXTENSION not in names:
        raise BuildError(f"{wheel.name} has no {EXTENSION}")
    missing = unresolved_symbols(zipfile.ZipFile(wheel).read(EXTENSION))
    if missing:
        raise BuildError(f"{wheel.name}: {EXTENSION} needs symbols nothing provides: {missing}")
    show = run([sys.executable, "-m", "auditwheel", "show", str(wheel)], capture=True)
    tag = audited_tag(show)
    if tag != expected:
        raise BuildError(f"auditwheel finds {wheel.name} consistent with {tag!r}, not {expected}")
    return f"auditwheel: {tag}"


def build_wheel(arch: str, out: Path, version: str) -> Built:
    triple = TRIPLES[arch]
    ensure_rust_target(triple)
    env = dict(os.environ)
    env.setdefault("CARGO_TARGET_DIR", str(ROOT / "rust" / "target" / "wheels"))
    # maturin finds zig as `python3 -m ziglang` on PATH: this interpreter's, which has ziglang.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    flags_var = "CFLAGS_" + triple.replace("-", "_")
    if triple in TARGET_CFLAGS:
        env[flags_var] = " ".join(filter(None, [env.get(flags_var), TARGET_CFLAGS[triple]]))
    env.update(TARGET_ENV.get(triple, {}))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memwire-wheel-") as tmp:
        run(
            [
                sys.executable, "-m", "maturin", "build", "--release", "--locked",
                "--zig", "--compatibility", MANYLINUX, "--target", triple,
                "--interpreter", sys.executable, "--out", tmp,
            ],
            env=env,
        )  # fmt: skip
        made = sorted(Path(tmp).glob(f"{build_pure_wheel.file_prefix()}-{version}-*.whl"))
        if len(made) != 1:
            raise BuildError(f"maturin made {[p.name for p in made]}, expected one wheel")
        wheel = out / made[0].name
        shutil.move(made[0], wheel)
    seconds = time.monotonic() - started
    return Built(wheel, seconds, check_wheel(wheel, arch))


def build_sdist(out: Path, version: str) -> Built:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="memwire-sdist-") as tmp:
        run([sys.executable, "-m", "maturin", "sdist", "--out", tmp])
        made = Path(tmp) / f"{build_pure_wheel.file_prefix()}-{version}.tar.gz"
        if not made.is_file():
            raise BuildError(f"maturin sdist made {os.listdir(tmp)}, expected {made.name}")
        sdist = out / made.name
        shutil.move(made, sdist)
    return Built(sdist, time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="output folder")
    parser.add_argument(
        "--arch",
        action="append",
        choices=sorted(TRIPLES),
        help="a manylinux wheel for this architecture (repeatable; default: all)",
    )
    parser.add_argument("--no-sdist", action="store_true", help="skip the sdist")
    parser.add_argument("--no-pure", action="store_true", help="skip the py3-none-any wheel")
    args = parser.parse_args(argv)
    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    built: list[Built] = []
    try:
        version = package_version()
        need_tools()
        for arch in args.arch or sorted(TRIPLES):
            built.append(build_wheel(arch, out, version))
        if not args.no_sdist:
            built.append(build_sdist(out, version))
        if not args.no_pure:
            started = time.monotonic()
            built.append(Built(build_pure_wheel.build(out), time.monotonic() - started))
    except BuildError as exc:
        print(f"build_wheels: {exc}", file=sys.stderr)
        return 1
    print(f"\nmemwire {version} in {out}:")
    for item in built:
        print("  " + item.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
