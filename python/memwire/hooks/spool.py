"""The durable spool: writes a hook could not deliver, kept on disk until a later run delivers
them.

- :func:`append` writes one new file per call (``<home>/spool/<time>-<pid>-<rand>.jsonl``), one
  JSON line per write, then ``fsync``s the file and the directory before returning: once it
  returns, a crash or power loss cannot lose the writes. Content is redacted before it is
  spooled (the same redaction the store applies, by :func:`clean_item`; tags and the document
  id too), so secrets never reach the spool either.
- :func:`drain` delivers the spooled writes oldest first, under a non-blocking lock (a second
  drainer skips instead of waiting). A file whose writes were all delivered is deleted; a file
  that was only partly delivered is replaced atomically by the remainder. Every spooled write
  carries a ``document_id``, and the store treats a write of the same document with the same
  content as a no-op, so a replay after a crash between delivery and deletion never duplicates.
- A write the store refuses as invalid is moved to ``rejected.jsonl`` (kept, never retried;
  :func:`reject` writes it there redacted and fsynced, the one writer of that file);
  a torn last line (a crash in the middle of a write) is skipped.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memwire.hooks import _paths

__all__ = ["Delivery", "DrainResult", "append", "clean_item", "depth", "drain", "reject"]

FORMAT = 1
REJECTED = "rejected.jsonl"
_LOCK = ".drain.lock"
_STALE_LOCK_SECONDS = 120


class Delivery:
    """What ``send`` reports for one write: delivered, or refused for good."""

    OK = "ok"
    REJECTED = "rejected"


@dataclass
class DrainResult:
    delivered: int = 0
    rejected: int = 0
    remaining: int = 0
    skipped: bool = False  # another process was draining


def _fsync_dir(directory: Path) -> None:
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_durably(path: Path, lines: Sequence[str]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with open(fd, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def clean_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` as it may be written to disk: content and context NFKC-normalised and redacted,
    tags and document id redacted (the store refuses an identifier that holds a secret; here
    there is nobody to refuse to, so the secret is replaced and never written)."""
    from memwire._text import nfkc
    from memwire.redact import redact

    clean = dict(item)
    for key in ("content", "context"):
        value = clean.get(key)
        if isinstance(value, str):
            clean[key] = redact(nfkc(value))
    doc = clean.get("document_id")
    if isinstance(doc, str):
        clean["document_id"] = redact(nfkc(doc), personal=False)
    tags = clean.get("tags")
    if isinstance(tags, str):
        tags = [tags]
    if isinstance(tags, (list, tuple)):
        clean["tags"] = [redact(nfkc(t), personal=False) if isinstance(t, str) else t for t in tags]
    return clean


def _line(bank: str, item: Mapping[str, Any], reason: str) -> str:
    from memwire.redact import redact

    record = {"v": FORMAT, "bank": bank, "item": clean_item(item), "reason": redact(reason[:200])}
    return json.dumps(record, ensure_ascii=False) + "\n"


def append(bank: str, items: Sequence[Mapping[str, Any]], *, reason: str = "") -> Path:
    """Spool ``items`` (retain fields: content, tags, context, created_at, document_id,
    update_mode) for ``bank``; durable when this returns. Raises OSError if the disk refuses."""
    directory = _paths.spool_dir()
    _paths.private_dir(directory)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = f"{stamp}-{time.time_ns() % 10**9:09d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
    path = directory / name
    _write_durably(path, [_line(bank, item, reason) for item in items])
    return path


def _append_durably(path: Path, lines: Sequence[str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with open(fd, "a", encoding="utf-8") as handle:
        handle.writelines(lines)
        handle.flush()
        os.fsync(handle.fileno())


def reject(bank: str, items: Sequence[Mapping[str, Any]], why: str) -> None:
    """Keep ``items``, which the store refused as invalid, in ``rejected.jsonl`` (redacted,
    fsynced): never retried, kept for a human to read. Raises OSError if the disk refuses."""
    directory = _paths.spool_dir()
    _paths.private_dir(directory)
    _append_durably(directory / REJECTED, [_line(bank, item, why) for item in items])


def _files(directory: Path) -> list[Path]:
    try:
        return sorted(p for p in directory.iterdir() if p.suffix == ".jsonl" and p.name != REJECTED)
    except OSError:
        return []


def _records(path: Path) -> list[tuple[str, dict[str, Any] | None]]:
    """``(raw line, record or None when unreadable)`` for each line of a spool file."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return out
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:
            out.append((line, None))
            continue
        ok = (
            isinstance(value, dict)
            and isinstance(value.get("bank"), str)
            and isinstance(value.get("item"), dict)
        )
        out.append((line, value if ok else None))
    return out


def depth() -> dict[str, int]:
    """``{"items", "files", "bytes", "rejected"}`` of the spool (cheap: counts lines)."""
    directory = _paths.spool_dir()
    items = files = size = 0
    for path in _files(directory):
        files += 1
        with contextlib.suppress(OSError):
            size += path.stat().st_size
            with open(path, "rb") as handle:
                items += sum(1 for line in handle if line.strip())
    rejected = 0
    with contextlib.suppress(OSError), open(directory / REJECTED, "rb") as handle:
        rejected = sum(1 for line in handle if line.strip())
    return {"items": items, "files": files, "bytes": size, "rejected": rejected}


@contextlib.contextmanager
def _lock(directory: Path) -> Iterator[bool]:
    """A non-blocking exclusive lock on the spool; yields False when another process holds it."""
    path = directory / _LOCK
    try:
        import fcntl
    except ImportError:  # Windows: an exclusive-create lock file, broken when stale
        try:
            if path.exists() and time.time() - path.stat().st_mtime > _STALE_LOCK_SECONDS:
                path.unlink()
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()
        return
    from memwire.private_files import open_private

    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    handle = open(open_private(path, flags), "a")  # noqa: SIM115 - held for the whole drain
    try:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def drain(
    send: Callable[[str, dict[str, Any]], str],
    *,
    deadline: float | None = None,
) -> DrainResult:
    """Deliver spooled writes with ``send(bank, item)``, which returns :attr:`Delivery.OK` or
    :attr:`Delivery.REJECTED`, or raises when the store cannot be reached (draining stops there
    and the rest stays spooled). ``deadline``: a ``time.monotonic()`` value to stop at."""
    result = DrainResult()
    directory = _paths.spool_dir()
    if not directory.is_dir() or not _files(directory):
        return result
    with _lock(directory) as held:
        if not held:
            result.skipped = True
            return result
        stopped = False
        for path in _files(directory):
            records = _records(path)
            keep: list[str] = []
            rejected: list[str] = []
            for raw, record in records:
                if stopped or (deadline is not None and time.monotonic() > deadline):
                    stopped = True
                    keep.append(raw + "\n")
                    continue
                if record is None:
                    continue  # a torn or foreign line: nothing to deliver
                try:
                    outcome = send(record["bank"], record["item"])
                except Exception:
                    stopped = True
                    keep.append(raw + "\n")
                    continue
                if outcome == Delivery.REJECTED:
                    rejected.append(raw + "\n")
                    result.rejected += 1
                else:
                    result.delivered += 1
            if rejected:  # already redacted: these lines were written by append
                _append_durably(directory / REJECTED, rejected)
            if keep:
                result.remaining += len(keep)
                if len(keep) != len(records):
                    _write_durably(path, keep)
            else:
                with contextlib.suppress(OSError):
                    path.unlink()
        if stopped:
            _fsync_dir(directory)
    return result
