"""memwire._heap.trim gives freed heap memory back to the system (glibc's malloc_trim): the
soak benchmark's server kept ~290 MiB freed in its arenas beside ~120 MiB in use."""

from __future__ import annotations

import platform
import sys

import pytest
from memwire import _heap

pytestmark = pytest.mark.backend_independent  # no kernel, no store

GLIBC = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


def _anon_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no RssAnon")


@pytest.mark.skipif(not GLIBC, reason="malloc_trim is glibc's (a no-op elsewhere)")
def test_trim_returns_the_holes_that_free_keeps() -> None:
    # 600 blocks of 96 KiB (below the mmap threshold: they come from the heap); freeing every
    # other one leaves ~28 MiB of holes between live blocks, which free() cannot give back.
    blocks = [bytearray(96 * 1024) for _ in range(600)]
    kept = blocks[1::2]
    del blocks
    before = _anon_mib()
    assert _heap.trim() is True
    after = _anon_mib()
    assert before - after >= 14, (before, after)
    assert all(len(block) == 96 * 1024 for block in kept)  # what is in use is untouched


def test_trim_is_a_no_op_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(_heap, "_loaded", False)
    monkeypatch.setattr(_heap, "_malloc_trim", None)
    assert _heap.trim() is False


def _mmapped_bytes() -> int:
    import ctypes

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks")]
        _fields_ += [("hblkhd", ctypes.c_size_t)]
        _fields_ += [(name, ctypes.c_size_t) for name in ("usmblks", "fsmblks", "uordblks")]
        _fields_ += [(name, ctypes.c_size_t) for name in ("fordblks", "keepcost")]

    call = ctypes.CDLL(None).mallinfo2
    call.restype = MallInfo2
    return int(call().hblkhd)


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's (a no-op elsewhere)")
def test_a_server_maps_large_blocks_so_that_freeing_them_returns_them() -> None:
    # Without it, freeing a 16 MiB block would raise glibc's dynamic mmap threshold to 16 MiB:
    # from then on a 2 MiB block would come from an arena, and stay there once freed.
    assert _heap.tune_for_server() is True
    big = bytearray(16 << 20)
    del big
    before = _mmapped_bytes()
    block = bytearray(2 * _heap.MMAP_THRESHOLD)
    assert _mmapped_bytes() - before >= 2 * _heap.MMAP_THRESHOLD  # mapped: unmapped when freed
    del block
    assert _mmapped_bytes() - before < _heap.MMAP_THRESHOLD
