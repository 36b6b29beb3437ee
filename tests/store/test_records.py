"""The store's records behave exactly as ``@dataclass(frozen=True, slots=True)`` classes: their
``__eq__``, ``__hash__`` and ``__repr__`` are written once in ``_Record`` instead of generated
(memwire.store.protocol), and are compared here with what dataclasses generates for the same
fields."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from memwire.store import protocol as p

NEW = p.NewMemory("m1", "text", None, ("a",), "2026-01-01", "2026-01-02", None, "replace", b"h")
ROW = p.Row("m1", "bank", 3, "text", "ctx", ("a", "b"), "2026-01-01", "2026-01-02", None)
ADDED = p.Additions([1, 2], ["x", "y"], [None, "c"], [None, b"v"])
WRITTEN = p.WriteResult("bank", 1, ["m1"], ADDED, [4], 0, 2)
SAMPLES: list[Any] = [
    NEW,
    p.ArchivedMemory(NEW, p.TRASHED, None, "2026-01-03"),
    ROW,
    p.Version(ROW, b"\x01\x00"),
    p.Addition(1, "x", None, b"v"),
    ADDED,
    WRITTEN,
    p.Expired(["m1"], WRITTEN),
    p.BankHead(1, 2, {"k": [1]}, "static", 4),
    p.BankStats(1, {"a": 1}, "2026-01-01", None),
    p.Allowed([1, 3]),
    p.Expiring([1], "2026-01-01"),
    p.Changes(2, ADDED, [1], False),
    p.Snapshot(2, b"data"),
    p.ReembedState(1, p.Space("static", 4), 9),
    p.ReembedItem(1, "x", None),
    p.StagedVector(1, None),
]


def generated(record: Any) -> Any:
    """The same record as an instance of a class that dataclasses generates in full."""
    cls = type(record)
    spec = [(f.name, f.type, dataclasses.field(default=f.default)) for f in dataclasses.fields(cls)]
    twin = dataclasses.make_dataclass(cls.__name__, spec, frozen=True, slots=True)
    twin.__qualname__ = cls.__qualname__
    return twin(*(getattr(record, f.name) for f in dataclasses.fields(cls)))


def test_every_record_is_sampled() -> None:
    records = {c for c in vars(p).values() if isinstance(c, type) and issubclass(c, p._Record)}
    assert records - {p._Record} == {type(s) for s in SAMPLES}


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_a_record_compares_hashes_and_prints_as_a_generated_dataclass(record: Any) -> None:
    twin = generated(record)
    assert repr(record) == repr(twin)
    assert record == dataclasses.replace(record)
    assert record != twin  # another class, as between two dataclasses
    assert (record == 1) is False and record != ()
    first = dataclasses.fields(record)[0].name
    if isinstance(getattr(record, first), int):  # a changed field makes it unequal
        changed = dataclasses.replace(record, **{first: getattr(record, first) + 1})
        assert changed != record and (changed == record) is False
    try:
        expected: Any = hash(twin)
    except TypeError as exc:  # a record with a list or dict field is unhashable
        with pytest.raises(TypeError, match=str(exc)):
            hash(record)
    else:
        assert hash(record) == expected
        assert hash(dataclasses.replace(record)) == hash(record)


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_a_record_is_frozen_slotted_and_pickles(record: Any) -> None:
    first = dataclasses.fields(record)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(record, first, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(record, first)
    assert not hasattr(record, "__dict__")
    assert pickle.loads(pickle.dumps(record)) == record
    assert dataclasses.asdict(record) == dataclasses.asdict(generated(record))


def test_a_record_refers_to_itself_without_recursing() -> None:
    loop: list[Any] = []
    allowed = p.Allowed(loop)
    loop.append(allowed)
    assert repr(allowed) == "Allowed(ordinals=[...])"
