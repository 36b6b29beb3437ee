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
        cached, member = state.filters.allowed(mem._store, state.bank_id, tags, avoid, mem._kernel)
        want = mem._store.allowed(state.bank_id, tags, avoid).ordinals
        assert want is not None and list(member) == want
        # The kernel's set holds exactly those ordinals (membership is all it offers).
        assert len(cached) == len(want) and all(o in cached for o in want)
        assert not any(o in cached for o in range(max(want, default=0) + 2) if o not in member)
    kept, state.filters = state.filters, TagFilters()  # built fresh from the store
    for tags, avoid in FILTERS:
        hits = mem.recall(query, tags=tags, exclude_tags=avoid, limit=20, min_score=0)
        assert [(h.id, h.score) for h in hits] == got[(tuple(tags), tuple(avoid))]
    state.filters = kept


def test_the_kernel_set_is_made_again_only_when_its_filter_changed(mem: Memory) -> None:
    mem.retain_many([{"content": f"note {i} alpha", "tags": [TAGS[i % 2]]} for i in range(20)])
    state = mem._bank("default")

    def kernel_set() -> object:
        mem.recall("alpha", exclude_tags=[TAGS[0]], limit=5)
        return state.filters.allowed(mem._store, state.bank_id, [], [TAGS[0]], mem._kernel)[0]

    first = kernel_set()
    assert kernel_set() is first
    mem.retain("alpha excluded", tags=[TAGS[0]])  # fails the filter: the set stays
    assert kernel_set() is first
    added = mem.retain("alpha admitted", tags=[TAGS[1]])  # passes: a new set
    second = kernel_set()
    assert second is not first
    mem.forget(added)
    assert kernel_set() is not second


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


def test_lookup_gate_probe_decides_as_the_filtered_search(backend: str) -> None:
    """is_lookup with the filter's set (an unfiltered probe first) answers exactly as with the
    list handed to the kernel, whichever way the probe goes."""
    from memwire._kernel.backend import load_kernel
    from memwire.memory.bank_state import GATE_PROBE, is_lookup

    rng = random.Random(5)
    index = load_kernel(backend).BankIndex()
    texts = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) + f" id{i % 37}"
        for i in range(400)
    ]
    index.add_many(list(range(400)), texts)
    queries = [f"{a} {b}" for a in WORDS for b in WORDS] + [f"id{i}" for i in range(37)]
    decided = {True: 0, False: 0}
    for share in (0.05, 0.5, 0.95):
        allow = sorted(rng.sample(range(400), int(400 * share)))
        member = set(allow)
        for query in queries:
            probe = index.search_bm25(query, GATE_PROBE)
            decided[sum(o in member for o, _ in probe) >= 2 or len(probe) < GATE_PROBE] += 1
            for ratio in (0.5, 1.0, 1.2, 1.5, 3.0):
                want = is_lookup(index, query, allow, ratio)
                assert is_lookup(index, query, allow, ratio, member) == want
    assert decided[True] and decided[False]  # both the probe's answer and the fallback ran
