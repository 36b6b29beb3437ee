"""A recall's dense search on a helper thread beside its lexical pass (the Rust binding's
``dense_helper``): the same rankings as without one and as the pure kernel's, and no wait
cycle with a writer queued on the bank's lock."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dense_support import GRAPH_WORDS, RUST_SKIP, graph_bank
from memwire import Memory

WORDS = GRAPH_WORDS
QUERIES = [f"{a} {b} {c}" for a in WORDS[:3] for b in WORDS[3:6] for c in WORDS[6:]]


@pytest.fixture
def helpers() -> Iterator[Any]:
    """The native module with helpers on for every bank; the defaults back afterwards."""
    if RUST_SKIP:
        pytest.skip(RUST_SKIP)
    from memwire._kernel import _native

    before = _native.set_recall_helpers(True, 0)
    yield _native
    _native.set_recall_helpers(*before)


def _rows(m: Memory, query: str, tags: list[str] | None = None) -> list[tuple[str, float, int]]:
    hits = m.recall(query, limit=10, exclude_tags=tags)
    return [(h.content, h.score, h.dense_rank) for h in hits]


def test_helper_rankings_equal_the_serial_and_pure_ones(tmp_path: Path, helpers: Any) -> None:
    native = helpers
    pure = graph_bank(tmp_path / "pure.db", "python")
    want = {q: (_rows(pure, q), _rows(pure, q, ["beta"])) for q in QUERIES}
    pure.close()
    assert any(rank for plain, _ in want.values() for _, _, rank in plain), "dense ran"
    with graph_bank(tmp_path / "rust.db", "rust") as m:
        for on in (False, True):
            native.set_recall_helpers(on, 0)
            before = native.recall_helpers_started()
            got = {q: (_rows(m, q), _rows(m, q, ["beta"])) for q in QUERIES}
            started = native.recall_helpers_started() - before
            assert got == want, f"helpers {'on' if on else 'off'}"
            # Some queries are lookups (no dense stream, no helper); the rest start one.
            assert (started > 0) == on, started


def test_recalls_with_helpers_beside_a_writer_all_answer(tmp_path: Path, helpers: Any) -> None:
    native = helpers
    with graph_bank(tmp_path / "rust.db", "rust") as m:
        before = native.recall_helpers_started()
        stop = threading.Event()
        errors: list[BaseException] = []
        answered = [0]

        def recaller() -> None:
            try:
                while not stop.is_set():
                    for q in QUERIES:
                        assert len(m.recall(q, limit=10)) > 0
                        answered[0] += 1
            except BaseException as exc:  # reported below
                errors.append(exc)
                stop.set()

        thread = threading.Thread(target=recaller)
        thread.start()
        try:
            # Each write queues on the bank's write lock while recalls hold its read lock.
            for i in range(60):
                ids = m.retain_many([{"content": f"{WORDS[i % 9]} extra {i}"}])
                m.forget(ids[0])
        finally:
            stop.set()
            thread.join(timeout=300)
        assert not thread.is_alive(), "a recall never returned"
        assert not errors, repr(errors[0])
        assert answered[0] > 0
        assert native.recall_helpers_started() > before
