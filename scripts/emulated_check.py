#!/usr/bin/env python3
"""Run an aarch64 wheel of memwire on this x86_64 machine, under QEMU user-mode emulation.

    python scripts/emulated_check.py \
        dist/memwire_agent_memory-V-cp311-abi3-manylinux_2_28_aarch64.whl \
        [--work rust/target/emulated-aarch64] [-- PYTEST ARGS]

1. ``qemu-aarch64-static`` (Debian's qemu-user-static; installed with apt-get when missing and
   this runs as root).
2. An arm64 Debian root with CPython 3.11: the arm64 packages of ``python3.11`` and
   ``libstdc++6`` and everything they depend on, downloaded by apt-get with a private
   configuration (its own lists, cache and an empty dpkg status, so the host's dpkg state is
   never touched) and unpacked with ``dpkg-deb -x``. No chroot, no binfmt_misc: qemu runs the
   interpreter directly, ``-L`` pointing it at that root for the loader and libraries.
3. The wheel, its dependencies and pytest + hypothesis, installed by the host's pip into a plain
   folder for aarch64 (``--platform manylinux_2_28_aarch64 --only-binary=:all:``).
4. Under emulation: a smoke check (the Rust backend loads, is built for aarch64, and reports the
   wheel's manylinux tag), then pytest with ``MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust`` on
   the given arguments (default: tests/parity, golden vectors included).

An emulated process cannot start another aarch64 process (nothing registers qemu with the
kernel's binfmt_misc here), so tests that spawn ``sys.executable`` do not belong in the list.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
QEMU = "qemu-aarch64-static"
DEBIAN_ARCH = "arm64"
# Enough for the interpreter, sqlite3, ssl and the C++ runtime usearch's wheels link against.
ROOT_PACKAGES = ("python3.11", "libstdc++6")
# What pip may take for aarch64: the wheel's own tag and the older glibc baselines below it.
PLATFORMS = [f"manylinux_2_{minor}_aarch64" for minor in range(28, 16, -1)] + [
    "manylinux2014_aarch64"
]
# The whole parity suite: golden vectors, differential tests against the pure kernel, byte-identical
# HNSW graphs with usearch's own aarch64 wheel, snapshots (about 6 minutes under emulation).
DEFAULT_TESTS = ["tests/parity"]
SMOKE = """
import memwire, platform
from memwire._kernel.backend import load_kernel
info = memwire.backend_info()
print(info, "|", info.wheel_tag)
assert platform.machine() == "aarch64", platform.machine()
assert info.name == "rust", info
build = info.build
print(build)
assert build["target"] == "aarch64-unknown-linux-gnu", build
assert info.wheel_tag.endswith("manylinux_2_28_aarch64"), info.wheel_tag
k = load_kernel("rust")
assert k.tokenize("Straße src/main.rs") == load_kernel("python").tokenize("Straße src/main.rs")
print("smoke ok")
"""


def step(title: str) -> float:
    print(f"== {title}", flush=True)
    return time.monotonic()


def run(cmd: list[str], **kw: object) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run(cmd, check=True, **kw)  # type: ignore[call-overload]


def ensure_qemu() -> str:
    found = shutil.which(QEMU)
    if found:
        return found
    if os.geteuid() != 0:
        sys.exit(f"{QEMU} is missing: apt-get install qemu-user-static")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", "qemu-user-static"], env=env)
    found = shutil.which(QEMU)
    if not found:
        sys.exit(f"apt-get installed qemu-user-static but {QEMU} is not on PATH")
    return found


def debian_root(work: Path) -> Path:
    """An unpacked arm64 Debian root holding python3.11 (reused when already there)."""
    sysroot = work / "sysroot"
    python = sysroot / "usr" / "bin" / "python3.11"
    if python.exists():
        return sysroot
    apt = work / "apt"
    shutil.rmtree(apt, ignore_errors=True)
    for sub in ("state/lists/partial", "cache/archives/partial", "etc/apt.conf.d"):
        (apt / sub).mkdir(parents=True)
    (apt / "etc" / "preferences.d").mkdir()
    (apt / "status").write_text("")
    etc = Path("/etc/apt")
    if (etc / "sources.list").exists():
        shutil.copy(etc / "sources.list", apt / "etc" / "sources.list")
    if (etc / "sources.list.d").is_dir():
        shutil.copytree(etc / "sources.list.d", apt / "etc" / "sources.list.d")
    conf = apt / "apt.conf"
    conf.write_text(
        f'APT::Architecture "{DEBIAN_ARCH}";\n'
        f'APT::Architectures {{ "{DEBIAN_ARCH}"; }};\n'
        f'Dir::State "{apt}/state";\n'
        f'Dir::State::status "{apt}/status";\n'
        f'Dir::Cache "{apt}/cache";\n'
        f'Dir::Etc "{apt}/etc";\n'
        f'Dir::Etc::Parts "{apt}/etc/apt.conf.d";\n'
        f'Dir::Etc::PreferencesParts "{apt}/etc/preferences.d";\n'
        'APT::Install-Recommends "false";\n'
    )
    env = dict(os.environ, APT_CONFIG=str(conf), DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "--download-only", "-y", "-qq", *ROOT_PACKAGES], env=env)
    debs = sorted((apt / "cache" / "archives").glob("*.deb"))
    if not debs:
        sys.exit("apt-get downloaded no arm64 packages")
    shutil.rmtree(sysroot, ignore_errors=True)
    sysroot.mkdir(parents=True)
    for deb in debs:
        run(["dpkg-deb", "-x", str(deb), str(sysroot)])
    print(f"{len(debs)} arm64 packages unpacked into {sysroot}")
    return sysroot


def site_packages(work: Path, wheel: Path) -> Path:
    site = work / "site"
    shutil.rmtree(site, ignore_errors=True)
    platforms = [arg for p in PLATFORMS for arg in ("--platform", p)]
    run(
        [
            sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
            "--no-warn-conflicts", "--root-user-action=ignore",
            "--target", str(site), "--only-binary=:all:", *platforms,
            "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311",
            "--abi", "abi3", "--abi", "none",
            str(wheel), "pytest>=8", "hypothesis>=6.100",
        ]
    )  # fmt: skip
    return site


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", type=Path, help="the manylinux aarch64 wheel")
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "rust" / "target" / "emulated-aarch64",
        help="folder for the arm64 root and the installed packages (kept for reuse)",
    )
    parser.add_argument("pytest_args", nargs="*", help="pytest arguments (after --)")
    args = parser.parse_intermixed_args()  # pytest arguments may follow the options
    wheel = args.wheel.resolve()
    if not wheel.name.endswith("_aarch64.whl"):
        sys.exit(f"{wheel.name} is not an aarch64 wheel")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    timings = []

    started = step("qemu")
    qemu = ensure_qemu()
    timings.append(("qemu", time.monotonic() - started))
    started = step("arm64 Debian root with python3.11")
    sysroot = debian_root(work)
    timings.append(("arm64 root", time.monotonic() - started))
    started = step("wheel and test tools for aarch64")
    site = site_packages(work, wheel)
    timings.append(("install", time.monotonic() - started))

    python = [qemu, "-L", str(sysroot), str(sysroot / "usr" / "bin" / "python3.11")]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMWIRE_", "PYTHON"))}
    env.update(PYTHONPATH=str(site), PYTHONDONTWRITEBYTECODE="1")
    started = step("smoke check under emulation")
    run([*python, "-c", SMOKE], env=env, cwd=work)
    timings.append(("smoke", time.monotonic() - started))
    started = step("pytest under emulation")
    env.update(MEMWIRE_REQUIRE_RUST="1", MEMWIRE_BACKEND="rust")
    tests = args.pytest_args or DEFAULT_TESTS
    cmd = [*python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests]
    code = subprocess.run(cmd, env=env, cwd=ROOT).returncode
    timings.append(("pytest", time.monotonic() - started))
    print("timings: " + ", ".join(f"{name} {secs:.0f} s" for name, secs in timings))
    return code


if __name__ == "__main__":
    sys.exit(main())
