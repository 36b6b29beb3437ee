"""The shared validation helpers: text, names, tags, dates, config."""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta, timezone

import pytest
from memwire import _dates, config
from memwire._text import clean_bank, clean_tags, clean_text, index_text, nfkc
from memwire.errors import InvalidInputError


def test_nfkc_normalises_compatibility_forms() -> None:
    assert nfkc("\uff46\uff55\uff4c\uff4c\uff20width \ufb01") == "full@width fi"
    wide = "\uff2b\uff55\uff42\uff45\uff52\uff4e\uff45\uff54\uff45\uff53"
    assert clean_text(wide, "content", 100) == "Kubernetes"


@pytest.mark.parametrize("bad", [None, 3, b"bytes", ["x"]])
def test_text_must_be_a_string(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="must be a string"):
        clean_text(bad, "content", 100)


@pytest.mark.parametrize("bad", ["", "   ", "\n\t"])
def test_blank_text_is_rejected(bad: str) -> None:
    with pytest.raises(InvalidInputError, match="must not be blank"):
        clean_text(bad, "content", 100)
    assert clean_text(bad, "context", 100, allow_blank=True) == bad


def test_lone_surrogates_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="surrogate"):
        clean_text("abc\ud800def", "content", 100)
    with pytest.raises(InvalidInputError, match="surrogate"):
        clean_bank("bank\udfff")


def test_too_long_text_is_rejected() -> None:
    with pytest.raises(InvalidInputError, match="too long"):
        clean_text("x" * 11, "content", 10)


def test_bank_names() -> None:
    assert clean_bank("  proj  ") == "proj"
    with pytest.raises(InvalidInputError, match="control"):
        clean_bank("a\x00b")
    with pytest.raises(InvalidInputError, match="too long"):
        clean_bank("b" * 129)


def test_tags_are_cleaned_and_deduplicated() -> None:
    assert clean_tags(["a", " b ", "a", "\uff43"]) == ["a", "b", "c"]
    assert clean_tags("solo") == ["solo"]
    assert clean_tags(None) == []
    with pytest.raises(InvalidInputError):
        clean_tags([1])
    with pytest.raises(InvalidInputError):
        clean_tags({"a": 1})
    with pytest.raises(InvalidInputError, match="at most"):
        clean_tags([f"t{i}" for i in range(33)])


def test_index_text_counts_the_content_twice_when_there_is_context() -> None:
    assert index_text("a", None) == "a"
    assert index_text("a", "") == "a"
    assert index_text("a", "b") == "a\na\nb"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=timezone.utc)),
        ("2024-05-01T09:30:00Z", datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)),
        ("2024-05-01T11:30:00+02:00", datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)),
        ("2024-05-01T09:30:00", datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)),
        (date(2024, 5, 1), datetime(2024, 5, 1, tzinfo=timezone.utc)),
        (datetime(2024, 5, 1, 9, 30), datetime(2024, 5, 1, 9, 30, tzinfo=timezone.utc)),
        (
            datetime(2024, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=-5))),
            datetime(2024, 5, 1, 14, 30, tzinfo=timezone.utc),
        ),
    ],
)
def test_created_at_parses_to_utc(given: object, expected: datetime) -> None:
    parsed = _dates.parse_created_at(given)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize("bad", ["yesterday", "2024-13-01", "", 1714550000, 3.5, True, ["x"]])
def test_bad_created_at(bad: object) -> None:
    with pytest.raises(InvalidInputError, match="created_at"):
        _dates.parse_created_at(bad)


def test_stored_dates_are_fixed_width_and_round_trip() -> None:
    early = datetime(5, 1, 2, 3, 4, 5, 6, tzinfo=timezone.utc)
    text = _dates.format_utc(early)
    assert text == "0005-01-02T03:04:05.000006Z"
    assert _dates.parse_stored(text) == early
    late = _dates.format_utc(datetime(2024, 1, 1, tzinfo=timezone.utc))
    assert text < late


def test_config_merge_validates_known_keys_and_refuses_others() -> None:
    update = {"recall_max_tokens": 500, "retain_tags": ["x", "x"], "memory_wire": {"a": [1]}}
    merged = config.merge_config({"keep": 1}, update)  # a key stored before keys were checked
    assert merged == {
        "keep": 1,
        "recall_max_tokens": 500,
        "retain_tags": ["x"],
        "memory_wire": {"a": [1]},
    }
    # None removes any key, an unknown one included; setting an unknown key is refused by name
    assert config.merge_config(merged, {"keep": None}) == {
        "recall_max_tokens": 500,
        "retain_tags": ["x"],
        "memory_wire": {"a": [1]},
    }
    with pytest.raises(InvalidInputError, match="unknown config key 'recallMaxTokens'; the keys"):
        config.merge_config(merged, {"recall_max_tokens": 1, "recallMaxTokens": 5})
    # an import of an older export keeps such a key verbatim
    assert config.merge_config({}, {"custom": [1]}, strict=False) == {"custom": [1]}


@pytest.mark.parametrize(
    "bad",
    [
        {"recall_max_tokens": 0},
        {"recall_max_tokens": "10"},
        {"recall_max_tokens": True},
        {"ttl_days": -1},
        {"ttl_days": math.nan},
        {"ttl_days": "7"},
        {"retain_tags": "x"},
        {"retain_tags": [3]},
        {"custom": 1},
        {"memory_wire": [1]},
        {"memory_wire": {"k": object()}},
        {"memory_wire": {"k": math.inf}},
        {"": 1},
        {1: 1},
    ],
)
def test_config_rejects_bad_values(bad: dict[object, object]) -> None:
    with pytest.raises(InvalidInputError):
        config.merge_config({}, bad)


def test_config_must_be_a_mapping() -> None:
    with pytest.raises(InvalidInputError, match="dict"):
        config.merge_config({}, [("a", 1)])


def test_budget_precedence() -> None:
    assert config.recall_budget({}, None) == config.DEFAULT_RECALL_TOKENS == 8000
    assert config.recall_budget({"recall_max_tokens": 50}, None) == 50
    assert config.recall_budget({"recall_max_tokens": 50}, 7) == 7
    with pytest.raises(InvalidInputError):
        config.recall_budget({}, 0)
