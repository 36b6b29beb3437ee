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
    # A dated turn's context starts with its date, even without neighbours.
    assert all(rows[i].context == "8 May 2023" for i in ids)
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


def test_a_question_is_stored_without_its_answer(mem: Memory) -> None:
    turns = [
        {"speaker": "Joanna", "text": "Taking breaks is nice! Watched any good movies lately?"},
        {"speaker": "Nate", "text": 'I saw "Little Women" and the acting was great.'},
        {"speaker": "Joanna", "text": "Nice, I will see it too"},
    ]
    ids = mem.retain_conversation(turns, bank="q")
    rows = {r.id: r for r in mem.memories(bank="q", limit=10)}
    # The question keeps what came before it (nothing here) but not the reply; the reply and
    # the turn after it keep the question in their context.
    assert rows[ids[0]].context is None
    assert rows[ids[1]].context == f"{turns[0]['text']}\n{turns[2]['text']}"
    assert rows[ids[2]].context == f"{turns[0]['text']}\n{turns[1]['text']}"
    # So a query with words of both comes to the answer first (with the reply in its context,
    # the question carried the same words and came first), and words of the answer alone no
    # longer bring the question.
    hits = mem.recall("good movies lately with great acting", bank="q", limit=3)
    assert hits[0].id == ids[1]
    assert ids[0] not in [h.id for h in mem.recall("Little Women acting", bank="q", limit=3)]


def test_a_trailing_space_after_the_question_mark_still_asks(mem: Memory) -> None:
    turns = [
        {"speaker": "A", "text": "ready?  ", "session": 1},
        {"speaker": "B", "text": "yes", "session": 1},
    ]
    ids = mem.retain_conversation(turns, bank="t", before=0, after=1)
    rows = {r.id: r for r in mem.memories(bank="t", limit=10)}
    assert rows[ids[0]].context is None
    assert rows[ids[1]].context is None


@pytest.mark.parametrize(
    ("created_at", "line"),
    [
        (datetime(2023, 10, 6, 9, 0, tzinfo=timezone.utc), "6 October 2023"),
        ("2023-12-31T23:30:00-02:00", "1 January 2024"),  # the UTC date
        ("2024-02-29", "29 February 2024"),
    ],
)
def test_the_date_heads_the_context(mem: Memory, created_at: object, line: str) -> None:
    turns = [
        {"speaker": "Ana", "text": "the launch slipped", "created_at": created_at},
        {"speaker": "Ben", "text": "again", "created_at": created_at},
    ]
    ids = mem.retain_conversation(turns, bank="d")
    rows = {r.id: r for r in mem.memories(bank="d", limit=10)}
    assert rows[ids[0]].context == f"{line}\nagain"
    assert rows[ids[1]].context == f"{line}\nthe launch slipped"
    # A question naming the month finds the turns of that month.
    month = line.split()[1]
    other = mem.retain_conversation(
        [{"speaker": "Ana", "text": "the launch is on track", "created_at": "2020-03-03"}],
        bank="d",
    )
    hits = mem.recall(f"what slipped about the launch in {month}", bank="d", limit=3)
    assert hits[0].id in ids and other[0] not in [h.id for h in hits[:2]]
