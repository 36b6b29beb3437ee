"""``memwire serve`` with memory probes, for soak runs: where a growing server's memory goes.

    python benchmarks/soak_probe.py OUT.jsonl EVERY_S [--trace] -- serve --db ... --port ...

Runs the ``memwire`` command given after ``--`` in this process, and every ``EVERY_S`` seconds
appends one JSON line to ``OUT.jsonl``: VmRSS and RssAnon, glibc's ``mallinfo2`` (bytes in use
by malloc in its arenas, bytes free but kept in them, bytes in mmapped chunks: malloc serves
Python's large objects, the Rust kernel, usearch and SQLite alike), the thread count, and with
``--trace`` Python's own allocations (tracemalloc: the total, and the 12 source lines that grew
most since the first sample). ``benchmarks/soak.py --probe OUT.jsonl`` starts the server this
way. Linux with glibc only; a diagnostic, not a benchmark (tracemalloc slows every allocation).
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
import tracemalloc
from typing import Any

_FIELDS = ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks")
_FIELDS += ("uordblks", "fordblks", "keepcost")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _FIELDS]


def _mallinfo() -> dict[str, float]:
    libc = ctypes.CDLL("libc.so.6")
    call = libc.mallinfo2
    call.restype = _MallInfo2
    info = call()
    mib = 1 << 20
    return {
        "malloc_in_use_mib": round(info.uordblks / mib, 1),
        "malloc_free_kept_mib": round(info.fordblks / mib, 1),
        "malloc_mmapped_mib": round(info.hblkhd / mib, 1),
        "malloc_arena_mib": round(info.arena / mib, 1),
    }


def _status() -> dict[str, float]:
    found: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as handle:
        for line in handle:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "Threads"):
                number = int(value.split()[0])
                found[key] = number if key == "Threads" else round(number / 1024, 1)
    return found


def _probe(out: str, every: float, trace: bool) -> None:
    began = time.monotonic()
    first = tracemalloc.take_snapshot() if trace else None
    while True:
        line: dict[str, Any] = {"at_s": round(time.monotonic() - began, 1), **_status()}
        line.update(_mallinfo())
        if trace and first is not None:
            now = tracemalloc.take_snapshot()
            line["traced_mib"] = round(tracemalloc.get_traced_memory()[0] / (1 << 20), 1)
            grew = now.compare_to(first, "lineno")[:12]
            line["grew"] = [
                f"{stat.size_diff / 1024:+.0f} KiB {stat.count_diff:+d} "
                f"{stat.traceback[0].filename}:{stat.traceback[0].lineno}"
                for stat in grew
            ]
        with open(out, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(line) + "\n")
        time.sleep(every)


def main() -> int:
    split = sys.argv.index("--")
    own, command = sys.argv[1:split], sys.argv[split + 1 :]
    out, every = own[0], float(own[1])
    trace = "--trace" in own
    if trace:
        tracemalloc.start(1)
    threading.Thread(target=_probe, args=(out, every, trace), daemon=True).start()
    from memwire.__main__ import main as memwire_main

    return memwire_main(command)


if __name__ == "__main__":
    sys.exit(main())
