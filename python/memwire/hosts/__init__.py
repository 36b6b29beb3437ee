"""The agent hosts memwire knows, one file each; ``memwire.connect`` and ``memwire.hooks`` read
every host fact from here.

:data:`HOSTS` is the registry (in the order ``memwire connect`` lists them). The functions below
merge what all hosts declare, for the code that must understand any host before it knows which
one is talking (payload fields, event names, transcripts). Adding a host: write
``memwire/hosts/<name>.py`` defining ``HOST`` (a :class:`~memwire.hosts.base.Host`), add it to
:data:`HOSTS`, and describe it in docs/hosts.md; ``tests/connect/test_hosts.py`` checks the
declaration.

Importing this package is cheap: data and the standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields

from memwire.hosts import claude, codex, cursor, gemini
from memwire.hosts.base import (
    EVENTS,
    GENERIC_PAYLOAD,
    GENERIC_TRANSCRIPT,
    HOOK_STYLES,
    MCP_STYLES,
    OUTPUT_STYLES,
    PART_KIND_KEY,
    PART_TEXT_KEY,
    PLAIN_OUTPUT,
    TIMEOUT_UNITS,
    TIMESTAMP_KEY,
    Envelope,
    Host,
    OutputFormat,
)

__all__ = [
    "EVENTS",
    "HOSTS",
    "PLAIN",
    "Host",
    "PayloadKeys",
    "TranscriptRules",
    "detect",
    "event_key",
    "event_names",
    "host_names",
    "output_format",
    "payload_keys",
    "problems",
    "transcript_rules",
]

HOSTS: dict[str, Host] = {h.name: h for h in (claude.HOST, codex.HOST, cursor.HOST, gemini.HOST)}
# What ``--host`` takes for no host at all: the bare block on stdout (scripts, unknown hosts).
PLAIN = "plain"


def host_names() -> list[str]:
    return list(HOSTS)


def _merged(columns: Iterable[tuple[str, ...]]) -> tuple[str, ...]:
    """Keys from several hosts in one preference order: every host's first choice, then every
    host's second, and so on (registry order within a rank), without repeats."""
    lists = list(columns)
    out: list[str] = []
    for rank in range(max((len(c) for c in lists), default=0)):
        for column in lists:
            if rank < len(column) and column[rank] not in out:
                out.append(column[rank])
    return tuple(out)


def _then(first: tuple[str, ...], fallback: tuple[str, ...]) -> tuple[str, ...]:
    return first + tuple(k for k in fallback if k not in first)


def event_key(name: str) -> str:
    """The form event names are compared in: ``UserPromptSubmit``, ``user_prompt_submit`` and
    ``user-prompt-submit`` are one name."""
    return name.strip().lower().replace("_", "").replace("-", "")


def event_names() -> dict[str, str]:
    """Every host's names for memwire's events: host name -> memwire event."""
    out: dict[str, str] = {}
    for host in HOSTS.values():
        for name, event in host.events.items():
            out.setdefault(name, event)
    return out


@dataclass(frozen=True)
class PayloadKeys:
    """Where a payload's fields may be, over all hosts, in preference order."""

    session: tuple[str, ...]
    cwd: tuple[str, ...]
    prompt: tuple[str, ...]
    transcript: tuple[str, ...]
    event: tuple[str, ...]


def payload_keys() -> PayloadKeys:
    formats = [h.payload for h in HOSTS.values()]

    def column(name: str) -> tuple[str, ...]:
        return _then(_merged(getattr(f, name) for f in formats), getattr(GENERIC_PAYLOAD, name))

    return PayloadKeys(
        session=column("session"),
        cwd=column("cwd"),
        prompt=column("prompt"),
        transcript=column("transcript"),
        event=column("event"),
    )


def detect(raw: Mapping[str, object], event_name: str) -> str:
    """The host that sent ``raw`` (its event name ``event_name``), else :data:`PLAIN`."""
    for host in sorted(HOSTS.values(), key=lambda h: h.payload.detect_order):
        signs = host.payload
        if (
            any(key in raw for key in signs.detect_keys)
            or event_name in signs.detect_events
            or (signs.detect_any_event and bool(event_name))
        ):
            return host.name
    return PLAIN


def output_format(name: str) -> OutputFormat:
    """What host ``name`` expects on stdout (the bare block for :data:`PLAIN`)."""
    host = HOSTS.get(name)
    return host.output if host is not None else PLAIN_OUTPUT


@dataclass(frozen=True)
class TranscriptRules:
    """Every host's transcript format merged: what a transcript reader applies to each entry."""

    envelopes: tuple[Envelope, ...]
    skip_flags: tuple[str, ...]
    role_keys: tuple[str, ...]
    user_roles: frozenset[str]
    assistant_roles: frozenset[str]
    content_keys: tuple[str, ...]
    string_keys: tuple[str, ...]
    text_types: frozenset[str]
    document_keys: tuple[str, ...]
    wrappers: tuple[str, ...]  # longest first, so no tag is matched as a prefix of another
    skip_prefixes: tuple[str, ...]
    part_kind_key: str = PART_KIND_KEY
    part_text_key: str = PART_TEXT_KEY
    timestamp_key: str = TIMESTAMP_KEY


def transcript_rules() -> TranscriptRules:
    formats = [h.transcript for h in HOSTS.values()]
    every = [*formats, GENERIC_TRANSCRIPT]

    def keys(name: str) -> tuple[str, ...]:
        return _then(_merged(getattr(f, name) for f in formats), getattr(GENERIC_TRANSCRIPT, name))

    def union(name: str) -> frozenset[str]:
        return frozenset(v for f in every for v in getattr(f, name))

    envelopes: list[Envelope] = []
    for f in formats:
        envelopes.extend(e for e in f.envelopes if e not in envelopes)
    wrappers = sorted(union("wrappers"), key=lambda t: (-len(t), t))
    return TranscriptRules(
        envelopes=tuple(envelopes),
        skip_flags=keys("skip_flags"),
        role_keys=keys("role_keys"),
        user_roles=union("user_roles"),
        assistant_roles=union("assistant_roles"),
        content_keys=keys("content_keys"),
        string_keys=keys("string_keys"),
        text_types=union("text_types"),
        document_keys=keys("document_keys"),
        wrappers=tuple(wrappers),
        skip_prefixes=keys("skip_prefixes"),
    )


# -- checking a declaration --------------------------------------------------------------------

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_TAG = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]*$")


def _host_problems(host: Host) -> list[str]:
    bad: list[str] = []
    if not _NAME.match(host.name) or host.name == PLAIN:
        bad.append(f"name {host.name!r} is not a lower-case identifier (or is {PLAIN!r})")
    if not host.label.strip():
        bad.append("label is empty")
    if not host.docs or not all(d.startswith("https://") for d in host.docs):
        bad.append("docs must list the https pages the formats were checked against")
    paths = host.paths
    for field in fields(paths):
        value = getattr(paths, field.name)
        if field.name == "env_dir":
            if value is not None and not re.match(r"^[A-Z][A-Z0-9_]*$", value):
                bad.append(f"paths.env_dir {value!r} is not an environment variable name")
        elif not value or value.startswith("/") or ".." in value.split("/"):
            bad.append(f"paths.{field.name} {value!r} must be a relative path")
    hooks = host.hooks
    if hooks.style not in HOOK_STYLES:
        bad.append(f"hooks.style {hooks.style!r} is not one of {HOOK_STYLES}")
    if hooks.timeout_unit not in TIMEOUT_UNITS:
        bad.append(f"hooks.timeout_unit {hooks.timeout_unit!r} is not one of {TIMEOUT_UNITS}")
    if hooks.style == "flat" and (hooks.timeout_unit or hooks.named):
        bad.append("flat hook entries carry a command only (no timeout, no name)")
    if not hooks.table:
        bad.append("hooks.table is empty")
    if not hooks.specs:
        bad.append("hooks.specs is empty: a host wires at least one event")
    seen: set[str] = set()
    for spec in hooks.specs:
        if spec.event not in EVENTS:
            bad.append(f"hook {spec.host_event}: {spec.event!r} is not a memwire event")
        if spec.host_event in seen:
            bad.append(f"hook {spec.host_event} is wired twice")
        seen.add(spec.host_event)
        if host.events.get(spec.host_event) != spec.event:
            bad.append(f"hook {spec.host_event} is missing from events (or names another event)")
        if spec.timeout <= 0:
            bad.append(f"hook {spec.host_event}: the timeout must be positive")
    if host.mcp.style not in MCP_STYLES:
        bad.append(f"mcp.style {host.mcp.style!r} is not one of {MCP_STYLES}")
    if not host.mcp.table:
        bad.append("mcp.table is empty")
    for name, event in host.events.items():
        if not name.strip() or event not in EVENTS:
            bad.append(f"events: {name!r} -> {event!r} is not a memwire event")
    payload = host.payload
    for name in ("session", "cwd", "prompt", "transcript", "event"):
        if not getattr(payload, name):
            bad.append(f"payload.{name} names no key")
    if not (payload.detect_keys or payload.detect_events or payload.detect_any_event):
        bad.append("payload: nothing recognises this host (detect_keys / detect_events)")
    output = host.output
    if output.style not in OUTPUT_STYLES:
        bad.append(f"output.style {output.style!r} is not one of {OUTPUT_STYLES}")
    for event, name in output.context_events.items():
        if event not in EVENTS or host.events.get(name) != event:
            bad.append(f"output.context_events: {event!r} -> {name!r} is not one of its events")
    for event in output.fixed:
        if event not in EVENTS:
            bad.append(f"output.fixed: {event!r} is not a memwire event")
    transcript = host.transcript
    for name in ("user_roles", "assistant_roles"):
        if any(r != r.lower() for r in getattr(transcript, name)):
            bad.append(f"transcript.{name} must be lower-case")
    if any(not _TAG.match(t) for t in transcript.wrappers):
        bad.append("transcript.wrappers must be bare tag names")
    return bad


def problems(hosts: Mapping[str, Host] | None = None) -> list[str]:
    """What is wrong with the registry (``hosts``, default :data:`HOSTS`); empty when fine."""
    table = HOSTS if hosts is None else hosts
    bad: list[str] = []
    # event key -> (who, event); role -> (who, side): memwire's own and the generic ones first
    names = {event_key(e): ("memwire", e) for e in EVENTS}
    roles = {r: ("the generic shape", "user_roles") for r in GENERIC_TRANSCRIPT.user_roles}
    roles.update(
        (r, ("the generic shape", "assistant_roles")) for r in GENERIC_TRANSCRIPT.assistant_roles
    )
    for key, host in table.items():
        bad.extend(f"{key}: {p}" for p in _host_problems(host))
        if key != host.name:
            bad.append(f"{key}: registered under another name than its own ({host.name!r})")
        for name, event in host.events.items():
            seen = names.setdefault(event_key(name), (key, event))
            if seen[1] != event:
                bad.append(f"{key}: event {name!r} means {seen[1]!r} for {seen[0]}")
        for side in ("user_roles", "assistant_roles"):
            for role in getattr(host.transcript, side):
                other = roles.setdefault(role, (key, side))
                if other[1] != side:
                    bad.append(f"{key}: role {role!r} is on the other side for {other[0]}")
    orders = [h.payload.detect_order for h in table.values()]
    if len(set(orders)) != len(orders):
        bad.append("two hosts share a detect_order: which is tried first would be arbitrary")
    return bad
