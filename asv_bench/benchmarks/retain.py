"""Memory.retain_many end to end (validation, redaction, the static embedder, quantisation and
the SQLite write), parametrised over backend and corpus size (docs): each sample stores the
whole corpus into a new bank of a fresh store in a temp dir."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from . import _common as c

RETAIN_SIZES = [n for n in c.SIZES if n <= 10_000] or c.SIZES[:1]
PARAMS = [c.BACKENDS, RETAIN_SIZES]
PARAM_NAMES = ["backend", "n"]


class RetainMany:
    params = PARAMS
    param_names = PARAM_NAMES
    timeout = 600
    number = 1
    repeat = (1, 5, 60.0)

    def setup(self, backend: str, n: int) -> None:
        from memwire import Memory

        c.kernel(backend)  # skip cleanly when the backend is not importable
        self.texts = list(c.corpus(n).texts)
        self.dir = tempfile.mkdtemp(prefix="memwire-asv-")
        self.memory: Any = Memory(Path(self.dir) / "m.db", backend=backend)
        self.memory.retain("load the embedder before timing", bank="warm")

    def teardown(self, backend: str, n: int) -> None:
        self.memory.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def time_retain_many(self, backend: str, n: int) -> None:
        self.memory.retain_many(self.texts, bank="bench")
