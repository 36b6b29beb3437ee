"""memwire._heap.trim gives freed heap memory back to the system (glibc's malloc_trim): the
soak benchmark's server kept ~290 MiB freed in its arenas beside ~120 MiB in use."""

from __future__ import annotations

import platform
import subprocess
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


# Run in a fresh interpreter: a long test session's heap may hold free chunks big enough to
# serve any block, mmap threshold or not.
_MAPPED_AFTER_A_BIG_FREE = """
import ctypes, sys
from memwire import _heap

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
        "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

call = ctypes.CDLL(None).mallinfo2
call.restype = MallInfo2
if sys.argv[1] == "tuned":
    assert _heap.tune_for_server() is True
big = bytearray(16 << 20)
del big
before = call().hblkhd
block = bytearray(2 << 20)
print(call().hblkhd - before)
"""


@pytest.mark.skipif(not GLIBC, reason="mallopt is glibc's (a no-op elsewhere)")
@pytest.mark.parametrize(("mode", "mapped"), [("default", False), ("tuned", True)])
def test_a_server_maps_large_blocks_so_that_freeing_them_returns_them(
    mode: str, mapped: bool
) -> None:
    """Freeing a 16 MiB block raises glibc's dynamic mmap threshold to 16 MiB: from then on a
    2 MiB block comes from an arena and stays there once freed. tune_for_server keeps the
    threshold at 1 MiB, so the block is mapped, and unmapped when freed."""
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED_AFTER_A_BIG_FREE, mode],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    grew = int(done.stdout.strip())
    assert (grew >= 2 << 20) is mapped, grew
