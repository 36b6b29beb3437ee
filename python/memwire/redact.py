"""Redaction on write: secrets and personal data are replaced before anything touches disk.

:func:`redact` runs on content and context after NFKC normalisation (so full-width look-alikes
of ``@`` or digits are caught too) and before storage and indexing. Each match becomes a
placeholder ``[REDACTED:<kind>]``; the original text is never stored, indexed or logged.
:func:`secret_kinds` names what a string would lose: identifiers (tags, document ids, bank
names, config strings) are refused instead of silently rewritten. The rules are tabled in
docs/security.md; they err on the side of redacting.
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import re
from collections.abc import Callable
from typing import TypeAlias

__all__ = ["KINDS", "placeholder", "redact", "redact_many", "secret_kinds"]


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


_B64URL = r"[A-Za-z0-9_-]"
_NOT_PLACEHOLDER = r"(?!\[REDACTED:)"

_Replacement: TypeAlias = "str | Callable[[re.Match[str]], str]"
# A trigger is a cheap test a text must pass for the rule's pattern to be tried at all: a
# tuple of substrings of the lower-cased text (any one will do), or a function of
# (text, lower-cased text), or None (always tried).
_Trigger: TypeAlias = "tuple[str, ...] | Callable[[str, str], bool] | None"
_Rule: TypeAlias = "tuple[str, _Trigger, re.Pattern[str], _Replacement]"


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


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        n = ord(ch) - 48
        if i % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


# Issuer prefixes of payment cards (Visa, Mastercard, Amex, Discover, Diners, JCB, UnionPay,
# Maestro): a Luhn-valid number without one is more likely an order or tracking number.
_CARD_PREFIX = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[0689]|6(?:011|5|4[4-9]|2)|35|5[06-9]")


def _card(match: re.Match[str]) -> str:
    text = match.group(0)
    digits = re.sub(r"[ -]", "", text)
    if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and _luhn(digits):
        return placeholder("card_number")
    return text


def _basic(match: re.Match[str]) -> str:
    """``Basic <base64 of user:password>``; any other word after "Basic" is left alone."""
    value = match.group(2)
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    if b":" in decoded and all(32 <= b < 127 for b in decoded):
        return match.group(1) + placeholder("basic_auth")
    return match.group(0)


# Values after "password is" / "token:" that are words of a sentence, not secrets.
_NOT_SECRETS = frozenset(
    """a an the this that my your our his her their its it is was not no none null nil
    true false yes set unset empty blank missing required optional wrong incorrect correct
    invalid valid expired changed reset rotated stored saved hashed encrypted masked hidden
    redacted weak strong long short too still now being also only same different there here
    in on at of for to from with without by as and or but if when then than so very just
    needed necessary ignored disabled enabled case-sensitive""".split()  # noqa: SIM905
)

_CODE_CHARS = frozenset("()[]{}$<>")


def _assignment(kind_of: Callable[[str], str]) -> Callable[[re.Match[str]], str]:
    """Replace group 2 (the value) unless it reads as prose or code, keeping group 1."""

    def sub(match: re.Match[str]) -> str:
        value = match.group(2)
        bare = value.strip("\"'`.,;:!?")
        if (
            bare.lower() in _NOT_SECRETS
            or _CODE_CHARS.intersection(value)
            or (bare.isdigit() and len(bare) < 6)
            or len(bare) < 3
        ):
            return match.group(0)
        return match.group(1) + placeholder(kind_of(match.group(1)))

    return sub


def _password_or_secret(prefix: str) -> str:
    low = prefix.lower()
    return "password" if ("pass" in low or "pwd" in low) else "secret"


_SECRET_WORDS = frozenset(
    "password passwd pwd passphrase passcode secret token auth credential apikey".split()  # noqa: SIM905
)
_SECRET_PAIRS = frozenset({
    ("api", "key"), ("access", "key"), ("private", "key"), ("client", "secret"),
    ("signing", "key"), ("session", "key"), ("master", "key"), ("encryption", "key"),
    ("secret", "key"), ("auth", "key"),
})  # fmt: skip
_KEY_WORD = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")


def _key_is_secret(key: str) -> bool:
    words = [w.lower() for w in _KEY_WORD.findall(key)]
    words = [w[:-1] if w.endswith("s") and len(w) > 4 else w for w in words]
    return any(w in _SECRET_WORDS for w in words) or any(
        pair in _SECRET_PAIRS for pair in itertools.pairwise(words)
    )


def _named_secret(match: re.Match[str]) -> str:
    prefix = match.group(1)
    key = prefix.rstrip("\"' \t:=")
    if not _key_is_secret(key):
        return match.group(0)
    return _NAMED(match)


_NAMED = _assignment(_password_or_secret)


def _digits_at_least(n: int) -> Callable[[str, str], bool]:
    def test(text: str, low: str) -> bool:
        return sum(map(text.count, "0123456789")) >= n

    return test


_AWS_HINT = re.compile("A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|ROA|PKA)")

_RULES: list[_Rule] = [
    # Whole blocks first.
    (
        "private",
        ("<private",),
        re.compile(r"<private\b[^>]*>.*?(?:</private\s*>|\Z)", re.IGNORECASE | re.DOTALL),
        placeholder("private"),
    ),
    (
        "private_key",
        ("private key",),
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----.*?"
            r"(?:-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
        placeholder("private_key"),
    ),
    (
        "private_key",
        ("age-secret-key-",),
        re.compile(r"\bAGE-SECRET-KEY-1[0-9A-Z]{50,}"),
        placeholder("private_key"),
    ),
    # Credentials inside URLs (before email, which would see user:pass@host as an address).
    (
        "url_credentials",
        ("://",),
        re.compile(
            r"(\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@?#\[\]]*:)"
            + _NOT_PLACEHOLDER
            + r"[^\s/?#\[\]]+(?=@)"
        ),
        _keep_prefix("url_credentials"),
    ),
    (
        "discord_webhook",
        ("discord",),
        re.compile(
            r"https?://(?:(?:ptb|canary)\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]+"
        ),
        placeholder("discord_webhook"),
    ),
    (
        "slack_token",
        ("xox", "hooks.slack"),
        re.compile(
            r"\bxox[abposrec]-[A-Za-z0-9-]{10,}"
            r"|https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,}"
        ),
        placeholder("slack_token"),
    ),
    (
        "azure_sas",
        ("sig=",),
        re.compile(r"([?&;]sig=)" + _NOT_PLACEHOLDER + r"[A-Za-z0-9%+/=_-]{16,}"),
        _keep_prefix("azure_sas"),
    ),
    (
        "azure_key",
        ("accountkey", "sharedaccess"),
        re.compile(
            r"(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)\s*=\s*)"
            + _NOT_PLACEHOLDER
            + r"[^;\s\"'<>]{8,}",
            re.IGNORECASE,
        ),
        _keep_prefix("azure_key"),
    ),
    # Structured tokens, most specific first.
    (
        "jwt",
        ("eyj",),
        re.compile(rf"\beyJ{_B64URL}{{6,}}\.{_B64URL}{{6,}}\.{_B64URL}{{6,}}"),
        placeholder("jwt"),
    ),
    (
        "basic_auth",
        ("basic",),
        re.compile(r"(\bBasic\s+)([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.IGNORECASE),
        _basic,
    ),
    (
        "bearer_token",
        ("bearer",),
        re.compile(
            r"(\b[Bb]earer\s+)" + _NOT_PLACEHOLDER + r"[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE
        ),
        _keep_prefix("bearer_token"),
    ),
    (
        "authorization",
        ("authorization",),
        re.compile(
            r"(\bAuthorization[\"']?\s*[:=]\s*[\"']?(?:[A-Za-z][A-Za-z0-9-]*\s+)?)"
            + _NOT_PLACEHOLDER
            + r"[^\s\"',;]{8,}",
            re.IGNORECASE,
        ),
        _keep_prefix("authorization"),
    ),
    (
        "aws_access_key",
        lambda text, low: _AWS_HINT.search(text) is not None,
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA)[A-Z0-9]{16}\b"),
        placeholder("aws_access_key"),
    ),
    (
        "aws_secret_key",
        ("secret",),
        re.compile(
            r"(\b(?:aws_?)?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?)"
            r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
            re.IGNORECASE,
        ),
        _keep_prefix("aws_secret_key"),
    ),
    (
        "github_token",
        ("gh", "github_pat"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        placeholder("github_token"),
    ),
    (
        "gitlab_token",
        ("gl", "gr1348941"),
        re.compile(
            r"\bgl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas|ffct)-[A-Za-z0-9_-]{20,}"
            r"|\bGR1348941[A-Za-z0-9_-]{20,}"
        ),
        placeholder("gitlab_token"),
    ),
    (
        "stripe_key",
        ("_live_", "_test_", "whsec_"),
        re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|\bwhsec_[A-Za-z0-9+/=]{20,}"),
        placeholder("stripe_key"),
    ),
    (
        "npm_token",
        ("npm_",),
        re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),
        placeholder("npm_token"),
    ),
    (
        "pypi_token",
        ("pypi-",),
        re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{40,}"),
        placeholder("pypi_token"),
    ),
    (
        "huggingface_token",
        ("hf_", "api_org_"),
        re.compile(r"\b(?:hf_|api_org_)[A-Za-z0-9]{30,}\b"),
        placeholder("huggingface_token"),
    ),
    (
        "sendgrid_key",
        ("sg.",),
        re.compile(r"\bSG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),
        placeholder("sendgrid_key"),
    ),
    (
        "twilio_key",
        ("ac", "sk"),
        re.compile(r"\b(?:AC|SK)[0-9a-f]{32}\b"),
        placeholder("twilio_key"),
    ),
    (
        "telegram_bot_token",
        ("aa",),
        re.compile(r"\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
        placeholder("telegram_bot_token"),
    ),
    (
        "discord_bot_token",
        lambda text, low: text.count(".") >= 2,
        re.compile(
            r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![A-Za-z0-9_-])"
        ),
        placeholder("discord_bot_token"),
    ),
    (
        "google_api_key",
        ("aiza", "ya29.", "gocspx-"),
        re.compile(
            rf"\bAIza{_B64URL}{{35}}(?!{_B64URL})|\bya29\.{_B64URL}{{20,}}|\bGOCSPX-{_B64URL}{{24,}}"
        ),
        placeholder("google_api_key"),
    ),
    (
        "api_token",  # other vendors' self-identifying tokens
        (
            "shp",
            "_v1_",
            "dapi",
            "key-",
            "sq0",
            "atatt",
            "lin_api_",
            "hvs.",
            "dp.pt.",
            "glsa_",
            "xkeysib-",
            "ntn_",
        ),
        re.compile(
            r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"
            r"|\bdo[opr]_v1_[a-f0-9]{64}\b"
            r"|\bdapi[a-f0-9]{32}\b"
            r"|\bkey-[0-9a-f]{32}\b"
            r"|\bsq0(?:atp|csp)-[A-Za-z0-9_-]{22,}"
            r"|\bATATT3[A-Za-z0-9_=-]{50,}"
            r"|\blin_api_[A-Za-z0-9]{40}\b"
            r"|\bhvs\.[A-Za-z0-9_-]{24,}"
            r"|\bdp\.pt\.[A-Za-z0-9]{40,}"
            r"|\bglsa_[A-Za-z0-9_]{32,}"
            r"|\bxkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"
            r"|\bntn_[A-Za-z0-9]{40,}"
        ),
        placeholder("api_token"),
    ),
    (
        "api_key",
        ("sk-",),
        re.compile(rf"\bsk-{_B64URL}{{20,}}"),
        placeholder("api_key"),
    ),
    # Secrets named by their key: `DB_PASSWORD=...`, `"clientSecret": "..."`, `token: ...`.
    # The pattern finds any short key before `=` or `:`; _named_secret decides by its words.
    (
        "secret",
        ("pass", "pwd", "secret", "token", "key", "credential", "auth"),
        re.compile(
            r"(?<![A-Za-z0-9_.-])([A-Za-z0-9_.-]{1,64}[\"']?[ \t]*[:=][ \t]*[\"']?)"
            + _NOT_PLACEHOLDER
            + r"([^\s\"',;]+)"
        ),
        _named_secret,
    ),
    # A password in prose: "the wifi password is hunter2", "my password for gmail was: x".
    (
        "password",
        ("pass", "pwd"),
        re.compile(
            r"(\b(?:password|passwd|pwd|passphrase|passcode)s?"
            r"(?:[ \t]+(?:for|of|to|on|at)[ \t]+(?:the[ \t]+|my[ \t]+|our[ \t]+)?[\w.@-]+)?"
            r"[ \t]+(?:is|was|are|=)[ \t]*:?[ \t]*[\"'`]?)" + _NOT_PLACEHOLDER + r"([^\s\"'`]+)",
            re.IGNORECASE,
        ),
        _assignment(lambda prefix: "password"),
    ),
    # A token in prose: "the auth token is 9f8e7d6c5b4a"; only values that look generated.
    (
        "secret",
        ("token", "secret", "key"),
        re.compile(
            r"(\b(?:token|secret|api[ _-]?key|access[ _-]?key|key)[ \t]+(?:is|was|=)[ \t]*:?[ \t]*"
            r"[\"'`]?)"
            + _NOT_PLACEHOLDER
            + r"((?=[^\s\"'`]*\d)(?=[^\s\"'`]*[A-Za-z])[^\s\"'`]{8,})",
            re.IGNORECASE,
        ),
        _assignment(lambda prefix: "secret"),
    ),
    # Personal data last: numbers before phone (a card or an SSN is not a phone number).
    (
        "card_number",
        _digits_at_least(13),
        re.compile(r"(?<![\d.-])\d(?:[ -]?\d){12,18}(?![\d-]|\.\d)"),
        _card,
    ),
    (
        "ssn",
        _digits_at_least(9),
        re.compile(r"(?<![\d.-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-]|\.\d)"),
        placeholder("ssn"),
    ),
    (
        "email",
        ("@",),
        re.compile(
            r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b"
        ),
        placeholder("email"),
    ),
    (
        "phone",
        _digits_at_least(9),
        re.compile(
            r"(?<![\w+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{1,4}){1,5}"
            r"(?![\w]|[.-]\d)"
            r"|(?<![\w+.-])\+\d{9,15}\b"
        ),
        _phone,
    ),
]

KINDS: tuple[str, ...] = tuple(dict.fromkeys(rule[0] for rule in _RULES))

_PLACEHOLDER = re.compile(r"\[REDACTED:([a-z_]+)\]")


# -- when to try a rule -------------------------------------------------------------------------
# Most text holds no secret, yet the triggers above (lower-case substrings such as "ac" or
# "key") pass on ordinary prose. ``_WHEN[i]`` is rule i's test as one expression of the text
# ``t``, its lower-cased form ``lo`` and its ASCII digit count ``d``: the trigger, narrowed by
# literals the pattern cannot match without (case-sensitive where the pattern is). It passes
# whenever the trigger passes and the pattern could change the text, so the output is exactly
# the trigger-only loop's (tests/security/test_redact_differential.py compares the two on a
# generated battery); one call per rule, no loops, is what makes it cheap.

_NAMED_WORDS = re.compile("pass|pwd|secret|token|key|credential|auth")
_DISCORD_HINT = re.compile(r"\.[A-Za-z0-9_-]{6}\.")  # the bot token's middle part
_GITLAB_HINT = re.compile(r"gl(?:pat|dt|rt|ptt|ft|soat|cbt|imt|agent|oas|ffct)-")
_When: TypeAlias = "Callable[..., bool]"  # (t, lo) or, for the number rules, (t, lo, d)
_WHEN: tuple[_When, ...] = (
    lambda t, lo, d=0: "<private" in lo,
    lambda t, lo, d=0: "PRIVATE KEY" in t and "-----BEGIN" in t,
    lambda t, lo, d=0: "AGE-SECRET-KEY-1" in t,
    lambda t, lo, d=0: "://" in t and "@" in t,
    lambda t, lo, d=0: "/api/webhooks/" in t and "discord" in t,
    lambda t, lo, d=0: "xox" in t or "https://hooks.slack.com/services/" in t,
    lambda t, lo, d=0: "sig=" in t,
    lambda t, lo, d=0: "accountkey" in lo or "sharedaccess" in lo,
    lambda t, lo, d=0: "eyJ" in t,
    lambda t, lo, d=0: "basic" in lo,
    lambda t, lo, d=0: "bearer" in lo,
    lambda t, lo, d=0: "authorization" in lo,
    lambda t, lo, d=0: _AWS_HINT.search(t) is not None,
    lambda t, lo, d=0: "secret" in lo and "key" in lo,
    lambda t, lo, d=0: (
        ("ghp_" in t or "gho_" in t or "ghu_" in t or "ghs_" in t or "ghr_" in t)
        or "github_pat_" in t
    ),
    lambda t, lo, d=0: ("gl" in t and _GITLAB_HINT.search(t) is not None) or "GR1348941" in t,
    lambda t, lo, d=0: "_live_" in t or "_test_" in t or "whsec_" in t,
    lambda t, lo, d=0: "npm_" in t,
    lambda t, lo, d=0: "pypi-AgE" in t,
    lambda t, lo, d=0: "hf_" in t or "api_org_" in t,
    lambda t, lo, d=0: "SG." in t,
    lambda t, lo, d=0: "AC" in t or "SK" in t,
    lambda t, lo, d=0: ":AA" in t,
    lambda t, lo, d=0: "." in t and _DISCORD_HINT.search(t) is not None,
    lambda t, lo, d=0: "AIza" in t or "ya29." in t or "GOCSPX-" in t,
    lambda t, lo, d=0: (
        ("shp" in t or "_v1_" in t or "dapi" in t or "key-" in t or "sq0" in t or "ATATT3" in t)
        or ("lin_api_" in t or "hvs." in t or "dp.pt." in t or "glsa_" in t)
        or ("xkeysib-" in t or "ntn_" in t)
    ),
    lambda t, lo, d=0: "sk-" in t,
    lambda t, lo, d=0: ("=" in t or ":" in t) and _NAMED_WORDS.search(lo) is not None,
    lambda t, lo, d=0: "pass" in lo or "pwd" in lo,
    lambda t, lo, d=0: "token" in lo or "secret" in lo or "key" in lo,
    lambda t, lo, d=0: d >= 13,
    lambda t, lo, d=0: d >= 9 and "-" in t,
    lambda t, lo, d=0: "@" in t,
    lambda t, lo, d=0: d >= 9,
)
_PHONE = len(_RULES) - 1
_PHONE_PATTERN = _RULES[_PHONE][2]
_NUMBERS = next(i for i, rule in enumerate(_RULES) if rule[0] == "card_number")
assert len(_WHEN) == len(_RULES) and _RULES[_PHONE][0] == "phone"
_PLAN = tuple(zip(_WHEN, (rule[2] for rule in _RULES), (rule[3] for rule in _RULES), strict=True))
# The rules before the number rules never read the digit count, so it is counted only after
# them (and again after a change).
_LEXICAL, _NUMBER_RULES = _PLAN[:_NUMBERS], _PLAN[_NUMBERS:]


def _digit_count(text: str) -> int:
    """The ASCII digits in ``text``, as the number rules' triggers count them."""
    return sum(map(text.count, "0123456789"))


# -- the one test most text stops at --------------------------------------------------------
# ``_may_redact`` passes whenever any ``_WHEN`` test passes (each literal below is implied by
# one or more of them: "key" by "accountkey", "secret" and "key", "key-", "xkeysib-"; the "_"
# hint by every literal holding a "_"; "secret" by "AGE-SECRET-KEY-1"; "://" by the slack
# hook's URL), so when it fails no rule is tried and the text is returned as it is, as the
# rule loop would. A full
# scan of the text per literal was most of its cost, so literals sharing a character that
# ordinary prose seldom holds are tried only when that character is there (one ``memchr``):
# each guard is implied by the literals it guards, so the result is the same as testing the
# literals alone (tests/security/test_redact_differential.py compares it with that expression
# and checks the implication on the generated battery).
# One pass maps the UTF-8 bytes to classes: ASCII digits to "0", ASCII capitals to "A", every
# other byte to itself (none of them is "0" or "A"), so the digit count is one ``count`` and
# "two capitals in a row" (held by every upper-case literal but "eyJ", the AWS hint's too) one
# two-byte search, where a regex would test each character against a class.
_CLASSES = bytes(
    0x30 if 0x30 <= b <= 0x39 else 0x41 if 0x41 <= b <= 0x5A else b for b in range(256)
)


# Identifiers with "_" are common in notes: the literals holding one are looked for only around
# each "_" (after it, or behind it at the literal's last "_").
_UNDERSCORE_HINT = re.compile(
    r"_(?:live_|test_|v1_|(?<=gh[pousr]_)|(?<=github_pat_)|(?<=whsec_)|(?<=npm_)|(?<=hf_)"
    r"|(?<=api_org_)|(?<=lin_api_)|(?<=glsa_)|(?<=ntn_))"
)


def _may_redact(t: str, lo: str) -> bool:
    # The specification of the kernels' ``may_redact_many`` (the Rust one evaluates the same
    # literals in one pass: tests/security/test_redact_gate.py compares them); change both.
    # ASCII digits and capitals are the same bytes in UTF-8, and no other character holds them.
    classes = t.encode("utf-8", "surrogatepass").translate(_CLASSES)
    digits = classes.count(b"0")
    return (
        digits >= 9
        or ("_" in t and _UNDERSCORE_HINT.search(t) is not None)
        or "@" in t
        or "secret" in lo
        or "pass" in lo
        or "pwd" in lo
        or "basic" in lo
        or "bearer" in lo
        or "dapi" in t
        or "hvs." in t
        or "dp.pt." in t
        or ("k" in lo and ("key" in lo or "token" in lo))
        or ("sh" in lo and ("sharedaccess" in lo or "shp" in t))
        or ("z" in lo and "authorization" in lo)
        or ("<" in lo and "<private" in lo)
        or ("x" in t and "xox" in t)
        or ("J" in t and "eyJ" in t)
        or ("=" in t and ("sig=" in t or "auth" in lo or "credential" in lo))
        or (":" in t and ("://" in t or ":AA" in t or "auth" in lo or "credential" in lo))
        or ("/" in t and "/api/webhooks/" in t)
        or (
            "-" in t
            and (
                "sk-" in t
                or "GOCSPX-" in t
                or "pypi-AgE" in t
                or ("gl" in t and _GITLAB_HINT.search(t) is not None)
            )
        )
        or (digits > 0 and ("sq0" in t or "ya29." in t or "ATATT3" in t or "GR1348941" in t))
        or (
            b"AA" in classes
            and (
                "AC" in t
                or "SK" in t
                or "SG." in t
                or "AIza" in t
                or "PRIVATE KEY" in t
                or _AWS_HINT.search(t) is not None
            )
        )
        or ("." in t and _DISCORD_HINT.search(t) is not None)
    )


def redact(text: str, *, personal: bool = True) -> str:
    """Return ``text`` with every secret and personal datum replaced by a placeholder.

    ``personal=False`` skips the phone-number rule only (identifiers such as
    ``transcript:<session>:12:3`` look like digit groups, never like secrets)."""
    low = text.lower()
    if not _may_redact(text, low):
        return text
    return _apply_rules(text, low, personal)


def redact_many(
    texts: list[str], gate: Callable[[list[str]], list[bool]] | None = None
) -> list[str]:
    """:func:`redact` of each text (``personal=True``). ``gate`` is a kernel's
    ``may_redact_many`` (the Rust one tests a text in one pass, where the Python expression
    scans it once per literal); without one, the Python gate."""
    if gate is None:
        return [redact(text) for text in texts]
    return [
        _apply_rules(text, text.lower(), True) if may else text
        for text, may in zip(texts, gate(texts), strict=True)
    ]


def _apply_rules(text: str, low: str, personal: bool) -> str:
    """The rules, on a text the gate passed (``low`` is its lower-cased form)."""
    for when, pattern, replacement in _LEXICAL:
        if when(text, low):
            new = pattern.sub(replacement, text)
            if new is not text and new != text:
                text, low = new, new.lower()
    digits = _digit_count(text)
    for when, pattern, replacement in _NUMBER_RULES:
        if (personal or pattern is not _PHONE_PATTERN) and when(text, low, digits):
            new = pattern.sub(replacement, text)
            if new is not text and new != text:
                text, low, digits = new, new.lower(), _digit_count(new)
    return text


@functools.lru_cache(maxsize=2048)
def _secret_kinds(value: str) -> tuple[str, ...]:
    out = redact(value, personal=False)
    if out == value:
        return ()
    before = set(_PLACEHOLDER.findall(value))
    return tuple(sorted(set(_PLACEHOLDER.findall(out)) - before) or ["secret"])


def secret_kinds(value: str) -> list[str]:
    """The kinds :func:`redact` would replace in an identifier (empty: nothing to hide).
    Cached: identifiers (tags above all) repeat across a batch."""
    return list(_secret_kinds(value))
