"""``memwire import-from``: memories from other memory tools, into banks.

One reader per source turns its files into candidates (:mod:`memwire.importers.base`); one
write path stores them through ``Memory.retain_many``, so validation, redaction of secrets,
deduplication and the bank's rules hold as for any retain, and reports what was imported,
merged and skipped and why (:class:`~memwire.importers.base.Summary`). docs/compat.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from memwire.importers import agentmemory, mem0, memory_wire
from memwire.importers.base import Read, Skip, Summary, write

if TYPE_CHECKING:
    from memwire.memory import Memory

__all__ = ["SOURCES", "Read", "Skip", "Summary", "import_from", "write"]

SOURCES: dict[str, tuple[Callable[[str | os.PathLike[str]], Read], str]] = {
    "memory-wire": (memory_wire.read, "memory-wire's SQLite database (every bank, by name)"),
    "mem0": (mem0.read, "a mem0 export: JSONL of get_all's records, or its JSON"),
    "agentmemory": (agentmemory.read, "agentmemory's export JSON, or JSONL of its records"),
}
"""Each source's reader and what it reads."""


def import_from(
    memory: Memory,
    source: str,
    path: str | os.PathLike[str],
    *,
    bank: str | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> Summary:
    """Import ``path`` (of kind ``source``, a key of :data:`SOURCES`) into ``memory``: into
    ``bank`` when given, else memory-wire's own banks or ``default``."""
    reader, _ = SOURCES[source]
    return write(
        memory, reader(path), source=f"{source} {os.fspath(path)}", target=bank, progress=progress
    )
