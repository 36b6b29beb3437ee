"""A battery of realistic fake secrets, generated (never pasted): each has the shape of the
real thing (prefix, alphabet, length, check digit) and a random body, so no real key is ever
in this repository and every run tries new values.

:func:`battery` returns ``(name, text, secret, kind)``: ``text`` is the secret in a realistic
setting (a header, a .env line, JSON, prose), ``secret`` the part that must never reach disk,
``kind`` the placeholder label expected.
"""

from __future__ import annotations

import base64
import random
import string
from typing import NamedTuple

ALNUM = string.ascii_letters + string.digits
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
HEX = "0123456789abcdef"
UPPER_NUM = string.ascii_uppercase + string.digits


class Secret(NamedTuple):
    name: str
    text: str
    secret: str
    kind: str


def _s(rng: random.Random, alphabet: str, n: int) -> str:
    # At least one digit and one letter, so the value looks like a key and not a word.
    while True:
        value = "".join(rng.choice(alphabet) for _ in range(n))
        mixed = any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        if n < 8 or mixed or not any(c.isdigit() for c in alphabet):
            return value


def _luhn_complete(rng: random.Random, prefix: str, length: int) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    for check in string.digits:
        digits = body + check
        total = 0
        for i, ch in enumerate(reversed(digits)):
            n = int(ch)
            if i % 2:
                n = n * 2 - 9 if n > 4 else n * 2
            total += n
        if total % 10 == 0:
            return digits
    raise AssertionError("unreachable")


def _pem(rng: random.Random, label: str) -> str:
    lines = [_s(rng, B64, 64) for _ in range(12)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def battery(seed: int = 19) -> list[Secret]:
    rng = random.Random(seed)
    out: list[Secret] = []

    def add(name: str, text: str, secret: str, kind: str) -> None:
        assert secret in text
        out.append(Secret(name, text, secret, kind))

    aws_id = "AKIA" + _s(rng, UPPER_NUM, 16)
    aws_secret = _s(rng, B64, 40)
    add("aws access key id", f"export AWS_ACCESS_KEY_ID={aws_id}", aws_id, "aws_access_key")
    add(
        "aws secret in ini",
        f"[default]\naws_secret_access_key = {aws_secret}",
        aws_secret,
        "aws_secret_key",
    )
    s2 = _s(rng, B64, 40)
    add(
        "aws secret in json",
        f'{{"AccessKeyId": "ASIA{_s(rng, UPPER_NUM, 16)}", "SecretAccessKey": "{s2}"}}',
        s2,
        "aws_secret_key",
    )
    gh = "ghp_" + _s(rng, ALNUM, 36)
    add("github pat", f"git clone https://{gh}@github.com/acme/app", gh, "github_token")
    gh2 = "gho_" + _s(rng, ALNUM, 36)
    add("github oauth", f"token {gh2} expires", gh2, "github_token")
    fine = "github_pat_" + _s(rng, ALNUM + "_", 82)
    add("github fine-grained", f"use {fine} for the CI", fine, "github_token")
    gl = "glpat-" + _s(rng, B64URL, 20)
    add("gitlab pat", f"GitLab token: {gl} (read_api)", gl, "gitlab_token")
    gl2 = "gldt-" + _s(rng, B64URL, 20)
    add("gitlab deploy token", f"deploy with {gl2}", gl2, "gitlab_token")
    for prefix in ("sk_live_", "rk_live_", "sk_test_"):
        key = prefix + _s(rng, ALNUM, 24)
        add(f"stripe {prefix}", f"stripe.api_key = '{key}'", key, "stripe_key")
    wh = "whsec_" + _s(rng, ALNUM, 32)
    add("stripe webhook secret", f"endpoint signing: {wh}", wh, "stripe_key")
    acct = _s(rng, B64, 86) + "=="
    add(
        "azure storage connection string",
        "DefaultEndpointsProtocol=https;AccountName=acmeprod;"
        f"AccountKey={acct};EndpointSuffix=core.windows.net",
        acct,
        "azure_key",
    )
    sbk = _s(rng, B64, 43) + "="
    add(
        "azure service bus",
        "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
        f"SharedAccessKey={sbk}",
        sbk,
        "azure_key",
    )
    sig = _s(rng, ALNUM, 40) + "%3D"
    add(
        "azure sas url",
        "https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r"
        f"&se=2026-01-01T00:00:00Z&sig={sig}",
        sig,
        "azure_sas",
    )
    for scheme in ("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp"):
        pw = _s(rng, ALNUM, 14) + "!x"
        add(
            f"{scheme} url",
            f"DATABASE_URL={scheme}://app_user:{pw}@db.internal.example.com:5432/prod",
            pw,
            "url_credentials",
        )
    pw = _s(rng, ALNUM, 12)
    add("dotenv DB_PASSWORD", f"DB_HOST=localhost\nDB_PASSWORD={pw}\nDB_PORT=5432", pw, "password")
    sk = _s(rng, ALNUM + "!@#%^&*", 50)
    add("django SECRET_KEY", f"SECRET_KEY={sk}", sk, "secret")
    cs = _s(rng, B64URL, 32)
    add("json client_secret", f'{{"client_id": "abc", "client_secret": "{cs}"}}', cs, "secret")
    yml = _s(rng, ALNUM, 20)
    add("yaml password", f"database:\n  user: app\n  password: {yml}\n", yml, "password")
    prose = _s(rng, string.ascii_lowercase, 6) + str(rng.randint(10, 99))
    add("password in prose", f"btw the wifi password is {prose} if you need it", prose, "password")
    prose2 = _s(rng, ALNUM, 10)
    add("passphrase in prose", f"My passphrase was {prose2}, do not share", prose2, "password")
    cred = base64.b64encode(f"admin:{_s(rng, ALNUM, 12)}".encode()).decode()
    header = f"curl -H 'Authorization: Basic {cred}' https://api"
    add("basic auth header", header, cred, "basic_auth")
    tok = _s(rng, ALNUM, 40)
    add("bearer header", f"Authorization: Bearer {tok}", tok, "bearer_token")
    tok2 = _s(rng, HEX, 40)
    add("token header", f"Authorization: token {tok2}", tok2, "authorization")
    for name, prefix, length in (
        ("visa", "4", 16),
        ("mastercard", "51", 16),
        ("mastercard 2-series", "2221", 16),
        ("discover", "6011", 16),
    ):
        card = _luhn_complete(rng, prefix, length)
        spaced = " ".join(card[i : i + 4] for i in range(0, 16, 4))
        add(f"{name} card", f"charge card {card} exp 12/29", card, "card_number")
        add(f"{name} card spaced", f"card: {spaced}, cvv later", spaced, "card_number")
    amex = _luhn_complete(rng, "37", 15)
    amex_spaced = f"{amex[:4]} {amex[4:10]} {amex[10:]}"
    add("amex spaced", f"Amex {amex_spaced} on file", amex_spaced, "card_number")
    dashed = _luhn_complete(rng, "4", 16)
    dashed = "-".join(dashed[i : i + 4] for i in range(0, 16, 4))
    add("visa dashed", f"the card {dashed}", dashed, "card_number")
    ssn = f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}"
    add("ssn", f"SSN {ssn} on the form", ssn, "ssn")
    npm = "npm_" + _s(rng, ALNUM, 36)
    add("npm token", f"//registry.npmjs.org/:_authToken={npm}", npm, "npm_token")
    pypi = "pypi-AgEIcHlwaS5vcmc" + _s(rng, B64URL, 120)
    add("pypi token", f"TWINE_PASSWORD={pypi}", pypi, "pypi_token")
    add("pypi token prose", f"upload with {pypi}", pypi, "pypi_token")
    sid = "AC" + _s(rng, HEX, 32)
    add("twilio account sid", f"twilio sid {sid}", sid, "twilio_key")
    tsk = "SK" + _s(rng, HEX, 32)
    add("twilio api key", f"api key {tsk}", tsk, "twilio_key")
    ttok = _s(rng, HEX, 32)
    add("twilio auth token", f"TWILIO_AUTH_TOKEN={ttok}", ttok, "secret")
    sg = f"SG.{_s(rng, B64URL, 22)}.{_s(rng, B64URL, 43)}"
    add("sendgrid", f"SENDGRID key {sg}", sg, "sendgrid_key")
    dwh = f"https://discord.com/api/webhooks/{rng.randint(10**17, 10**18)}/{_s(rng, B64URL, 68)}"
    add("discord webhook", f"post to {dwh}", dwh, "discord_webhook")
    dbot = f"M{_s(rng, B64URL, 23)}.{_s(rng, B64URL, 6)}.{_s(rng, B64URL, 38)}"
    add("discord bot token", f"bot.run('{dbot}')", dbot, "discord_bot_token")
    hf = "hf_" + _s(rng, ALNUM, 34)
    add("hugging face", f"huggingface-cli login --token {hf}", hf, "huggingface_token")
    tg = f"{rng.randint(10**8, 10**9)}:AA{_s(rng, B64URL, 33)}"
    add("telegram bot", f"telegram bot {tg} for alerts", tg, "telegram_bot_token")
    slack = "xoxb-" + "-".join(str(rng.randint(10**10, 10**11)) for _ in range(2)) + "-"
    slack += _s(rng, ALNUM, 24)
    add("slack bot", f"SLACK {slack}", slack, "slack_token")
    goog = "AIza" + _s(rng, B64URL, 35)
    add("google api key", f"maps key {goog}", goog, "google_api_key")
    oai = "sk-proj-" + _s(rng, B64URL, 48)
    add("openai", f"OPENAI key {oai}", oai, "api_key")
    ant = "sk-ant-api03-" + _s(rng, B64URL, 93)
    add("anthropic", f"claude {ant}", ant, "api_key")
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
    jwt = f"{header}.{_s(rng, B64URL, 40)}.{_s(rng, B64URL, 43)}"
    add("jwt", f"cookie session={jwt}", jwt, "jwt")
    pem = _pem(rng, "RSA PRIVATE KEY")
    body = pem.splitlines()[5]
    add("pem key", f"key:\n{pem}\nend", body, "private_key")
    ossh = _pem(rng, "OPENSSH PRIVATE KEY")
    add("openssh key", ossh, ossh.splitlines()[3], "private_key")
    shp = "shpat_" + _s(rng, HEX, 32)
    add("shopify", f"shop token {shp}", shp, "api_token")
    do = "dop_v1_" + _s(rng, HEX, 64)
    add("digitalocean", f"doctl auth {do}", do, "api_token")
    email = f"{_s(rng, string.ascii_lowercase, 7)}.{_s(rng, string.ascii_lowercase, 5)}@example.org"
    add("email", f"write to {email} today", email, "email")
    phone = f"+1 ({rng.randint(200, 999)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}"
    add("phone", f"call {phone}", phone, "phone")
    priv = _s(rng, string.ascii_lowercase, 12)
    add("private block", f"note <private>{priv} diary</private> ok", priv, "private")
    return out
