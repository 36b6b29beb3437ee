"""Bank names with invisible characters are refused (``default`` + U+200B would be a second
bank no one can tell apart), and no name may carry bidi controls."""

from __future__ import annotations

import pytest
from memwire._text import clean_bank, clean_tags
from memwire.errors import InvalidInputError


@pytest.mark.parametrize(
    "name", ["default\u200b", "\ufeffdefault", "de\u200dfault", "a\u202eb", "x\u2066y\u2069"]
)
def test_invisible_characters_in_bank_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInputError, match=r"invisible|bidi"):
        clean_bank(name)


def test_ordinary_names_pass() -> None:
    assert clean_bank("acme/web") == "acme/web"
    assert clean_bank("équipe-données") == "équipe-données"
    assert clean_tags(["\U0001f468\u200d\U0001f469\u200d\U0001f467"])  # an emoji family tag


def test_bidi_controls_in_tags_are_refused() -> None:
    with pytest.raises(InvalidInputError, match="bidi"):
        clean_tags(["safe\u202etxt.exe"])
