"""Packaging: one version and one distribution name everywhere; the pure wheel carries the whole
package but no compiled code, and its metadata matches pyproject.toml; package data (model files,
skill) is where the code looks for it."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import memwire
import pytest
import tomllib
from backends import BACKENDS
from memwire._dist import DISTRIBUTION, install_hint

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
    assert importlib.metadata.version(DISTRIBUTION) == version
    lock = (ROOT / "rust" / "Cargo.lock").read_text(encoding="utf-8")
    for crate in ("memwire-core", "memwire-py"):
        assert f'name = "{crate}"\nversion = "{version}"' in lock, crate


def test_one_distribution_name() -> None:
    # `memwire` on PyPI is another project: the distribution is memwire-agent-memory, installed
    # under that name, while the import name and the command stay memwire.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == DISTRIBUTION == "memwire-agent-memory"
    assert project["scripts"] == {"memwire": "memwire.__main__:main"}
    dist = importlib.metadata.distribution(DISTRIBUTION)
    assert dist.metadata["Name"] == DISTRIBUTION
    owned = [f.as_posix() for f in dist.files or ()]  # an editable install owns a .pth instead
    assert "memwire/__init__.py" in owned or any(f.endswith(".pth") for f in owned)
    assert install_hint("embed") == (
        "pip install 'memwire-agent-memory[embed]' (from a checkout: pip install '.[embed]')"
    )


# Folders of a checkout that hold no source (build outputs, virtualenvs, caches); CHANGELOG.md is
# history and keeps the words it was written with.
_NOT_SOURCE = {"target", "dist", "build", "node_modules", "__pycache__"}
_TEXT = {".md", ".py", ".toml", ".txt", ".sh", ".json", ".cfg", ".yml", ".yaml"}


def _source_files() -> list[Path]:
    found = []
    for here, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _NOT_SOURCE and (d == ".ci" or d[0] != ".")]
        for name in files:
            path = Path(here, name)
            if path.suffix in _TEXT or name in ("Makefile", "run"):
                found.append(path)
    return [p for p in found if p.name != "CHANGELOG.md"]


def test_every_install_hint_names_the_distribution() -> None:
    # Each `pip install` of memwire in docs, help, errors and scripts names memwire-agent-memory
    # (or `.` from a checkout): the PyPI project named memwire is an unrelated one.
    wrong = []
    hints = 0
    for path in _source_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for line_no, line in enumerate(text.splitlines(), 1):
            for args in re.findall(r"pip install\b([^`\n]*)", line):
                # The pip command's own words: up to a shell separator or a comment.
                for token in re.split(r"&&|;|\||#", args)[0].split():
                    name = re.match(r"[\"']?([A-Za-z0-9_.-]+)", token)
                    if name and name.group(1).lower().startswith("memwire"):
                        hints += 1
                        if name.group(1) != DISTRIBUTION:
                            wrong.append(f"{path.relative_to(ROOT)}:{line_no}: {line.strip()}")
    assert not wrong, "install hints naming another distribution:\n" + "\n".join(wrong)
    assert hints >= 5  # README, docs/dense.md, docs/scaling.md, docs/storage.md...


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
    # Every release wheel is tested with its Rust kernel forced (scripts/check_cibuildwheel.py
    # checks each build identifier's effective options, overrides applied).
    assert cibw["tool"]["cibuildwheel"]["test-environment"]["MEMWIRE_REQUIRE_RUST"] == "1"


def test_pure_wheel(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_pure_wheel.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    wheel = Path(out.stdout.strip())
    assert wheel.name == f"memwire_agent_memory-{cargo_version()}-py3-none-any.whl"
    names = zipfile.ZipFile(wheel).namelist()
    assert f"memwire_agent_memory-{cargo_version()}.dist-info/METADATA" in names
    assert not [n for n in names if n.endswith((".so", ".pyd", ".dylib"))]
    for needed in (
        "memwire/__init__.py",
        "memwire/_kernel/pure/_generated.py",
        "memwire/_kernel/_native.pyi",
        "memwire/py.typed",
        "memwire/models/minilm_static_256_int8/model.safetensors",
        "memwire/models/minilm_static_256_int8/LICENSE",
        "memwire/models/minilm_wordnet_256_int8/model.safetensors",
        "memwire/models/minilm_wordnet_256_int8/tokenizer.json",
        "memwire/models/minilm_wordnet_256_int8/LICENSE",
        "memwire/models/minilm_wordnet_256_int8/PROVENANCE.md",
        "memwire/models/minilm_wndebian_256_int8/model.safetensors",
        "memwire/models/minilm_wndebian_256_int8/tokenizer.json",
        "memwire/models/minilm_wndebian_256_int8/LICENSE",
        "memwire/models/minilm_wndebian_256_int8/PROVENANCE.md",
        "memwire/skill/SKILL.md",
    ):
        assert needed in names, needed
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert f"Version: {cargo_version()}" in meta
    assert f"Name: {DISTRIBUTION}\n" in meta
    assert "Requires-Python: >=3.11" in meta
    assert "Requires-Dist: snowballstemmer==2.2.0" in meta
    assert "Requires-Dist: usearch==2.26.6" in meta


def test_package_data_is_installed() -> None:
    from importlib import resources

    import memwire

    base = resources.files(memwire)
    for table in ("minilm_static_256_int8", "minilm_wordnet_256_int8", "minilm_wndebian_256_int8"):
        assert base.joinpath(f"models/{table}/model.safetensors").is_file()
    assert base.joinpath("skill/SKILL.md").is_file()


def install_pure_wheel(tmp_path: Path) -> Path:
    """The pure wheel unpacked into a folder, as pip installs a purelib wheel: its site dir."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_pure_wheel.py"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    site = tmp_path / "site"
    zipfile.ZipFile(out.stdout.strip()).extractall(site)
    return site


def test_pure_wheel_says_it_falls_back_and_why(tmp_path: Path) -> None:
    # A child whose `import memwire` finds the pure wheel first (its folder leads sys.path): no
    # extension can load, so `auto` falls back, and every report says so and why.
    site = install_pure_wheel(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMWIRE_")}
    env["PYTHONPATH"] = str(site)

    def child(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    code = (
        "import json, memwire; i = memwire.backend_info(); "
        "print(json.dumps([memwire.__file__, i.name, i.reason, i.wheel_tag, i.build]))"
    )
    out = child("-c", code)
    assert out.returncode == 0, out.stderr
    file, name, reason, tag, build = json.loads(out.stdout)
    assert Path(file).is_relative_to(site)
    assert (name, tag, build["backend"]) == ("python", "py3-none-any", "python")
    assert reason.startswith(
        "fallback: the Rust extension memwire._kernel._native is not installed"
    )

    out = child("-m", "memwire", "--db", ":memory:", "--json", "doctor", "--port", "1")
    assert out.returncode == 0, out.stderr
    backend = json.loads(out.stdout)["checks"][0]
    assert (backend["name"], backend["status"], backend["wheel_tag"]) == (
        "backend",
        "warn",
        "py3-none-any",
    )
    assert "pure-Python wheel (py3-none-any), which has no compiled kernel" in backend["detail"]

    out = child("-m", "memwire", "-V")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"memwire {cargo_version()}"
    assert "installed: py3-none-any" in lines
    assert lines[1].startswith("kernel: python (fallback: the Rust extension")


def test_version_names_the_kernel_and_the_build(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from memwire._kernel import backend as _backend
    from memwire.cli import main

    for backend in BACKENDS:
        monkeypatch.setenv("MEMWIRE_BACKEND", backend)
        monkeypatch.setattr(_backend, "_chosen", None)
        for flag in ("-V", "--version"):
            assert main([flag]) == 0
            lines = capsys.readouterr().out.splitlines()
            assert lines[0] == f"memwire {cargo_version()}"
            assert lines[1] == f"kernel: {backend} (MEMWIRE_BACKEND={backend})"
            info = memwire.backend_info()
            assert lines[2] == f"installed: {info.wheel_tag}"
            if backend == "rust":
                build = info.build
                assert build["backend"] == "rust" and build["version"] == cargo_version()
                # The extension says what it was built for: this machine's architecture (which
                # macOS calls arm64 and Rust aarch64).
                machine = {"arm64": "aarch64"}.get(platform.machine(), platform.machine())
                assert str(build["target"]).startswith(machine)
                assert "abi3-py311" in build["features"]
                assert lines[3].startswith(f"build: {build['target']}, {build['profile']}")


def test_wheel_tag_matches_the_installed_metadata() -> None:
    from memwire._kernel.backend import BackendInfo

    info = BackendInfo("python", "python", "test", memwire.__version__, 0)
    dist = importlib.metadata.distribution(DISTRIBUTION)
    tags = [
        line[4:].strip()
        for line in (dist.read_text("WHEEL") or "").splitlines()
        if line.startswith("Tag:")
    ]
    assert tags
    # This suite runs on an installed memwire (make test) or an editable one (make dev); a
    # wheel with several Tag lines is shown as one compressed tag (cp311-abi3-plat1.plat2).
    py_abi, platforms = info.wheel_tag.removeprefix("editable ").rsplit("-", 1)
    assert {f"{py_abi}-{plat}" for plat in platforms.split(".")} == set(tags)
    assert platform.machine() in platforms or platforms == "any"


def test_doctor_explains_a_refused_extension() -> None:
    from memwire._kernel.backend import BackendInfo
    from memwire.cli.doctor import fallback_why

    stale = (
        "the Rust extension is version 0.0.0, the package is 0.1.0; rebuild it (pip install -e .)"
    )
    info = BackendInfo("python", "auto", f"fallback: {stale}", "0.1.0", 2)
    info.__dict__["wheel_tag"] = "editable cp311-abi3-linux_x86_64"  # the cached property
    why = fallback_why(info)
    assert why.startswith(stale + ". It ranks exactly as the Rust kernel does")
    assert "install a platform wheel of memwire-agent-memory" in why
    asked = BackendInfo("python", "python", "MEMWIRE_BACKEND=python", "0.1.0", 2)
    assert "unset it to use the Rust kernel" in fallback_why(asked)


def test_wheel_script_refuses_what_is_not_manylinux(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_wheels
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    name = "memwire_agent_memory-0.1.0-cp311-abi3-manylinux_2_28_aarch64.whl"
    assert build_wheels.platform_tag(name) == "manylinux_2_28_aarch64"
    # auditwheel show's own wording (6.x), wrapped as it prints it.
    shown = (
        f"\n{name} is consistent with\nthe following platform tag: "
        '"manylinux_2_28_aarch64".\n\nThe wheel references external versioned symbols'
    )
    assert build_wheels.audited_tag(shown) == "manylinux_2_28_aarch64"
    assert build_wheels.audited_tag("memwire.whl is not compliant with any tag") is None
    # A local build's wheel (linux_x86_64) is refused before auditwheel even runs.
    local = tmp_path / "memwire_agent_memory-0.1.0-cp311-abi3-linux_x86_64.whl"
    with zipfile.ZipFile(local, "w") as zf:
        zf.writestr(build_wheels.EXTENSION, b"")
    with pytest.raises(build_wheels.BuildError, match="platform tag is not manylinux_2_28_x86_64"):
        build_wheels.check_wheel(local, "x86_64")
    empty = tmp_path / "memwire_agent_memory-0.1.0-cp311-abi3-manylinux_2_28_x86_64.whl"
    zipfile.ZipFile(empty, "w").close()
    with pytest.raises(build_wheels.BuildError, match="has no memwire/_kernel/_native"):
        build_wheels.check_wheel(empty, "x86_64")


def test_wheel_script_finds_symbols_nothing_provides(tmp_path: Path) -> None:
    # The check that caught __arm_get_current_vg (an SME runtime routine) in an aarch64 build.
    pytest.importorskip("elftools", reason="pyelftools comes with auditwheel (make wheels)")
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no C compiler")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_wheels
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    source = tmp_path / "lib.c"
    source.write_text(
        "#include <string.h>\n"
        "extern void nobody_defines_this(void);\n"
        "extern int PyLong_AsLong(void *);\n"
        "int f(const char *s) { nobody_defines_this(); return PyLong_AsLong(0) + strlen(s); }\n"
    )
    library = tmp_path / "lib.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(library), str(source)], check=True)
    # strlen is versioned (GLIBC_2.2.5), PyLong_AsLong comes from the interpreter.
    assert build_wheels.unresolved_symbols(library.read_bytes()) == ["nobody_defines_this"]
