"""Choose the kernel backend: the ONLY module that imports the compiled extension.

``MEMWIRE_BACKEND`` is read once, at first use:

- ``auto`` (default): the Rust extension when it is installed and matches this package, else
  the pure-Python kernel (which ranks identically, only slower);
- ``rust``: the Rust extension or a :class:`~memwire.errors.BackendError`;
- ``python``: the pure-Python kernel.

An extension built for another contract or package version is refused rather than trusted:
mixing a stale ``.so`` with newer Python code would silently rank differently.

Both backends are imported by name (never through ``importlib``), so mypy checks each module
against the :class:`~memwire._kernel.contract.Kernel` protocol where it is returned.
"""

from __future__ import annotations

import functools
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memwire.errors import BackendError

if TYPE_CHECKING:
    from memwire._kernel.contract import BuildInfo, Kernel

__all__ = ["BackendInfo", "backend_info", "get_kernel", "load_kernel"]

CHOICES = ("auto", "rust", "python")


@dataclass(frozen=True)
class BackendInfo:
    """Which kernel runs, and why."""

    name: str
    """``"rust"`` or ``"python"``."""
    requested: str
    """The value of ``MEMWIRE_BACKEND`` (``"auto"`` when unset)."""
    reason: str
    """One sentence saying why this backend was chosen."""
    version: str
    """The memwire package version."""
    contract: int
    """The kernel contract version (docs/parity.md)."""

    def __str__(self) -> str:
        return f"memwire {self.version}: {self.name} backend ({self.reason})"

    # Read on first use, not at import: a hook or a recall never pays for importlib.metadata.
    @functools.cached_property
    def build(self) -> BuildInfo:
        """The running kernel's ``build_info()``: the extension's target triple, profile,
        features and SIMD, or the pure kernel's interpreter and library versions."""
        return load_kernel(self.name).build_info()

    @functools.cached_property
    def wheel_tag(self) -> str:
        """How the imported memwire was installed: its wheel's tag (``cp311-abi3-manylinux_2_28
        _x86_64``; ``py3-none-any`` for the pure wheel), ``editable <tag>`` for a development
        install, or ``not installed`` when it is imported from a source tree."""
        return _wheel_tag()


def _wheel_tag() -> str:
    import json
    from importlib import metadata
    from pathlib import Path

    import memwire
    from memwire._dist import DISTRIBUTION

    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "not installed"
    wheel = dist.read_text("WHEEL") or ""
    tags = [line[4:].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    # Several Tag lines (one per platform) read as one compressed tag: cp311-abi3-a.b
    heads = {t.rsplit("-", 1)[0] for t in tags}
    tag = " ".join(tags)
    if len(heads) == 1 and len(tags) > 1:
        tag = f"{heads.pop()}-" + ".".join(t.rsplit("-", 1)[1] for t in tags)
    here = Path(memwire.__file__).resolve().parent
    if Path(str(dist.locate_file("memwire"))).resolve() == here:
        return tag or "unknown"
    try:
        editable = json.loads(dist.read_text("direct_url.json") or "{}")["dir_info"]["editable"]
    except (ValueError, KeyError, TypeError):
        editable = False
    # An editable install puts the source tree on sys.path with a .pth file.
    pth = [
        s.strip()
        for f in dist.files or ()
        if f.suffix == ".pth"
        for s in f.read_text().splitlines()
    ]
    if editable and str(here.parent) in pth:
        return f"editable {tag}"
    return "not installed"


_lock = threading.Lock()
_chosen: tuple[Kernel, BackendInfo] | None = None


def _load_rust() -> Kernel:
    """Import the compiled module and verify it belongs to this package."""
    from memwire import __version__
    from memwire._kernel import constants  # the scalars: not the pure kernel's Unicode tables

    try:
        from memwire._kernel import _native as native
    except ImportError as exc:
        raise BackendError(
            f"the Rust extension memwire._kernel._native is not installed ({exc})"
        ) from exc
    # getattr: a stale build may lack the attributes the stub promises.
    contract = getattr(native, "CONTRACT_VERSION", None)
    if contract != constants.CONTRACT_VERSION:
        raise BackendError(
            f"the Rust extension implements kernel contract {contract}, this package needs "
            f"{constants.CONTRACT_VERSION}; rebuild it (pip install -e .)"
        )
    version = getattr(native, "__version__", None)
    if version != __version__:
        raise BackendError(
            f"the Rust extension is version {version}, the package is {__version__}; "
            "rebuild it (pip install -e .)"
        )
    return native


def load_kernel(name: str) -> Kernel:
    """Load one backend by name (``"rust"`` or ``"python"``), for tests and benchmarks.

    Unlike :func:`get_kernel` this ignores ``MEMWIRE_BACKEND`` and never falls back.
    """
    if name == "rust":
        return _load_rust()
    if name == "python":
        from memwire._kernel import pure

        return pure
    raise BackendError(f"unknown backend {name!r}; choose 'rust' or 'python'")


def _choose() -> tuple[Kernel, BackendInfo]:
    from memwire import __version__
    from memwire._kernel.constants import CONTRACT_VERSION

    requested = os.environ.get("MEMWIRE_BACKEND", "").strip().lower() or "auto"
    if requested not in CHOICES:
        raise BackendError(f"MEMWIRE_BACKEND={requested!r} is not one of {', '.join(CHOICES)}")

    def info(name: str, reason: str) -> BackendInfo:
        return BackendInfo(name, requested, reason, __version__, CONTRACT_VERSION)

    if requested == "python":
        return load_kernel("python"), info("python", "MEMWIRE_BACKEND=python")
    if requested == "rust":
        return load_kernel("rust"), info("rust", "MEMWIRE_BACKEND=rust")
    try:
        return load_kernel("rust"), info("rust", "compiled extension found")
    except BackendError as exc:
        return load_kernel("python"), info("python", f"fallback: {exc}")


def _get() -> tuple[Kernel, BackendInfo]:
    global _chosen
    if _chosen is None:
        with _lock:
            if _chosen is None:
                _chosen = _choose()
    return _chosen


def get_kernel() -> Kernel:
    """The kernel every part of memwire uses (chosen once per process)."""
    return _get()[0]


def backend_info() -> BackendInfo:
    """Which backend runs and why; raises :class:`BackendError` for a bad ``MEMWIRE_BACKEND``."""
    return _get()[1]
