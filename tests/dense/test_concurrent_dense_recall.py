"""Recalls with a query vector on one bank run at the same time, with no lock of their own
around the HNSW graph's search (the kernel admits concurrent searches): each answers as it
would alone."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from dense_support import GRAPH_WORDS as WORDS
from dense_support import graph_bank
from memwire import Memory


def _key(m: Memory, query: str, tags: list[str] | None = None) -> list[tuple[str, float, int]]:
    return [(h.id, h.score, h.dense_rank) for h in m.recall(query, limit=10, exclude_tags=tags)]


def test_concurrent_dense_recalls_on_one_bank_equal_serial_ones(
    db_path: Path, any_backend: str
) -> None:
    with graph_bank(db_path, any_backend) as m:
        queries = [f"{a} {b} {c}" for a in WORDS[:4] for b in WORDS[4:8] for c in WORDS[8:]]
        serial = {q: (_key(m, q), _key(m, q, ["beta"])) for q in queries}
        assert any(rank for plain, _ in serial.values() for _, _, rank in plain), "dense ran"
        threads = 2 * (os.cpu_count() or 1) + 8
        start = threading.Barrier(threads)
        failures: list[BaseException] = []
        mismatches: list[str] = []

        def worker(shift: int) -> None:
            try:
                start.wait()
                for q in queries[shift:] + queries[:shift]:
                    if (_key(m, q), _key(m, q, ["beta"])) != serial[q]:
                        mismatches.append(q)
            except BaseException as exc:  # reported below
                failures.append(exc)

        pool = [threading.Thread(target=worker, args=(t % len(queries),)) for t in range(threads)]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        assert not failures, f"{len(failures)} threads failed, first: {failures[0]!r}"
        assert not mismatches
