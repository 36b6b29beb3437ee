"""Memory.retain_conversation: one memory per turn, with the turns around it as context."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from memwire import Memory
from memwire.errors import InvalidInputError

TURNS = [
    {"speaker": "Ana", "text": "we should move the standup", "session": 1},
    {"speaker": "Ben", "text": "Thursday works for me", "session": 1},
    {"speaker": "Ana", "text": "ok, 10am then", "session": 1},
    {"speaker": "Ben", "text": "booked the room", "session": 1},
    {"speaker": "Ana", "text": "new week, new sprint", "session": 2},
    {"speaker": "Ben", "text": "I will write the plan", "session": 2},
]


def test_each_turn_is_stored_with_its_window(mem: Memory) -> None:
    ids = mem.retain_conversation(TURNS, bank="chat")
    assert len(ids) == len(TURNS)
    got = {r.id: r for r in mem.memories(bank="chat", limit=100)}
    rows = [got[i] for i in ids]
    assert [r.content for r in rows] == [f"{t['speaker']}: {t['text']}" for t in TURNS]
    # 2 before and 1 after, never across a session, texts without speaker labels.
    assert rows[0].context == "Thursday works for me"
    assert rows[2].context == ("we should move the standup\nThursday works for me\nbooked the room")
    assert rows[3].context == "Thursday works for me\nok, 10am then"
    assert rows[4].context == "I will write the plan"
    assert rows[5].context == "new week, new sprint"
    # The context is what makes a bare turn findable.
    hits = mem.recall("when is the standup", bank="chat", limit=3)
    assert ids[1] in [h.id for h in hits]


def test_window_sizes_tags_and_dates(mem: Memory) -> None:
    when = datetime(2023, 5, 8, 13, 56, tzinfo=timezone.utc)
    turns = [dict(t, created_at=when) for t in TURNS[:3]]
    turns[1]["tags"] = ["decision"]
    ids = mem.retain_conversation(turns, bank="c", before=0, after=0, tags=["standup"])
    rows = {r.id: r for r in mem.memories(bank="c", limit=10)}
    assert all(rows[i].context is None for i in ids)
    assert all(rows[i].created_at == when for i in ids)
    assert list(rows[ids[0]].tags) == ["standup"]
    assert sorted(rows[ids[1]].tags) == ["decision", "standup"]
    wide = mem.retain_conversation(TURNS[:4], bank="w", before=3, after=0)
    last = next(r for r in mem.memories(bank="w", limit=10) if r.id == wide[3])
    assert last.context == "we should move the standup\nThursday works for me\nok, 10am then"


def test_interleaved_sessions_keep_their_own_windows(mem: Memory) -> None:
    turns = [
        {"speaker": "A", "text": "alpha one", "session": "x"},
        {"speaker": "B", "text": "beta one", "session": "y"},
        {"speaker": "A", "text": "alpha two", "session": "x"},
    ]
    ids = mem.retain_conversation(turns, bank="i")
    rows = {r.id: r for r in mem.memories(bank="i", limit=10)}
    assert rows[ids[0]].context == "alpha two"
    assert rows[ids[1]].context is None
    assert rows[ids[2]].context == "alpha one"


@pytest.mark.parametrize(
    ("turns", "kwargs", "message"),
    [
        ("Ana: hi", {}, "turns must be a list"),
        ({"speaker": "Ana", "text": "hi"}, {}, "turns must be a list"),
        (["hi"], {}, r"turns\[0\]: a turn must be a dict"),
        ([{"speaker": "", "text": "hi"}], {}, r"turns\[0\]: speaker must be"),
        ([{"speaker": "Ana"}], {}, r"turns\[0\]: text must be"),
        ([{"speaker": "Ana", "text": "hi", "who": 1}], {}, "unknown key 'who'"),
        ([{"speaker": "Ana", "text": "hi", "session": 1.5}], {}, "session must be"),
        ([{"speaker": "Ana", "text": "hi"}], {"before": -1}, "before must be"),
        ([{"speaker": "Ana", "text": "hi"}], {"after": 21}, "after must be"),
        ([{"speaker": "Ana", "text": "hi"}], {"after": True}, "after must be"),
        ([{"speaker": "Ana", "text": "hi", "created_at": "nope"}], {}, r"items\[0\]"),
    ],
)
def test_bad_turns_are_refused_and_nothing_is_written(
    mem: Memory, turns: object, kwargs: dict[str, object], message: str
) -> None:
    good = {"speaker": "Ben", "text": "first"}
    with pytest.raises(InvalidInputError, match=message):
        if isinstance(turns, list):
            mem.retain_conversation([*turns, good], **kwargs)  # type: ignore[arg-type]
        else:
            mem.retain_conversation(turns, **kwargs)  # type: ignore[arg-type]
    assert mem.memories(limit=10) == []
