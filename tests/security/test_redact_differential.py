"""Redaction's fast gates change nothing: :func:`memwire.redact.redact` gives exactly the output of
the plain loop over the rules (each rule tried whenever its trigger passes), on a large generated
battery of secrets, near misses and ordinary text, spliced and mutated."""

from __future__ import annotations

import random
import re
import string

import pytest
from memwire import redact as redact_module
from memwire.redact import redact
from secret_battery import battery

pytestmark = pytest.mark.backend_independent


def reference(text: str, *, personal: bool = True) -> str:
    """The rule loop as it was before the gates: every rule whose trigger passes is tried."""
    low = text.lower()
    for kind, trigger, pattern, replacement in redact_module._RULES:
        if not personal and kind == "phone":
            continue
        if trigger is None:
            applies = True
        elif isinstance(trigger, tuple):
            applies = any(part in low for part in trigger)
        else:
            applies = bool(trigger(text, low))
        if applies:
            new = pattern.sub(replacement, text)
            if new != text:
                text, low = new, new.lower()
    return text


def _gate_literals() -> list[str]:
    """Every literal the rules' tests and triggers look for, so near misses hit each of them."""
    out: set[str] = set()
    for when in redact_module._WHEN:
        out.update(c for c in when.__code__.co_consts if isinstance(c, str))
    out.update(("glpat-", "glsoat-", "glffct-"))  # the gitlab hint's prefixes
    for _kind, trigger, _pattern, _replacement in redact_module._RULES:
        if isinstance(trigger, tuple):
            out.update(trigger)
    return sorted(out)


_PROSE_TEXT = (
    "the deploy ran at 09:30 on 2024-05-01 and took 12.5 s; ask a bearer of news about "
    "the basic plan, my password is hunter2, token: abc, key = value, secret sauce, "
    "Authorization header, see https://example.com/a?b=c&sig=x, call me at +1 555 123 4567 "
    "or mail a.b@example.org; order 4111 1111 1111 1111 shipped, ssn 123-45-6789"
)
PROSE = _PROSE_TEXT.split(" ")
ODD = ["\u212a", "\u017f", "\uff21", "\u0661\u0662\u0663", "\u00e9", "\n", "\t", '"', "'", "`"]


def _mutate(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 3)):
        if not chars:
            break
        i = rng.randrange(len(chars))
        op = rng.random()
        if op < 0.3:
            chars[i] = chars[i].swapcase()
        elif op < 0.5:
            del chars[i]
        elif op < 0.7:
            chars.insert(i, rng.choice(string.printable[:94]))
        elif op < 0.85:
            chars.insert(i, rng.choice(ODD))
        else:
            chars[i : i + 1] = list(rng.choice([":", "=", "-", ".", "@", "_", " "]))
    return "".join(chars)


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    secrets = [s.text for s in battery(seed)] + [s.secret for s in battery(seed + 1)]
    literals = _gate_literals()
    alnum = string.ascii_letters + string.digits
    pieces: list[str] = []
    out: list[str] = []
    for _ in range(count):
        pieces.clear()
        for _ in range(rng.randint(1, 8)):
            pick = rng.random()
            if pick < 0.25:
                pieces.append(rng.choice(secrets))
            elif pick < 0.5:  # a gate literal followed by a plausible body
                body = "".join(rng.choice(alnum + "_-./+=") for _ in range(rng.randint(0, 60)))
                pieces.append(rng.choice(literals) + body)
            elif pick < 0.65:
                pieces.append("".join(rng.choice(string.digits + " -.()+") for _ in range(20)))
            else:
                pieces.append(" ".join(rng.choice(PROSE) for _ in range(rng.randint(1, 12))))
        joined = rng.choice(["", " ", "\n", ": ", "=", "\t"]).join(pieces)
        out.append(_mutate(rng, joined) if rng.random() < 0.6 else joined)
    return out


@pytest.mark.parametrize("seed", [18, 19, 20])
def test_gated_redaction_equals_the_plain_rule_loop(seed: int) -> None:
    battery_texts = texts(4000, seed)
    changed = 0
    for text in battery_texts:
        expected = reference(text)
        assert redact(text) == expected, text
        assert redact(text, personal=False) == reference(text, personal=False), text
        changed += expected != text
    # The battery exercises both sides: many texts are redacted, many are left alone.
    assert 0.2 * len(battery_texts) < changed < 0.98 * len(battery_texts)


def test_every_rule_fires_in_the_battery() -> None:
    """Each kind's placeholder appears somewhere, so no rule's gate is untested."""
    seen: set[str] = set()
    for text in texts(6000, 7):
        seen.update(re.findall(r"\[REDACTED:([a-z_]+)\]", redact(text)))
    assert seen == set(redact_module.KINDS)


def test_secret_kinds_cache_returns_a_fresh_list() -> None:
    kinds = redact_module.secret_kinds("token=abcdef123456")
    assert kinds == ["secret"]
    kinds.append("mutated")
    assert redact_module.secret_kinds("token=abcdef123456") == ["secret"]


@pytest.mark.parametrize("seed", [21, 22])
def test_the_prefilter_passes_whenever_a_gate_does(seed: int) -> None:
    """``_may_redact`` is implied by every rule's gate, so the texts it stops are exactly texts
    no rule would be tried on; and it does stop ordinary prose."""
    rng = random.Random(seed)
    battery_texts = texts(3000, seed)
    # Short pieces too: a lone literal or a single odd character next to it.
    battery_texts += [_mutate(rng, rng.choice(_gate_literals())) for _ in range(3000)]
    passed = 0
    for text in battery_texts:
        low = text.lower()
        digits = redact_module._digit_count(text)
        gated = any(when(text, low, digits) for when, _, _ in redact_module._PLAN)
        may = redact_module._may_redact(text, low)
        assert may or not gated, text
        passed += may
    assert passed < len(battery_texts)
    prose = "The user asked about the weather in Paris, then booked a table for two."
    assert not redact_module._may_redact(prose, prose.lower())


# The case-sensitive literals of the rules' gates, each tested on its own.
_CASED_LITERALS = (
    *"""AC SK SG. eyJ xox sk- shp dapi sq0 sig= :AA hvs. AIza ya29. dp.pt. ATATT3 GOCSPX- pypi-AgE
    GR1348941 /api/webhooks/ ghp_ gho_ ghu_ ghs_ ghr_ github_pat_ _live_ _test_ whsec_ npm_ hf_
    api_org_ _v1_ lin_api_ glsa_ ntn_""".split(),  # noqa: SIM905
    "PRIVATE KEY",
)


def reference_prefilter(t: str, lo: str) -> bool:
    """The prefilter as one test per literal (each implied by a rule's gate), before its literals
    were guarded by characters they hold: the guarded ``_may_redact`` must give exactly this."""
    return (
        "@" in t
        or "://" in t
        or "key" in lo
        or "secret" in lo
        or "token" in lo
        or "pass" in lo
        or "pwd" in lo
        or "basic" in lo
        or "bearer" in lo
        or "authorization" in lo
        or "<private" in lo
        or "sharedaccess" in lo
        or (("=" in t or ":" in t) and ("auth" in lo or "credential" in lo))
        or any(literal in t for literal in _CASED_LITERALS)
        or ("gl" in t and redact_module._GITLAB_HINT.search(t) is not None)
        or redact_module._AWS_HINT.search(t) is not None
        or redact_module._DISCORD_HINT.search(t) is not None
        or redact_module._digit_count(t) >= 9
    )


@pytest.mark.parametrize("seed", [23, 24])
def test_the_guarded_prefilter_equals_one_test_per_literal(seed: int) -> None:
    """The character guards in ``_may_redact`` (a literal is looked for only when a character
    it holds is in the text) change no answer: on the battery, on each gate literal alone and
    mutated, and on prose, it passes exactly when the unguarded expression does."""
    rng = random.Random(seed)
    cases = texts(3000, seed)
    for literal in _gate_literals():
        cases += [literal, f"x {literal} y", literal.upper(), literal.lower()]
        cases += [_mutate(rng, literal) for _ in range(20)]
    cases += [" ".join(rng.choice(PROSE) for _ in range(rng.randint(1, 30))) for _ in range(2000)]
    cases += ["The user asked about the weather in Paris, then booked a table for two."]
    outcomes = set()
    for text in cases:
        low = text.lower()
        expected = reference_prefilter(text, low)
        assert redact_module._may_redact(text, low) == expected, text
        outcomes.add(expected)
    assert outcomes == {True, False}
