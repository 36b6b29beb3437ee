"""Redaction's gate of the pure kernel: the specification itself, ``memwire.redact._may_redact``."""

from __future__ import annotations

from collections.abc import Sequence


def may_redact_many(texts: Sequence[str]) -> list[bool]:
    from memwire.redact import _may_redact

    return [_may_redact(text, text.lower()) for text in texts]
