"""Redaction's gate in the kernel (``may_redact_many``) is the Python ``_may_redact`` exactly: the
Rust one, on the generated battery of test_redact_differential.py and on hypothesis text with
non-ASCII, surrogates, digits and capitals; and ``redact_many`` is ``redact`` of each text."""

from __future__ import annotations

import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from memwire import redact as redact_module
from memwire._kernel.contract import Kernel
from memwire.redact import redact, redact_many
from test_redact_differential import ODD, PROSE, _gate_literals, _mutate, texts


def specification(batch: list[str]) -> list[bool]:
    return [redact_module._may_redact(text, text.lower()) for text in batch]


@pytest.mark.backend_independent
def test_only_two_non_ascii_characters_lower_to_ascii() -> None:
    """The Rust gate lowers ASCII, U+212A and U+0130 as ``str.lower`` does and leaves every other
    character non-ASCII: true of this interpreter's Unicode tables."""
    to_ascii = {
        cp: chr(cp).lower()
        for cp in range(0x80, 0x110000)
        if any(ord(ch) < 0x80 for ch in chr(cp).lower())
    }
    assert to_ascii == {0x130: "i\u0307", 0x212A: "k"}


@pytest.mark.parametrize("seed", [31, 32])
def test_the_kernels_gate_equals_the_specification_on_the_battery(
    both_kernels: tuple[Kernel, Kernel], seed: int
) -> None:
    rng = random.Random(seed)
    cases = texts(3000, seed)
    for literal in _gate_literals():
        cases += [literal, f"x {literal} y", literal.upper(), literal.lower(), literal[:-1]]
        cases += [_mutate(rng, literal) for _ in range(20)]
        # Look-alikes: the Kelvin sign for "k", U+0130 for "i", a surrogate inside.
        cases += [literal.replace("k", "\u212a"), literal.replace("i", "\u0130")]
        cases += [literal[:1] + "\ud800" + literal[1:], literal + "\udfff"]
    cases += [
        " ".join(rng.choice(PROSE + ODD) for _ in range(rng.randint(1, 30))) for _ in range(2000)
    ]
    cases += ["".join(rng.choice(string.digits + "ABC .") for _ in range(12)) for _ in range(500)]
    cases += ["", "a", "@", "12345678", "123456789", "a.abcdef.b", "a.abcde.b", "\u212aey"]
    expected = specification(cases)
    rust, python = both_kernels
    assert rust.may_redact_many(cases) == expected
    assert python.may_redact_many(cases) == expected
    assert 0.1 * len(cases) < sum(expected) < 0.9 * len(cases)


_PIECES = st.one_of(
    st.sampled_from(_gate_literals()),
    st.text(alphabet=st.characters(), max_size=8),  # any code point, surrogates included
    st.text(alphabet=string.digits + string.ascii_uppercase + "._-=:/@<", max_size=6),
    st.sampled_from(["\u212a", "\u0130", "\u017f", "\uff21", "\u0661", "\ud83d", "é", " "]),
)


@settings(max_examples=400, deadline=None)
@given(batch=st.lists(st.lists(_PIECES, max_size=6).map("".join), max_size=8))
def test_the_kernels_gate_equals_the_specification_on_any_text(
    both_kernels: tuple[Kernel, Kernel], batch: list[str]
) -> None:
    expected = specification(batch)
    rust, python = both_kernels
    assert rust.may_redact_many(batch) == expected
    assert python.may_redact_many(batch) == expected


def test_redact_many_is_redact_of_each_text(kernel: Kernel) -> None:
    batch = [*texts(2000, 33), " ".join(PROSE), "nothing to see here", "call 555 123 4567 now"]
    redacted = redact_many(batch, kernel.may_redact_many)
    assert redacted == [redact(text) for text in batch] == redact_many(batch)
    assert sum(a != b for a, b in zip(batch, redacted, strict=True)) > 200
