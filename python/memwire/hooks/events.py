"""``memwire hook <event>``: what each host lifecycle event does.

=================  ==============================================================
event              what memwire does
=================  ==============================================================
``session-start``  inject the project's recent memories; drain the spool
``prompt``         inject the memories relevant to the prompt (bounded in time)
``stop``           retain the new exchanges of the transcript; drain the spool
``pre-compact``    same as stop
``session-end``    same as stop
=================  ==============================================================

Each host's names for these events, the fields of its payload, how it is recognised and what
it expects on stdout are :mod:`memwire.hosts`; nothing here names a host.

Rules every event follows: the host's JSON arrives on stdin; the only thing printed on stdout
is what the host should inject (in the host's format), or nothing; errors go to the hooks log
(:mod:`memwire.hooks._log`) and the exit code is always 0; a write that cannot be delivered is
spooled (:mod:`memwire.hooks.spool`) and delivered by a later run.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from memwire import hosts
from memwire.hooks import _log, _paths
from memwire.hooks.block import MAX_BLOCK_BYTES, MAX_ENTRIES, Entry, build_block
from memwire.hooks.client import Client, Rejected, Unavailable, open_client
from memwire.hosts import EVENTS
from memwire.project import resolve_bank

__all__ = [
    "EVENTS",
    "HookInput",
    "HookResult",
    "canonical_event",
    "detect_host",
    "host_choices",
    "parse_input",
    "run_hook",
]
# What is never injected: markers always; transcripts only at session start (the most recent
# memories should be what was decided, not the last chat) and, at a prompt, the current
# session's own exchanges (already in the model's context).
EXCLUDED_TAGS = ("transcript", "marker")
PROMPT_EXCLUDED_TAGS = ("marker",)
TRANSCRIPT_TAG = "transcript"
MAX_TRANSCRIPT_ENTRIES = 2  # of a prompt's block: what was stored on purpose keeps the rest
MAX_STDIN = 8 * 1024 * 1024
PROMPT_BUDGET_S = 1.2  # for the work after start-up; start-up itself is ~0.1-0.2 s
WRITE_BUDGET_S = 10.0
DRAIN_BUDGET_S = 3.0
RECALL_TOKENS = 1500
_CONTINUATIONS = {
    "continue",
    "go on",
    "go ahead",
    "keep going",
    "proceed",
    "yes",
    "y",
    "ok",
    "okay",
    "sure",
    "do it",
    "next",
    "again",
    "retry",
    "try again",
    "and",
    "more",
    "please continue",
    "go",
    "carry on",
    "resume",
    "same",
    "yes please",
    "sounds good",
    "lgtm",
    "ship it",
    "k",
}
_WORD = re.compile(r"\w+")


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def _env_int(name: str, default: int) -> int:
    try:
        value = int(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def host_choices() -> tuple[str, ...]:
    """What ``--host`` takes: every registered host, and ``plain`` for none."""
    return (*hosts.host_names(), hosts.PLAIN)


def canonical_event(name: str) -> str | None:
    """memwire's event for a host's event name (any host's, in any case, ``_`` or ``-``
    separated); None for an unknown event."""
    aliases = {hosts.event_key(e): e for e in EVENTS}
    for host_name, event in hosts.event_names().items():
        aliases.setdefault(hosts.event_key(host_name), event)
    return aliases.get(hosts.event_key(name))


@dataclass
class HookInput:
    """What memwire needs from a host's event payload."""

    session_id: str
    cwd: str
    prompt: str
    transcript_path: str
    host_event: str
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass
class HookResult:
    """What a hook run produced: the text for stdout and what happened."""

    output: str = ""
    event: str = ""
    host: str = ""
    bank: str = ""
    ids: list[str] = field(default_factory=list)
    retained: int = 0
    spooled: int = 0
    drained: int = 0
    timed_out: bool = False
    error: str = ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _first(raw: Mapping[str, Any], keys: tuple[str, ...]) -> str:
    """The first non-empty string among ``keys`` (``"k[0]"``: the first item of list ``k``)."""
    for key in keys:
        if key.endswith("[0]"):
            items = raw.get(key[:-3])
            value = _str(items[0]) if isinstance(items, list) and items else ""
        else:
            value = _str(raw.get(key))
        if value:
            return value
    return ""


def parse_input(data: bytes | str) -> HookInput:
    """The fields memwire uses, from the host's JSON (anything unreadable gives empty fields)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        raw = json.loads(text) if text.strip() else {}
    except ValueError:
        raw = {}
    if not isinstance(raw, dict):
        raw = {}
    keys = hosts.payload_keys()
    return HookInput(
        session_id=_first(raw, keys.session).strip() or "unknown",
        cwd=_first(raw, keys.cwd) or os.getcwd(),
        prompt=_first(raw, keys.prompt),
        transcript_path=_first(raw, keys.transcript),
        host_event=_first(raw, keys.event),
        raw=raw,
    )


def detect_host(payload: HookInput) -> str:
    """Guess the host from its payload (``--host`` overrides)."""
    return hosts.detect(payload.raw, payload.host_event)


def format_output(host: str, event: str, block: str) -> str:
    """The stdout a host expects: its JSON shape, or the plain block."""
    return hosts.output_format(host).render(event, block)


# -- per-session state -------------------------------------------------------------------------


def _state_path(session: str) -> Path:
    return _paths.sessions_dir() / f"{_paths.safe_name(session)}.json"


def load_state(session: str) -> dict[str, Any]:
    try:
        value = json.loads(_state_path(session).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def save_state(session: str, state: Mapping[str, Any]) -> None:
    from memwire.private_files import open_private

    with contextlib.suppress(OSError):
        path = _state_path(session)
        _paths.private_dir(_paths.hooks_dir())
        _paths.private_dir(path.parent)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = open_private(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with open(fd, "w", encoding="utf-8") as handle:
            handle.write(json.dumps(dict(state), ensure_ascii=False))
        os.replace(tmp, path)


def remember_prompt(state: dict[str, Any], prompt: str) -> None:
    """Keep what a later short prompt ("continue") borrows as its query: the end of this one,
    normalised and redacted (the raw prompt is never written; a secret is no search term)."""
    from memwire._text import nfkc
    from memwire.redact import redact

    state["last_prompt"] = redact(nfkc(prompt))[-2000:]


def is_short(prompt: str) -> bool:
    """A prompt too thin to search with ("continue", "ok", "yes please")."""
    text = " ".join(_WORD.findall(prompt.lower()))
    if not text:
        return True
    return text in _CONTINUATIONS or (len(text.split()) <= 2 and len(text) <= 16)


def choose_query(prompt: str, state: Mapping[str, Any]) -> tuple[str, bool]:
    """``(query, borrowed)``: a short prompt borrows the previous prompt of the session."""
    prompt = prompt.strip()
    previous = _str(state.get("last_prompt")).strip()
    if is_short(prompt) and previous:
        return (previous + "\n" + prompt).strip(), True
    return prompt, False


# -- the events --------------------------------------------------------------------------------


def _inject(client: Client, event: str, payload: HookInput, bank: str, result: HookResult) -> str:
    limit = _env_int("MEMWIRE_HOOK_MAX_ENTRIES", MAX_ENTRIES)
    max_bytes = _env_int("MEMWIRE_HOOK_MAX_BYTES", MAX_BLOCK_BYTES)
    audit: dict[str, Any] = {"event": event, "bank": bank, "store": client.kind}
    if event == "prompt":
        state = load_state(payload.session_id)
        query, borrowed = choose_query(payload.prompt, state)
        if not is_short(payload.prompt):
            remember_prompt(state, payload.prompt)
            save_state(payload.session_id, state)
        if not query:
            return ""
        entries = client.recall(
            bank,
            query[-4000:],
            limit=min(limit + 3, 100),
            budget=RECALL_TOKENS,
            exclude_tags=(*PROMPT_EXCLUDED_TAGS, session_tag(payload.session_id)),
        )
        entries = cap_transcripts(entries, MAX_TRANSCRIPT_ENTRIES)
        audit["borrowed"] = borrowed
    else:
        entries = client.recent(bank, limit=max(limit * 4, 20), exclude_tags=EXCLUDED_TAGS)
    block, ids = build_block(
        entries, bank=bank, source=event, max_entries=limit, max_bytes=max_bytes
    )
    result.ids = ids
    audit.update(ids=ids, bytes=len(block.encode("utf-8")))
    _log.audit(payload.session_id, audit)
    return block


def session_tag(session_id: str) -> str:
    """The tag every transcript memory of a session carries."""
    return f"session:{session_id[:48]}"


def cap_transcripts(entries: list[Entry], most: int) -> list[Entry]:
    """``entries`` in order, keeping at most ``most`` transcript exchanges."""
    kept: list[Entry] = []
    seen = 0
    for entry in entries:
        if TRANSCRIPT_TAG in entry.tags:
            seen += 1
            if seen > most:
                continue
        kept.append(entry)
    return kept


def _transcript_items(
    payload: HookInput, host: str, state: dict[str, Any]
) -> tuple[list[dict[str, Any]], int]:
    """The retain items for the exchanges not yet captured, and the new cursor."""
    if not payload.transcript_path:
        return [], int(state.get("captured", -1))
    from memwire.hooks.transcript import read_exchanges, turn_chunks

    exchanges = read_exchanges(payload.transcript_path)
    if not exchanges:
        return [], int(state.get("captured", -1))
    captured = state.get("captured", -1)
    start = max(0, int(captured) if isinstance(captured, int) else 0)  # the last one may have grown
    session = payload.session_id[:100]
    items: list[dict[str, Any]] = []
    for turn in turn_chunks(exchanges, start):
        items.append(
            {
                "content": turn.text,
                "tags": [TRANSCRIPT_TAG, host, session_tag(payload.session_id)],
                "context": turn.context or f"{host} session {session}",
                "created_at": turn.timestamp,
                "document_id": f"transcript:{session}:{turn.exchange}:{turn.part}",
                "update_mode": "replace",
            }
        )
    return items, exchanges[-1].index


def _check_dates(items: list[dict[str, Any]]) -> None:
    from memwire._dates import parse_created_at
    from memwire.errors import InvalidInputError

    for item in items:
        if item.get("created_at") is not None:
            try:
                parse_created_at(item["created_at"])
            except InvalidInputError:
                item["created_at"] = None


def _deliver(
    client: Client | None,
    bank: str,
    items: list[dict[str, Any]],
    deadline: float,
    result: HookResult,
    event: str,
) -> None:
    """Retain ``items``; whatever is not delivered by ``deadline`` is spooled."""
    pending = list(items)
    reason = ""
    if client is not None:
        batch = 50 if client.kind == "local" else 1
        while pending and time.monotonic() < deadline:
            head = pending[:batch]
            try:
                client.retain_many(bank, head)
            except Rejected as exc:
                if len(head) > 1:  # find the bad one: retry these one by one
                    batch = 1
                    continue
                _log.failure(event, "a transcript chunk was refused", str(exc))
                spool_rejected(bank, head, str(exc))
                pending = pending[1:]
                continue
            except Unavailable as exc:
                reason = str(exc)
                break
            result.retained += len(head)
            pending = pending[len(head) :]
        if pending and not reason:
            reason = "out of time"
    else:
        reason = "no store"
    if pending:
        from memwire.hooks import spool

        spool.append(bank, pending, reason=reason)
        result.spooled += len(pending)
        _log.failure(event, f"spooled {len(pending)} write(s)", reason)


def spool_rejected(bank: str, items: list[dict[str, Any]], why: str) -> None:
    from memwire.hooks import spool

    with contextlib.suppress(OSError):
        spool.reject(bank, items, why)


def drain_spool(client: Client, budget: float = DRAIN_BUDGET_S) -> int:
    """Deliver what the spool holds (until ``budget`` seconds pass); returns how many."""

    from memwire.hooks import spool

    def send(bank: str, item: dict[str, Any]) -> str:
        try:
            client.retain(bank, item)
        except Rejected:
            return spool.Delivery.REJECTED
        return spool.Delivery.OK

    outcome = spool.drain(send, deadline=time.monotonic() + budget)
    return outcome.delivered


def _capture(
    client: Client, payload: HookInput, host: str, bank: str, event: str, result: HookResult
) -> None:
    deadline = time.monotonic() + _env_float("MEMWIRE_HOOK_WRITE_BUDGET", WRITE_BUDGET_S)
    with contextlib.suppress(Exception):
        result.drained = drain_spool(client, min(DRAIN_BUDGET_S, deadline - time.monotonic()))
    state = load_state(payload.session_id)
    items, cursor = _transcript_items(payload, host, state)
    if items:
        _check_dates(items)
        _deliver(client, bank, items, deadline, result, event)
    if cursor >= 0:
        state["captured"] = cursor
        save_state(payload.session_id, state)


def run_hook(
    event: str,
    data: bytes | str,
    *,
    host: str | None = None,
    bank: str | None = None,
    url: str | None = None,
    db: str | None = None,
    budget: float | None = None,
) -> HookResult:
    """Run one hook event on the host payload ``data``; never raises.

    ``budget``: seconds the prompt and session-start paths may spend (default 1.2, or
    ``$MEMWIRE_HOOK_BUDGET_MS``); past it the hook gives up, prints nothing and records the
    timeout (the work thread is abandoned, the caller should exit).
    """
    _log.setup_logging()
    result = HookResult()
    try:
        canonical = canonical_event(event)
        if canonical is None:
            _log.failure(event, "unknown hook event")
            result.error = "unknown event"
            return result
        result.event = canonical
        payload = parse_input(data)
        chosen = (host or "").strip().lower()
        result.host = chosen if chosen in host_choices() else detect_host(payload)
        result.bank = resolve_bank(payload.cwd, bank)
    except Exception as exc:  # pragma: no cover - defensive
        _log.failure(event, f"unexpected {type(exc).__name__}", str(exc)[:200])
        result.error = type(exc).__name__
        return result

    if result.event in ("prompt", "session-start"):
        return _run_bounded(result, payload, url, db, budget)
    client: Client | None = None
    try:
        try:
            client = open_client(url, db)
        except Exception as exc:
            _log.failure(result.event, f"no store: {type(exc).__name__}", str(exc)[:200])
        if client is None:
            return result
        _capture(client, payload, result.host, result.bank, result.event, result)
        result.output = format_output(result.host, result.event, "")
    except Exception as exc:
        _log.failure(result.event, f"unexpected {type(exc).__name__}", str(exc)[:200])
        result.error = type(exc).__name__
    finally:
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
    return result


def _run_bounded(
    result: HookResult, payload: HookInput, url: str | None, db: str | None, budget: float | None
) -> HookResult:
    seconds = budget or _env_float("MEMWIRE_HOOK_BUDGET_MS", PROMPT_BUDGET_S * 1000) / 1000
    if result.event in hosts.output_format(result.host).fixed:
        # Nothing can be injected; remember the prompt for "continue" and answer at once.
        state = load_state(payload.session_id)
        if payload.prompt and not is_short(payload.prompt):
            remember_prompt(state, payload.prompt)
            save_state(payload.session_id, state)
        result.output = format_output(result.host, result.event, "")
        return result
    box: dict[str, str] = {}

    def work() -> None:
        client: Client | None = None
        try:
            client = open_client(url, db)
            box["block"] = _inject(client, result.event, payload, result.bank, result)
        except Exception as exc:
            box["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
        finally:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.close()

    thread = threading.Thread(target=work, name="memwire-hook", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        result.timed_out = True
        _log.failure(result.event, "gave up: over the time budget", f"{seconds:.2f}s")
        result.output = format_output(result.host, result.event, "")
        return result
    if "error" in box:
        result.error = box["error"]
        _log.failure(result.event, "recall failed", box["error"])
    result.output = format_output(result.host, result.event, box.get("block", ""))
    return result


def read_stdin(stream: IO[bytes]) -> bytes:
    """The host's payload (bounded; a closed or absent stdin gives nothing)."""
    try:
        return stream.read(MAX_STDIN)
    except (OSError, ValueError):
        return b""
