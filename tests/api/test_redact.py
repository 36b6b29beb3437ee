"""Redaction: every kind is caught, ordinary text is left alone."""

from __future__ import annotations

import pytest
from memwire.redact import KINDS, redact

JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("a <private>my diary</private> b", "my diary", "private"),
        ("a <PRIVATE>unterminated secret", "unterminated", "private"),
        (
            "k -----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- end",
            "MIIEow",
            "private_key",
        ),
        ("-----BEGIN PRIVATE KEY-----\nMIIEvQ truncated", "MIIEvQ", "private_key"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
            "b3Blbn",
            "private_key",
        ),
        (f"token {JWT} here", JWT, "jwt"),
        ("Authorization: Bearer abc123def456ghi789", "abc123def456ghi789", "bearer_token"),
        ("id AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_key",
        ),
        ("gh ghp_" + "A1b2" * 9, "ghp_" + "A1b2" * 9, "github_token"),
        ("pat github_pat_" + "x" * 30, "github_pat_" + "x" * 30, "github_token"),
        ("slack xoxb-1234567890-abcdefghijkl", "xoxb-1234567890-abcdefghijkl", "slack_token"),
        (
            "hook https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXXXXXXXXXXXXXX",
            "hooks.slack.com",
            "slack_token",
        ),
        ("g AIza" + "S" * 35, "AIza" + "S" * 35, "google_api_key"),
        ("o sk-" + "q" * 48, "sk-" + "q" * 48, "api_key"),
        ("o sk-proj-" + "Zz9_" * 10, "sk-proj-", "api_key"),
        ("a sk-ant-api03-" + "k" * 40, "sk-ant-api03-", "api_key"),
        ("mail Jane.Doe+tag@mail.example.co.uk now", "Jane.Doe", "email"),
        ("call +1 (555) 123-4567 today", "123-4567", "phone"),
        ("call 555-123-4567 today", "555-123-4567", "phone"),
        ("call +44 20 7946 0958", "7946", "phone"),
        ("call +14155552671", "4155552671", "phone"),
    ],
)
def test_each_kind_is_redacted(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert redact(out) == out  # idempotent: placeholders are never redacted again


@pytest.mark.parametrize(
    "text",
    [
        "The deploy runs at 09:30 on 2024-05-01 and took 12.5 seconds",
        "version 1.2.3, port 8080, 3 cats and 12 dogs",
        "server 192.168.100.200 answered",
        "order 123456789012345 shipped",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "the task-list: skip this, ask a bearer of news",
        "discuss the sk-learn migration",
        "email me later",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact(text) == text


def test_kinds_are_listed() -> None:
    assert set(KINDS) >= {
        "private",
        "private_key",
        "jwt",
        "bearer_token",
        "aws_access_key",
        "github_token",
        "slack_token",
        "google_api_key",
        "api_key",
        "email",
        "phone",
    }
