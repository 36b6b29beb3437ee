"""Every store answers a random script of operations exactly as ``ReferenceStore`` does, and
an index kept by replaying ``changes_since`` always equals the live rows."""

from __future__ import annotations

import contextlib
import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest
from memwire.errors import MemwireError
from memwire.store import Changes, ReferenceStore, Row, Store, Version, WriteResult
from store_support import OTHER_SPACE, SPACE, day, dump, item, vec

# Stores only: no kernel, so one pass of make test covers them.
pytestmark = pytest.mark.backend_independent

BANKS = ("a", "b")
CONTENTS = [f"text {n}" for n in range(12)]


def script(seed: int, steps: int = 150) -> list[Callable[[Store], Any]]:
    """Operations with every choice (ids included) made up front, so each store runs the same."""
    rng = random.Random(seed)
    made: list[str] = []
    made_in: dict[str, list[str]] = {b: [] for b in BANKS}
    ops: list[Callable[[Store], Any]] = []
    for step in range(steps):
        bank = rng.choice(BANKS)
        roll = rng.random()
        if roll < 0.45:
            batch = []
            # Plain batches (no document id) take the stores' bulk path; config tags with them.
            plain = rng.random() < 0.4
            extra = rng.choice([None, None, ["z", "x"], ["y"]])
            for n in range(rng.randint(1, 4) if not plain else rng.randint(1, 12)):
                doc = None if plain else rng.choice([None, None, "d1", "d2"])
                new = item(
                    rng.choice(CONTENTS),
                    id=f"mem_{seed:04x}{step:04x}{n:024x}",
                    document_id=doc,
                    update_mode=rng.choice(["replace", "replace", "append"]),
                    tags=rng.sample(["x", "y", "z"], rng.randint(0, 2)),
                    created_at=day(rng.randint(1, 20)),
                    vector=vec(step, n, 0, 1) if rng.random() < 0.5 else None,
                )
                if made and not plain and rng.random() < 0.4:  # issue 17: supersedes, mostly
                    pool = made_in[bank][-6:] if rng.random() < 0.8 else made  # of this bank
                    if pool:
                        listed = rng.sample(pool, min(len(pool), rng.randint(1, 2)))
                        new = dataclasses.replace(new, supersedes=tuple(listed))
                new = dataclasses.replace(new, retained_at=day(1 + step // 10))
                made.append(new.id)
                made_in[bank].append(new.id)
                batch.append(new)
            space = SPACE if rng.random() < 0.9 else OTHER_SPACE
            imported = rng.random() < 0.1
            if imported and made:
                batch.append(item(rng.choice(CONTENTS), id=rng.choice(made)))
            ops.append(
                lambda s, bank=bank, batch=batch, space=space, imported=imported, extra=extra: (
                    s.write(
                        bank,
                        batch,
                        config_tags=None if extra is None else (lambda c, e=extra: list(e)),
                        space=space,
                        imported=imported,
                    )
                )
            )
        elif roll < 0.58 and made:
            victim, scope = rng.choice(made), rng.choice([None, bank])
            trash = rng.random() < 0.6
            ops.append(
                lambda s, victim=victim, scope=scope, trash=trash: s.forget(
                    victim, scope, trash=trash
                )
            )
        elif roll < 0.62 and made:
            victim, scope = rng.choice(made), rng.choice([None, bank])
            ops.append(lambda s, victim=victim, scope=scope: s.restore(victim, scope))
        elif roll < 0.64:
            ops.append(lambda s, bank=bank: sorted(s.empty_trash(bank, None)))
        elif roll < 0.66 and made:
            victim, scope = rng.choice(made), rng.choice([None, bank])
            ops.append(lambda s, victim=victim, scope=scope: s.purge(victim, scope))
        elif roll < 0.68 and made:
            victim, tags = rng.choice(made), rng.sample(["x", "y", "z"], rng.randint(0, 2))
            ops.append(lambda s, victim=victim, bank=bank, tags=tags: s.retag(victim, bank, tags))
        elif roll < 0.70 and made:
            victim, when = rng.choice(made), day(rng.randint(1, 16))
            ops.append(lambda s, victim=victim, bank=bank, when=when: reads(s, victim, bank, when))
        elif roll < 0.74:
            cutoff, dry = day(rng.randint(1, 12)), rng.random() < 0.3
            ops.append(lambda s, bank=bank, cutoff=cutoff, dry=dry: s.expire(bank, cutoff, dry))
        elif roll < 0.8:
            ratio = rng.random()
            ops.append(lambda s, bank=bank, ratio=ratio: snapshot(s, bank, ratio))
        elif roll < 0.85:
            value = step
            ops.append(
                lambda s, bank=bank, value=value: s.update_config(bank, lambda c: {"v": value})
            )
        elif roll < 0.87:
            ops.append(lambda s, bank=bank: s.delete_bank(bank))
        else:
            tags = rng.sample(["x", "y", "z"], rng.randint(0, 2))
            avoid = rng.sample(["x", "y"], rng.randint(0, 1))
            cutoff = rng.choice([None, day(rng.randint(1, 20))])
            ops.append(
                lambda s, bank=bank, tags=tags, avoid=avoid, cutoff=cutoff: allowed(
                    s, bank, tags, avoid, cutoff
                )
            )
    return ops


def reads(store: Store, memory_id: str, bank: str, when: str) -> object:
    """What the history reads answer (a trash listing by id: trash times are the clock's)."""
    head = store.head(bank)
    return (
        store.get(memory_id),
        store.history(memory_id),
        sorted(r.id for r in store.trash_rows(bank, 100, 0)),
        None if head is None else store.versions_at(head.bank_id, when),
        None
        if head is None
        else [
            (v.row.id, v.row.ordinal, v.row.status, v.row.superseded_by, v.vector)
            for v in store.archive_page(head.bank_id, 0, 100)
        ],
    )


def snapshot(store: Store, bank: str, ratio: float) -> bool | None:
    head = store.head(bank)
    if head is None:
        return None
    seq = int(head.last_seq * ratio)
    return store.save_snapshot(head.bank_id, seq, f"at {seq}".encode(), "s")


def allowed(
    store: Store, bank: str, tags: list[str], avoid: list[str], cutoff: str | None
) -> object:
    head = store.head(bank)
    if head is None:
        return None
    expiring = None if cutoff is None else store.expiring(head.bank_id, cutoff)
    return store.allowed(head.bank_id, tags, avoid), expiring


def comparable(value: Any) -> Any:
    """``value`` without bank ids (a store may number banks its own way) or error objects."""
    if isinstance(value, MemwireError):
        return (type(value).__name__, str(value))
    if isinstance(value, (list, tuple)):
        return type(value)(comparable(v) for v in value)
    if isinstance(value, Row) and value.status == "trashed":
        return dataclasses.replace(value, archived_at="(the clock)")
    if isinstance(value, Version):
        return dataclasses.replace(value, row=comparable(value.row))
    if isinstance(value, WriteResult):
        return dataclasses.replace(value, bank_id=0)
    if hasattr(value, "result") and isinstance(value.result, WriteResult):
        return dataclasses.replace(value, result=comparable(value.result))
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and hasattr(value, "bank_id"):
        return dataclasses.replace(value, bank_id=0)  # type: ignore[type-var]
    return value


def run(store: Store, ops: list[Callable[[Store], Any]]) -> list[Any]:
    answers = []
    for op in ops:
        try:
            answers.append(comparable(op(store)))
        except MemwireError as exc:
            answers.append(comparable(exc))
    return answers


@pytest.mark.parametrize("seed", range(10))
def test_every_answer_matches_the_reference(store: Store, seed: int) -> None:
    ops = script(seed)
    oracle = ReferenceStore()
    expected = run(oracle, ops)
    assert run(store, ops) == expected
    assert comparable(dump(store)) == comparable(dump(oracle))
    kinds = {type(a).__name__ for a in expected}
    assert {"WriteResult", "tuple"} <= kinds  # the script wrote, and hit at least one error


@pytest.mark.parametrize("seed", range(4))
def test_replay_from_any_point_gives_the_live_rows(store: Store, seed: int) -> None:
    """An index at seq s (the live ordinals then) plus changes_since(s) is the live set now,
    unless the store reports a gap."""
    points: list[tuple[int, int, set[int]]] = []  # (bank id, seq, live ordinals at seq)
    for op in script(seed, 120):
        with contextlib.suppress(MemwireError):
            op(store)
        head = store.head("a")
        if head is not None:
            live = {r.ordinal for r in store.iter_rows("a")}
            points.append((head.bank_id, head.last_seq, live))
    head = store.head("a")
    if head is None:
        pytest.skip("the script ended with bank 'a' deleted")
    now = {r.ordinal for r in store.iter_rows("a")}
    checked = 0
    for ident, seq, live in points:
        changes: Changes | None = store.changes_since(ident, seq)
        if ident != head.bank_id:
            assert changes is None  # that bank was deleted
            continue
        assert changes is not None
        if changes.gap:
            assert store.changes_since(ident, 0) is not None
            continue
        index = (live - set(changes.removed)) | set(changes.added.ordinals)
        assert index == now, seq
        assert not set(changes.added.ordinals) & live  # an ordinal is never added twice
        checked += 1
    assert checked
