"""memory/expiry.py against the store: after any sequence of writes, removals and cutoff moves
(forward, back, standing still), a bank's expired set is exactly its live memories older than
the cutoff, and the kernel's set admits every live memory but those."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwire._kernel.contract import Kernel
from memwire.memory.expiry import Expiry
from memwire.store import ReferenceStore, WriteResult
from store_support import day, item

Op = tuple[str, int, int]

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(1, 28), st.integers(1, 3)),
        st.tuples(st.just("forget"), st.integers(0, 50), st.just(0)),
        st.tuples(st.just("cutoff"), st.integers(1, 28), st.just(0)),
        st.tuples(st.just("recall"), st.just(0), st.just(0)),
    ),
    max_size=30,
)


# The kernel fixture only gives the kernel (no state): one per test is right.
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS)
def test_the_expired_set_follows_the_store(kernel: Kernel, ops: list[Op]) -> None:
    store = ReferenceStore()
    store.write("b", [])
    head = store.head("b")
    assert head is not None
    expiry = Expiry()
    live: dict[int, str] = {}  # ordinal -> created_at, as the index holds them
    ids: list[str] = []
    cutoff = day(1)
    last_seq = 0

    def applied(result: WriteResult | None) -> None:
        nonlocal last_seq
        if result is None:
            return
        for ordinal in result.removed:
            live.pop(ordinal)
        for ordinal in result.added.ordinals:
            row = store.rows_by_ordinal(head.bank_id, [ordinal])[ordinal]
            live[ordinal] = row.created_at
        expiry.changed(result.added.ordinals, result.removed)
        last_seq = result.last_seq

    for n, (op, a, b) in enumerate(ops):
        if op == "write":
            items = [item(f"memory {n} {i}", created_at=day(a + i % 2)) for i in range(b)]
            applied(store.write("b", items))
            ids.extend(x.id for x in items)
        elif op == "forget" and ids:
            applied(store.forget(ids[a % len(ids)], None))
        elif op == "cutoff":
            cutoff = day(a)
        expired = expiry.expired(store, head.bank_id, cutoff)
        want = {o for o, created in live.items() if created < cutoff}
        assert {o for o in expired if o in live} == want
        assert all(o in live for o in expired)  # removals leave the set
        allow, bitmap = expiry.allow(kernel, last_seq + 1)
        for o in range(last_seq + 2):
            assert (o in allow) == (o in bitmap) == (o not in expired), o
