"""The pure-Python kernel: the fallback backend and the reference oracle of docs/parity.md.

It returns the same ordered ids and bit-identical scores as the Rust kernel, only slower.
Its parts load on first use (PEP 562), so code that only needs the generated constants, or
runs on the Rust backend, never pays for compiling the tokenizer's Unicode regexes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from memwire._kernel.pure._generated import CONTRACT_VERSION

if TYPE_CHECKING:
    from memwire._kernel.pure.allow import AllowSet
    from memwire._kernel.pure.index import BankIndex
    from memwire._kernel.pure.ranking import rrf, trim_to_budget
    from memwire._kernel.pure.redaction import may_redact_many
    from memwire._kernel.pure.tokenizer import tokenize
    from memwire._kernel.pure.wordpiece import StaticEmbedder

__all__ = [
    "CONTRACT_VERSION",
    "AllowSet",
    "BankIndex",
    "StaticEmbedder",
    "build_info",
    "may_redact_many",
    "rrf",
    "tokenize",
    "trim_to_budget",
]

_WHERE = {
    "AllowSet": "allow",
    "BankIndex": "index",
    "may_redact_many": "redaction",
    "StaticEmbedder": "wordpiece",
    "rrf": "ranking",
    "tokenize": "tokenizer",
    "trim_to_budget": "ranking",
}


# The libraries the pure kernel's rankings depend on (docs/parity.md pins their versions).
_LIBRARIES = ("numpy", "pyroaring", "msgpack", "usearch", "snowballstemmer")


def build_info() -> dict[str, str | int | list[str]]:
    """Facts about this kernel, for ``memwire doctor`` and bug reports (see the Rust one's)."""
    import platform
    from importlib import metadata

    from memwire import __version__

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "missing"

    info: dict[str, str | int | list[str]] = {
        "backend": "python",
        "version": __version__,
        "contract": CONTRACT_VERSION,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }
    for dist in _LIBRARIES:
        info[dist] = version(dist)
    return info


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memwire._kernel.pure.{module}"), name)
    globals()[name] = value
    return value
