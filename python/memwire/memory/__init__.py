"""The Memory API: banks of memories on a durable store, recalled through the kernel.

:mod:`memwire.memory.api` holds :class:`Memory`; :mod:`~memwire.memory.items` prepares and
checks what callers hand in; :mod:`~memwire.memory.bank_state` keeps each bank's derived index;
:mod:`~memwire.memory.background` is the thread that snapshots banks and builds their HNSW
graphs; :mod:`~memwire.memory.export` reads and writes the JSONL export format. This layer talks
to a :class:`memwire.store.Store` and to the kernel (:mod:`memwire._kernel`), never to SQL or to
a backend module directly.
"""

from __future__ import annotations

from memwire.memory.api import MAX_LIMIT, SHELL_FORMAT, Memory, default_path

__all__ = ["MAX_LIMIT", "SHELL_FORMAT", "Memory", "default_path"]
