"""A module imported on its first use rather than by the module that names it."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

__all__ = ["Deferred"]


class Deferred:
    """Stands for the module ``name`` and imports it when one of its attributes is first read.

    The server's route modules name :mod:`memwire.server.ops` (and with it the request-field
    tables) this way, so that starting the server, which only builds the routes, does not
    import them: the first request that runs an operation does (``/health`` never does)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        # Every request reads through here: the import machinery is asked once.
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)
