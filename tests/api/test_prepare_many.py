"""``prepare_many`` (retain_many's bulk preparation, with a path of its own for plain strings)
gives exactly the drafts, and the errors, of preparing each item alone with ``item_draft``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from memwire._kernel.contract import Kernel
from memwire.errors import InvalidInputError
from memwire.memory.items import build, item_draft, new_ids, prepare, prepare_many
from memwire.store import NewMemory

pytestmark = pytest.mark.backend_independent

NOW = "2026-12-03T07:00:00.000000Z"

ITEMS: list[Any] = [
    "a plain note about the deploy",
    "my password is hunter2x9 for the router",  # redacted
    "mail bob@example.com or call +1 555 123 4567",  # redacted twice
    "caf\u00e9 \uff21\uff22\uff23 \u212a",  # NFKC changes it
    "  padded  ",
    "a plain note about the deploy",  # a duplicate: prepared all the same
    {"content": "with tags", "tags": ["Work", "work", "ops"], "context": "ctx token: abc123xyz9"},
    {"content": "a document", "document_id": "doc-1", "update_mode": "append"},
    {"content": "dated", "created_at": "2024-05-01T10:00:00Z", "supersedes": ["mem_a", "mem_a"]},
    {"content": "empty lists", "tags": [], "supersedes": []},
    {"content": "blank context", "context": "   "},
]


def test_prepare_many_equals_item_draft_one_by_one() -> None:
    ids = [f"mem_{i:032x}" for i in range(len(ITEMS))]
    drafts = prepare_many(ITEMS, NOW, ids)
    assert drafts == [item_draft(item, NOW, i) for item, i in zip(ITEMS, ids, strict=True)]
    assert "[REDACTED:password]" in drafts[1][1] and drafts[3][1] == "caf\u00e9 ABC K"
    assert drafts[6][3] == ("work", "ops") and drafts[8][9] == ("mem_a",)


def test_a_kernels_redaction_gate_changes_no_draft(kernel: Kernel) -> None:
    ids = [f"mem_{i:032x}" for i in range(len(ITEMS))]
    drafts = prepare_many(ITEMS, NOW, ids, kernel.may_redact_many)
    assert drafts == prepare_many(ITEMS, NOW, ids)
    assert "[REDACTED:password]" in drafts[1][1] and drafts[0][1] == ITEMS[0]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("   ", "content must not be blank"),
        ("x" * 100_001, "content is too long"),
        ("bad \ud800 text", "lone surrogate"),
        (b"bytes", "each item must be a string or a dict"),
        ({"content": "x", "tags": ""}, "tag must not be blank"),
        ({"content": "x", "supersedes": ""}, "supersedes must be a list"),
        ({"content": "x", "tags": ["sk-abcdefghijklmnopqrstuvwxyz"]}, "tag looks like"),
        ({"text": "x"}, "unknown item keys: text"),
    ],
)
def test_prepare_many_refuses_what_item_draft_refuses(bad: object, message: str) -> None:
    items = ["fine", bad]
    with pytest.raises(InvalidInputError) as alone:
        item_draft(bad, NOW, "mem_1")
    with pytest.raises(InvalidInputError, match=r"^items\[1\]: ") as bulk:
        prepare_many(items, NOW, ["mem_0", "mem_1"])
    assert message in str(alone.value)
    assert str(bulk.value) == f"items[1]: {alone.value}"


def test_build_places_the_vector_before_supersedes() -> None:
    memory = prepare("some content", supersedes=["mem_x"], memory_id="mem_1", now=NOW)
    built = build(item_draft({"content": "some content", "supersedes": ["mem_x"]}, NOW, "mem_1"))
    assert built == memory and memory.vector is None
    with_vector = build(prepare_many(["some content"], NOW, ["mem_1"])[0], b"\x01\x00")
    assert isinstance(with_vector, NewMemory)
    assert (with_vector.vector, with_vector.supersedes) == (b"\x01\x00", ())


def test_new_ids_are_unique_well_formed_and_in_item_order() -> None:
    ids = new_ids(5_000)
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"mem_[0-9a-f]{32}", i) for i in ids)
    # In item order, so a bulk write appends to the id index.
    assert ids == sorted(ids) and len({i[:16] for i in ids}) == 1
