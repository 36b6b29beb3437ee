"""The package's layers (docs/architecture.md, "The map"): no module imports a higher layer.

Every ``import`` of a memwire module anywhere in a file counts, including imports inside
functions and under ``TYPE_CHECKING``: a lower layer that names a higher one's types depends on
it just the same. Modules may import their own package and any lower layer; peers (same rank,
different package) may not import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "python" / "memwire"

# (rank, packages or modules). Keep in step with the table in docs/architecture.md.
LAYERS: list[tuple[int, tuple[str, ...]]] = [
    (0, ("errors", "records", "_progress", "models", "_dist", "_heap")),
    (1, ("_dates", "_text", "redact", "project", "locations", "private_files")),
    # The kernel sits below config: config's defaults (the fusion weights) are contract constants.
    (2, ("_kernel",)),
    (3, ("config",)),
    (4, ("store", "embed")),
    (5, ("memory",)),
    (6, ("server", "eval", "importers")),
    (7, ("hosts",)),
    (8, ("hooks", "connect")),
    (9, ("cli",)),
    (10, ("__main__",)),
]
RANK = {name: rank for rank, names in LAYERS for name in names}
# What code outside the kernel may import of it: the backend choice, the contract and the
# vector format, the pack's rule (memory/pack.py runs it over the compiled tokenizer for what
# the compiled kernel hands back). The backends themselves are reached only through
# memwire._kernel.backend.
KERNEL_DOORS = (
    "_kernel",
    "_kernel.backend",
    "_kernel.contract",
    "_kernel.vectors",
    "_kernel.pack_rule",
)


def _top(module: str) -> str:
    """The layer key of a dotted memwire module path relative to ``memwire``."""
    return module.split(".")[0]


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append((".".join(parts), path))
    return found


def _imports(path: Path) -> list[tuple[int, str]]:
    """(line, module relative to memwire) of every memwire import in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("memwire."):
                    out.append((node.lineno, alias.name.removeprefix("memwire.")))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "memwire":
                # `from memwire import x`: a submodule, or a name of the package facade.
                for alias in node.names:
                    if (ROOT / alias.name).is_dir() or (ROOT / f"{alias.name}.py").exists():
                        out.append((node.lineno, alias.name))
            elif node.module.startswith("memwire."):
                out.append((node.lineno, node.module.removeprefix("memwire.")))
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; use memwire.*")
    return out


MODULES = [(name, path) for name, path in _modules() if name]  # the root facade is exempt


def test_every_package_has_a_layer() -> None:
    missing = sorted({_top(name) for name, _ in MODULES} - set(RANK))
    assert not missing, f"give these a layer in tests/test_layers.py and docs: {missing}"


@pytest.mark.parametrize("name,path", MODULES, ids=[n for n, _ in MODULES])
def test_no_module_imports_a_higher_layer(name: str, path: Path) -> None:
    own = _top(name)
    bad = []
    for line, target in _imports(path):
        top = _top(target)
        if top == own:
            continue
        if top not in RANK:
            bad.append(f"line {line}: {target} has no layer")
        elif RANK[top] >= RANK[own]:
            bad.append(f"line {line}: {target} (layer {RANK[top]}) from layer {RANK[own]}")
    assert not bad, f"memwire.{name}: " + "; ".join(bad)


@pytest.mark.parametrize("name,path", MODULES, ids=[n for n, _ in MODULES])
def test_backends_are_reached_only_through_the_kernel_doors(name: str, path: Path) -> None:
    if _top(name) == "_kernel":
        return
    bad = [
        f"line {line}: {target}"
        for line, target in _imports(path)
        if _top(target) == "_kernel" and target not in KERNEL_DOORS
    ]
    assert not bad, f"memwire.{name} imports a backend directly: " + "; ".join(bad)


def test_the_checker_sees_a_violation(tmp_path: Path) -> None:
    # The test above must be able to fail: an upward import is reported with its line.
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from memwire.cli import main\n", encoding="utf-8")
    assert _imports(probe) == [(2, "cli")]
