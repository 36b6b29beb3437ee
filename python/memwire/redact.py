"""Redaction on write: secrets and personal data are replaced before anything touches disk.

:func:`redact` runs on content and context after NFKC normalisation (so full-width look-alikes
of ``@`` or digits are caught too) and before storage and indexing. Each match becomes a
placeholder ``[REDACTED:<kind>]``; the original text is never stored, indexed or logged.
The list of kinds is documented in docs/storage.md; it errs on the side of redacting.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["KINDS", "placeholder", "redact"]


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_B64URL = r"[A-Za-z0-9_-]"

# (kind, pattern, replacement). Order matters: whole blocks first, then structured tokens,
# then the looser personal-data patterns.
_Rule = tuple[str, "re.Pattern[str]", "str | Callable[[re.Match[str]], str]"]


def _keep_prefix(kind: str) -> Callable[[re.Match[str]], str]:
    """Keep group 1 (a label such as ``Bearer `` or ``aws_secret_access_key=``)."""

    def sub(match: re.Match[str]) -> str:
        return match.group(1) + placeholder(kind)

    return sub


def _phone(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = sum(ch.isdigit() for ch in text)
    if not 9 <= digits <= 15:
        return text
    separators = sum(ch in " .-()" for ch in text)
    if not text.startswith("+") and separators < 2 and "(" not in text:
        return text  # a bare number or a single hyphen: more likely an id than a phone
    parts = re.split(r"[ .()-]+", text.lstrip("+").strip("() "))
    if "." in text and all(len(p) <= 3 for p in parts) and len(parts) == 4:
        return text  # an IPv4 address
    if re.fullmatch(r"\d{4}[-.]\d{2}[-.]\d{2}(?:[ T]\d{2})?", text):
        return text  # a date
    return placeholder("phone")


_RULES: list[_Rule] = [
    (
        "private",
        re.compile(r"<private\b[^>]*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL),
        placeholder("private"),
    ),
    (
        "private_key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        placeholder("private_key"),
    ),
    (
        "jwt",
        re.compile(rf"\beyJ{_B64URL}{{6,}}\.{_B64URL}{{6,}}\.{_B64URL}{{6,}}"),
        placeholder("jwt"),
    ),
    (
        "bearer_token",
        re.compile(r"(\b[Bb]earer\s+)(?!\[REDACTED:)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE),
        _keep_prefix("bearer_token"),
    ),
    (
        "aws_access_key",
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b"),
        placeholder("aws_access_key"),
    ),
    (
        "aws_secret_key",
        re.compile(
            r"(\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
            re.IGNORECASE,
        ),
        _keep_prefix("aws_secret_key"),
    ),
    (
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        placeholder("github_token"),
    ),
    (
        "slack_token",
        re.compile(
            r"\bxox[abposrec]-[A-Za-z0-9-]{10,}"
            r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"
        ),
        placeholder("slack_token"),
    ),
    (
        "google_api_key",
        re.compile(rf"\bAIza{_B64URL}{{35}}(?!{_B64URL})|\bya29\.{_B64URL}{{20,}}"),
        placeholder("google_api_key"),
    ),
    (
        "api_key",
        re.compile(rf"\bsk-{_B64URL}{{20,}}"),
        placeholder("api_key"),
    ),
    (
        "email",
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
        ),
        placeholder("email"),
    ),
    (
        "phone",
        re.compile(
            r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{1,4}){1,5}"
            r"(?![\w]|[.-]\d)"
            r"|(?<![\w+.-])\+\d{9,15}\b"
        ),
        _phone,
    ),
]

KINDS: tuple[str, ...] = tuple(rule[0] for rule in _RULES)

_DIGITS = "0123456789"


def _triggers(text: str, low: str) -> dict[str, bool]:
    """Cheap substring tests: a rule whose trigger is false cannot match, so it is skipped."""
    return {
        "private": "<private" in low,
        "private_key": "private key" in low,
        "jwt": "eyJ" in text,
        "bearer_token": "bearer" in low,
        "aws_access_key": _AWS_HINT.search(text) is not None,
        "aws_secret_key": "secret" in low,
        "github_token": "_" in text and ("gh" in text or "github_pat" in text),
        "slack_token": "xox" in text or "hooks.slack" in text,
        "google_api_key": "AIza" in text or "ya29." in text,
        "api_key": "sk-" in text,
        "email": "@" in text,
        "phone": sum(map(text.count, _DIGITS)) >= 9,
    }


_AWS_HINT = re.compile("A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA)")


def redact(text: str) -> str:
    """Return ``text`` with every secret and personal datum replaced by a placeholder."""
    triggers = _triggers(text, text.lower())
    for kind, pattern, replacement in _RULES:
        if triggers[kind]:
            text = pattern.sub(replacement, text)
    return text
