"""Request bodies: the stepwise parse of a large body gives exactly what ``json.loads`` gives,
the same value or the same error (memwire/server/body.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire.errors import InvalidInputError
from memwire.server import body
from memwire.server.body import STEPWISE_MIN_BYTES, parse_json

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**19), 10**19)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=30,
)


def outcome(raw: bytes, stepwise: bool) -> tuple[str, Any]:
    try:
        return "value", parse_json(raw, stepwise=stepwise)
    except InvalidInputError as exc:
        return "error", str(exc)


def same(raw: bytes) -> None:
    got, want = outcome(raw, True), outcome(raw, False)
    assert got == want
    # The plain parse is json.loads itself: the same value, with the same key order.
    if want[0] == "value":
        assert json.dumps(got[1]) == json.dumps(json.loads(raw))


@settings(max_examples=300, deadline=None)
@given(value=JSON, indent=st.sampled_from([None, 0, 2]), pad=st.sampled_from(["", " ", "\n\t "]))
def test_values_as_json_loads_gives_them(value: Any, indent: int | None, pad: str) -> None:
    same((pad + json.dumps(value, indent=indent) + pad).encode())


JUNK = ["", "x", ",", "]", "}", "NaN", "1e999", "\ufeff", '"']


@settings(max_examples=300, deadline=None)
@given(value=JSON, cut=st.integers(0, 200), junk=st.sampled_from(JUNK))
def test_broken_bodies_fail_with_json_loads_error(value: Any, cut: int, junk: str) -> None:
    # Bodies cut short or with a stray character anywhere: the same 400 message.
    text = json.dumps({"items": [value, value], "bank": "b"})
    cut = min(cut, len(text))
    same((text[:cut] + junk + text[cut:]).encode())
    same((text[:cut] + junk).encode())


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"  \n",
        b"\xff\xfe{}",
        "\ufeff{}".encode(),
        b'{"a": 1, "a": [2, 3], "a": [4]}',
        b'{"items": [1, 2,]}',
        b'{"items": [NaN]}',
        b'{"items": [Infinity]}',
        b'{"n": 123456789012345678901}',
        b'[[[]], {"a": {"b": [1]}}]',
        b'{"items": []}  x',
        b'"just a string"',
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
def test_edge_bodies(raw: bytes) -> None:
    same(raw)


def test_a_large_body_is_parsed_stepwise_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    # A multi-byte character across a decode chunk's end, items that are objects, a repeated key.
    items = [{"content": "é" * (i % 7) + f"note {i}", "tags": ["t"]} for i in range(4000)]
    dump = lambda v: json.dumps(v, ensure_ascii=False)  # noqa: E731
    raw = f'{{"items": {dump(items)}, "items2": [], "items": {dump(items[:3])}}}'
    raw_bytes = ("\n" + raw).encode()
    steps = []
    real = body._array

    def counted(text: str, at: int) -> Any:
        found = real(text, at)
        steps.append(len(found[0]))
        return found

    monkeypatch.setattr(body, "_DECODE_CHUNK", 1001)
    monkeypatch.setattr(body, "_array", counted)
    assert parse_json(raw_bytes, stepwise=True) == json.loads(raw_bytes)
    assert steps == [4000, 0, 3]  # every top-level array went element by element
    assert len(raw_bytes) > STEPWISE_MIN_BYTES / 2


def test_decoding_in_chunks_refuses_what_utf8_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body, "_DECODE_CHUNK", 3)
    for raw in [b'{"a": "\xc3"}', b'{"a": "\xed\xa0\x80"}', b'["\xe2\x82"]']:
        with pytest.raises(InvalidInputError, match="not UTF-8"):
            parse_json(raw, stepwise=True)
    assert parse_json('["€€€"]'.encode(), stepwise=True) == ["€€€"]
