"""What every importer shares: candidates read from a source, and the one write path.

A reader turns its source into :class:`Candidate` items (the fields
:meth:`memwire.Memory.retain_many` takes) and :class:`Skip` notes for records it could not
read. :func:`write` checks each candidate with the Memory layer's own preparation (so a bad
one is skipped with the Memory API's reason, not the whole import refused), then stores the
good ones through ``Memory.retain_many`` in batches: validation, NFKC, redaction of secrets,
deduplication and the bank's rules hold as for any retain.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memwire import _dates
from memwire._text import clean_bank, nfkc
from memwire.config import from_memory_wire
from memwire.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from memwire.memory import Memory

__all__ = [
    "BATCH",
    "Candidate",
    "Read",
    "Skip",
    "Summary",
    "json_records",
    "text_list",
    "trim_tags",
    "write",
]

BATCH = 1000
"""Memories per ``retain_many`` call: one transaction each, and one step of the progress bar."""


@dataclass(frozen=True)
class Candidate:
    """One memory to import: ``item`` as ``retain_many`` takes it; ``bank`` the source's own
    bank (None: the importer's target); ``where`` names the record in the source."""

    item: dict[str, Any]
    where: str
    bank: str | None = None


@dataclass(frozen=True)
class Skip:
    where: str
    reason: str


@dataclass
class Read:
    """What a reader found."""

    candidates: list[Candidate] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    configs: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    """memory-wire bank configs, applied after the bank's memories are written (so its
    ``retainTags`` does not add tags to memories that never had them)."""
    tags_trimmed: int = 0


@dataclass
class Summary:
    """What an import did: stored, merged (identical content, or a newer revision of the same
    document, already in the bank), skipped and why."""

    source: str
    read: int = 0
    imported: int = 0
    merged: int = 0
    redacted: int = 0
    tags_trimmed: int = 0
    banks: dict[str, int] = field(default_factory=dict)
    configs: list[str] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)

    def reasons(self) -> Counter[str]:
        return Counter(s.reason for s in self.skipped)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "read": self.read,
            "imported": self.imported,
            "merged": self.merged,
            "skipped": len(self.skipped),
            "skipped_reasons": dict(self.reasons().most_common()),
            "skipped_records": [{"where": s.where, "reason": s.reason} for s in self.skipped],
            "redacted": self.redacted,
            "tags_trimmed": self.tags_trimmed,
            "banks": self.banks,
            "configs": self.configs,
        }

    def text(self, examples: int = 5) -> str:
        lines = [
            f"read {self.read} records from {self.source}: imported {self.imported}, "
            f"merged {self.merged} (identical content or a newer revision already stored), "
            f"skipped {len(self.skipped)}"
        ]
        for bank, count in sorted(self.banks.items()):
            lines.append(f"  bank {bank!r}: {count} memories imported")
        if self.configs:
            lines.append(f"  config applied to: {', '.join(self.configs)}")
        if self.redacted:
            lines.append(f"  {self.redacted} had secrets redacted before they were stored")
        if self.tags_trimmed:
            lines.append(f"  {self.tags_trimmed} had tags trimmed to memwire's limits")
        for reason, count in self.reasons().most_common():
            lines.append(f"  skipped {count}: {reason}")
            for skip in [s for s in self.skipped if s.reason == reason][:examples]:
                lines.append(f"    {skip.where}")
        return "\n".join(lines)


def trim_tags(tags: list[str], max_tags: int, max_chars: int) -> tuple[list[str], bool]:
    """Tags within memwire's limits (each at most ``max_chars``, at most ``max_tags``), in
    order without repeats; True when any was dropped."""
    kept: list[str] = []
    for tag in tags:
        if tag.strip() and len(tag) <= max_chars and tag not in kept:
            kept.append(tag)
    return kept[:max_tags], len(kept[:max_tags]) != len(tags)


def json_records(
    path: str | os.PathLike[str], found: Read, collections: tuple[str, ...] = ()
) -> Iterator[tuple[str, Any]]:
    """The records of a JSON export: a JSON document (an array of records, or an object whose
    ``collections`` keys hold them) or JSONL, one record per line. A line that is not JSON is
    a skip, not the end of the import."""
    where = Path(path)
    try:
        text = where.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read {where}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidInputError(f"{where} is not UTF-8 text") from None
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if isinstance(document, list):
        yield from ((f"record {n}", r) for n, r in enumerate(document, start=1))
        return
    if isinstance(document, dict) and any(k in document for k in collections):
        for key in collections:
            value = document.get(key)
            if isinstance(value, dict):  # agentmemory's observations: {session: [records]}
                value = [r for group in value.values() if isinstance(group, list) for r in group]
            if isinstance(value, list):
                yield from ((f"{key}[{n}]", r) for n, r in enumerate(value))
        return
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except ValueError:
            found.skipped.append(Skip(f"line {number}", "not valid JSON"))


def text_list(value: object) -> list[str]:
    """The strings of a JSON array (anything else: none)."""
    if not isinstance(value, list):
        return []
    return [v for v in value if isinstance(v, str)]


def _count(memory: Memory, bank: str) -> int:
    try:
        return int(memory.stats(bank=bank)["count"])
    except NotFoundError:
        return 0


def _batches(items: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


def _check(found: Read, target: str | None, summary: Summary) -> dict[str, list[dict[str, Any]]]:
    """The candidates the Memory layer accepts, by bank; the rest become skips."""
    from memwire.memory.items import prepare_item

    now = _dates.format_utc(_dates.now_utc())
    by_bank: dict[str, list[dict[str, Any]]] = {}
    for candidate in found.candidates:
        try:
            bank = clean_bank(target or candidate.bank or "default")
            prepared = prepare_item(candidate.item, now)
        except InvalidInputError as exc:
            summary.skipped.append(Skip(candidate.where, str(exc)))
            continue
        content, context = candidate.item.get("content"), candidate.item.get("context")
        if prepared.content != nfkc(str(content)) or (
            isinstance(context, str) and context.strip() and prepared.context != nfkc(context)
        ):
            summary.redacted += 1
        by_bank.setdefault(bank, []).append(candidate.item)
    return by_bank


def write(
    memory: Memory,
    found: Read,
    *,
    source: str,
    target: str | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> Summary:
    """Store what ``found`` holds through ``memory`` (into ``target`` when given, else each
    candidate's own bank); ``progress(done, total)`` after each batch."""
    summary = Summary(source, read=len(found.candidates) + len(found.skipped))
    summary.skipped.extend(found.skipped)
    summary.tags_trimmed = found.tags_trimmed
    by_bank = _check(found, target, summary)
    total = sum(len(items) for items in by_bank.values())
    done = 0
    for bank, items in by_bank.items():
        before = _count(memory, bank)
        for batch in _batches(items):
            memory.retain_many(batch, bank=bank)
            done += len(batch)
            if progress is not None:
                progress(done, total)
        added = _count(memory, bank) - before
        summary.banks[bank] = added
        summary.imported += added
        summary.merged += len(items) - added
    for bank, theirs in found.configs.items():
        if target is not None or bank not in by_bank:
            continue  # one target bank has no one config; an empty bank is not created
        try:
            memory.set_config(bank, from_memory_wire(theirs))
            summary.configs.append(bank)
        except InvalidInputError as exc:
            summary.skipped.append(Skip(f"config of bank {bank!r}", str(exc)))
    return summary
