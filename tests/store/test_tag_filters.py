"""Recall's tag filters kept beside the index (memory/filters.py): after any mix of retains,
forgets, document replacements and sweeps, the ordinals a bank's filter holds are exactly what
the store's ``allowed`` query returns, and recall with a filter equals recall through a filter
built fresh from the store."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from memwire import Memory
from memwire.memory.filters import MAX_FILTERS, TagFilters
from store_support import StoreFactory

TAGS = ["alpha", "beta", "gamma", "delta", "eps"]
WORDS = ["deploy", "kafka", "lunch", "port", "graph", "budget"]
FILTERS = [
    ([], ["alpha"]),
    (["beta"], []),
    (["gamma", "delta"], ["alpha"]),
    ([], ["beta", "eps"]),
    (["alpha"], ["alpha"]),  # nothing passes
]


@pytest.fixture
def mem(store_factory: StoreFactory, tmp_path: Path, backend: str) -> Iterator[Memory]:
    with Memory(store=store_factory.make(tmp_path), backend=backend) as memory:
        yield memory


def _item(rng: random.Random, i: int) -> dict[str, object]:
    item: dict[str, object] = {
        "content": f"note {i} {rng.choice(WORDS)} {rng.choice(WORDS)}",
        "tags": rng.sample(TAGS, rng.randint(0, 2)),
    }
    if rng.random() < 0.2:
        item["document_id"] = f"doc-{rng.randint(0, 5)}"
    return item


def _check(mem: Memory) -> None:
    """The bank's kept filters (not rebuilt: they live across calls) against the store."""
    state = mem._bank("default")
    query = " ".join(WORDS[:3])
    got = {}
    for tags, avoid in FILTERS:
        hits = mem.recall(query, tags=tags, exclude_tags=avoid, limit=20, min_score=0)
        got[(tuple(tags), tuple(avoid))] = [(h.id, h.score) for h in hits]
        for hit in hits:
            assert (not tags or set(tags) & set(hit.tags)) and not set(avoid) & set(hit.tags)
        cached = state.filters.allowed(mem._store, state.bank_id, tags, avoid)
        assert cached == mem._store.allowed(state.bank_id, tags, avoid, None).ordinals
    kept, state.filters = state.filters, TagFilters()  # built fresh from the store
    for tags, avoid in FILTERS:
        hits = mem.recall(query, tags=tags, exclude_tags=avoid, limit=20, min_score=0)
        assert [(h.id, h.score) for h in hits] == got[(tuple(tags), tuple(avoid))]
    state.filters = kept


def test_filters_follow_every_kind_of_write(mem: Memory) -> None:
    rng = random.Random(18)
    ids = mem.retain_many([_item(rng, i) for i in range(60)])
    _check(mem)
    for step in range(6):
        ids += mem.retain_many([_item(rng, 100 * step + i) for i in range(10)])
        for victim in rng.sample(ids, 4):
            mem.forget(victim)
        mem.retain(f"a late note {step} deploy", tags=[TAGS[step % len(TAGS)]])
        _check(mem)


def test_filters_are_kept_for_the_most_recent_pairs(mem: Memory) -> None:
    mem.retain_many([{"content": f"note {i} deploy", "tags": [f"t{i}"]} for i in range(20)])
    state = mem._bank("default")
    for i in range(MAX_FILTERS + 3):
        assert len(mem.recall("deploy", exclude_tags=[f"t{i}"], limit=100, min_score=0)) == 19
    assert len(state.filters._entries) == MAX_FILTERS
    mem.retain("another deploy note", tags=["t0"])
    assert len(mem.recall("deploy", exclude_tags=["t0"], limit=100, min_score=0)) == 19
