"""The envelope around a kernel's index snapshot: the change sequence it covers and a checksum
of its bytes, checked before a kernel reads them (docs/storage.md, "Snapshots").

A snapshot is derived data: a well-formed but wrong one (bytes flipped on disk, its stored
``seq`` raised so a replay would skip changes) would otherwise answer recalls silently wrong.
The envelope is added here, in the shell, so both kernels and every store share one check
without a schema change; a mismatch reads as a corrupt snapshot, which Memory rebuilds from
the rows and then replaces.

Layout: ``MAGIC`` (8 bytes), the covered seq and the payload length (u64 LE each), then the
SHA-256 of those two numbers and the payload (32 bytes), then the kernel's payload."""

from __future__ import annotations

import hashlib
import logging
import struct
from typing import TYPE_CHECKING

from memwire.errors import SnapshotError

if TYPE_CHECKING:
    from memwire.store import Snapshot

__all__ = ["HEADER_SIZE", "MAGIC", "checked_payload", "seal", "unseal"]

log = logging.getLogger("memwire")

MAGIC = b"MWSNAP\x00\x01"
_NUMBERS = struct.Struct("<QQ")
HEADER_SIZE = len(MAGIC) + _NUMBERS.size + 32


def _digest(numbers: bytes, payload: bytes | memoryview) -> bytes:
    h = hashlib.sha256(numbers)
    h.update(payload)  # hashlib releases the GIL over large buffers
    return h.digest()


def seal(seq: int, payload: bytes) -> bytes:
    """``payload`` (a kernel's ``to_bytes()``) in an envelope covering changes up to ``seq``."""
    numbers = _NUMBERS.pack(seq, len(payload))
    return b"".join((MAGIC, numbers, _digest(numbers, payload), payload))


def unseal(seq: int, data: bytes) -> bytes:
    """The kernel payload of ``data``, a snapshot the store says covers up to ``seq``; raises
    :class:`SnapshotError` (``corrupt snapshot: envelope: ...``) on any mismatch."""
    if len(data) < HEADER_SIZE or not data.startswith(MAGIC):
        raise SnapshotError("corrupt snapshot: envelope: no memwire snapshot header")
    numbers = data[len(MAGIC) : len(MAGIC) + _NUMBERS.size]
    covered, length = _NUMBERS.unpack(numbers)
    if length != len(data) - HEADER_SIZE:
        raise SnapshotError(
            f"corrupt snapshot: envelope: {len(data) - HEADER_SIZE} payload bytes, not {length}"
        )
    if covered != seq:
        raise SnapshotError(f"corrupt snapshot: envelope: covers seq {covered}, stored as {seq}")
    expected = data[len(MAGIC) + _NUMBERS.size : HEADER_SIZE]
    if _digest(numbers, memoryview(data)[HEADER_SIZE:]) != expected:
        raise SnapshotError("corrupt snapshot: envelope: checksum mismatch")
    return data[HEADER_SIZE:]


def checked_payload(bank: str, snap: Snapshot) -> bytes | None:
    """The kernel payload of bank ``bank``'s stored snapshot, or None (logged at WARNING) when
    the envelope does not match: the caller rebuilds the index from the rows."""
    try:
        return unseal(snap.seq, snap.data)
    except SnapshotError as exc:
        log.warning("index snapshot of bank %r is corrupt (%s); rebuilding from rows", bank, exc)
        return None
