"""The name memwire is installed under, which is not its import name.

``memwire`` on PyPI is an unrelated project, so memwire's distribution is ``memwire-agent-memory``;
``import memwire``, the ``memwire`` command and ``python -m memwire`` are unchanged.
pyproject.toml's ``[project] name`` is the same string (tests/test_packaging.py checks it).
"""

from __future__ import annotations

DISTRIBUTION = "memwire-agent-memory"


def install_hint(extra: str) -> str:
    """The pip command that adds the optional group ``extra``, from PyPI or from a checkout."""
    return f"pip install '{DISTRIBUTION}[{extra}]' (from a checkout: pip install '.[{extra}]')"
