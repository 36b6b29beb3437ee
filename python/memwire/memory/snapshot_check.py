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
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from memwire.errors import SnapshotError

if TYPE_CHECKING:
    from memwire.store import Snapshot

__all__ = ["HEADER_SIZE", "MAGIC", "OVERLAP_BYTES", "load_sealed", "seal", "unseal"]

log = logging.getLogger("memwire")
T = TypeVar("T")

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


def _open(seq: int, data: bytes | bytearray) -> tuple[bytes, memoryview]:
    """The envelope's expected digest and a view of its payload, once every check but the
    checksum passed."""
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
    # Read-only: the Rust kernel then reads the payload in place (a writable one is copied).
    return bytes(data[:HEADER_SIZE]), memoryview(data).toreadonly()[HEADER_SIZE:]


def _verify(header: bytes, payload: memoryview) -> None:
    numbers = header[len(MAGIC) : len(MAGIC) + _NUMBERS.size]
    if _digest(numbers, payload) != header[len(MAGIC) + _NUMBERS.size :]:
        raise SnapshotError("corrupt snapshot: envelope: checksum mismatch")


def unseal(seq: int, data: bytes | bytearray) -> bytes:
    """The kernel payload of ``data``, a snapshot the store says covers up to ``seq``; raises
    :class:`SnapshotError` (``corrupt snapshot: envelope: ...``) on any mismatch."""
    header, payload = _open(seq, data)
    _verify(header, payload)
    return payload.tobytes()


#: Payloads at least this big are checksummed on a thread while the kernel reads them.
OVERLAP_BYTES = 16 << 20


def load_sealed(bank: str, snap: Snapshot, load: Callable[[memoryview], T]) -> T | None:
    """``load`` applied to the kernel payload of bank ``bank``'s stored snapshot (a view into
    ``snap.data``, never a copy), or None (logged at WARNING) when the envelope does not match:
    the caller rebuilds the index from the rows.

    A big payload's checksum (SHA-256 at ~0.6 GB/s here: 1.7 s for a 1M-memory bank) is
    computed on another thread while ``load`` reads the same bytes; both release the GIL, so
    opening costs the slower of the two, not their sum. What ``load`` built from a payload
    whose checksum then fails is dropped: nothing reads it before the check is done."""
    try:
        header, payload = _open(snap.seq, snap.data)
        small = len(payload) < OVERLAP_BYTES
        if small:
            _verify(header, payload)
    except SnapshotError as exc:
        _corrupt(bank, exc)
        return None
    if small:
        return load(payload)
    failed: list[SnapshotError] = []

    def check() -> None:
        try:
            _verify(header, payload)
        except SnapshotError as exc:
            failed.append(exc)

    checker = threading.Thread(target=check, name="memwire-snapshot-check", daemon=True)
    checker.start()
    try:
        made = load(payload)
    except BaseException:
        checker.join()
        if not failed:
            raise
    checker.join()
    if failed:  # a corrupt envelope is reported as such, whatever the kernel made of it
        _corrupt(bank, failed[0])
        return None
    return made


def _corrupt(bank: str, exc: SnapshotError) -> None:
    log.warning("index snapshot of bank %r is corrupt (%s); rebuilding from rows", bank, exc)
