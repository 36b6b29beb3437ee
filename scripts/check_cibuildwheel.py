#!/usr/bin/env python3
"""Check cibuildwheel.toml as cibuildwheel itself reads it, for Linux and macOS, on any machine.

    python scripts/check_cibuildwheel.py

The release pipeline runs cibuildwheel on Linux runners with a container engine and on macOS
runners; neither exists here. What can be checked here is the configuration: this asks
cibuildwheel (the version the Makefile pins; it reads its own internals, so a new release may
need this script adapted) for the build identifiers of both platforms and each one's effective
options after every override, prints them, and fails unless

- Linux builds x86_64 and aarch64 and macOS builds x86_64 and arm64, each for CPython 3.11,
  3.12 and 3.13, in manylinux_2_28 images on Linux;
- every identifier tests its wheel with ``MEMWIRE_REQUIRE_RUST=1 MEMWIRE_BACKEND=rust`` and the
  installed package (``MEMWIRE_TEST_INSTALLED=1``), running pytest with the [test] extra;
- each macOS identifier's build states its deployment target (10.15 on x86_64, 11.0 on arm64).

What it cannot check: that the builds and their tests pass on those runners.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / "cibuildwheel.toml"
PYTHONS = ("cp311", "cp312", "cp313")
ARCHS = {"linux": ("x86_64", "aarch64"), "macos": ("x86_64", "arm64")}
TEST_ENV = {"MEMWIRE_REQUIRE_RUST": "1", "MEMWIRE_BACKEND": "rust", "MEMWIRE_TEST_INSTALLED": "1"}
MACOS_TARGET = {"x86_64": "10.15", "arm64": "11.0"}
IMAGE = "manylinux_2_28"


def identifiers_and_options(platform: str) -> tuple[list[str], object]:
    from cibuildwheel.__main__ import get_build_identifiers
    from cibuildwheel.options import CommandLineArguments, compute_options
    from cibuildwheel.platforms import ALL_PLATFORM_MODULES

    args = dataclasses.replace(
        CommandLineArguments.defaults(),
        platform=platform,  # type: ignore[arg-type]
        config_file=str(CONFIG),
        package_dir=ROOT,
    )
    options = compute_options(platform, args, env={})  # type: ignore[arg-type]
    ids = get_build_identifiers(
        platform_module=ALL_PLATFORM_MODULES[platform],  # type: ignore[index]
        build_selector=options.globals.build_selector,
        architectures=options.globals.architectures,
    )
    options.check_for_invalid_configuration(ids)
    return list(ids), options


def check(platform: str) -> list[str]:
    """Problems found in ``platform``'s identifiers and options (empty when none)."""
    ids, options = identifiers_and_options(platform)
    problems = []
    kind = "macosx" if platform == "macos" else "manylinux"
    wanted = sorted(f"{py}-{kind}_{arch}" for py in PYTHONS for arch in ARCHS[platform])
    if sorted(ids) != wanted:
        problems.append(f"{platform}: builds {sorted(ids)}, expected {wanted}")
    for ident in ids:
        build = options.build_options(ident)  # type: ignore[attr-defined]
        arch = ident.split("-", 1)[1].split("_", 1)[1]  # cp311-macosx_arm64 -> arm64
        test_env = build.test_environment.as_dictionary(prev_environment={})
        build_env = build.environment.as_dictionary(prev_environment={"HOME": "~", "PATH": ""})
        print(f"{ident}:")
        print(f"  test: {build.test_command}  [extras {build.test_extras}]")
        print(f"  test env: {' '.join(f'{k}={v}' for k, v in sorted(test_env.items()))}")
        missing = {k: v for k, v in TEST_ENV.items() if test_env.get(k) != v}
        if missing:
            problems.append(f"{ident}: test environment lacks {missing}")
        if not options.globals.test_selector(ident):  # type: ignore[attr-defined]
            problems.append(f"{ident}: test-skip leaves its wheel untested")
        extras = build.test_extras.strip("[]").split(",")
        if "pytest" not in (build.test_command or "") or "test" not in extras:
            problems.append(f"{ident}: does not run pytest with the [test] extra")
        if platform == "macos":
            target = build_env.get("MACOSX_DEPLOYMENT_TARGET")
            print(f"  MACOSX_DEPLOYMENT_TARGET={target}")
            if target != MACOS_TARGET[arch]:
                problems.append(f"{ident}: deployment target {target}, not {MACOS_TARGET[arch]}")
        else:
            image = (build.manylinux_images or {}).get(arch, "")
            print(f"  image: {image}")
            if IMAGE not in image:
                problems.append(f"{ident}: image {image!r} is not {IMAGE}")
    return problems


def main() -> int:
    try:
        import cibuildwheel
    except ModuleNotFoundError:
        print("cibuildwheel is not installed (`make wheel-checks` installs it)", file=sys.stderr)
        return 2
    print(f"cibuildwheel {cibuildwheel.__version__}, {CONFIG.name}")
    problems = check("linux") + check("macos")
    for problem in problems:
        print(f"check_cibuildwheel: {problem}", file=sys.stderr)
    if not problems:
        print(
            "cibuildwheel.toml: every Linux and macOS identifier tests with the Rust kernel forced"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
