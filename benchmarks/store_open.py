"""Indicative timing of the Memory store: bulk import, snapshot at close, and reopening.

    python benchmarks/store_open.py --n 100000 [--backend python|rust] [--dir /tmp/mw-bench]

Steps, each timed once (wall clock, one run: indicative, not a benchmark suite):

1. ``retain_many`` of N memories into a fresh file (the corpus of corpus_cache.py when cached,
   else synthetic text), then one recall so the index is built in memory;
2. ``close()`` (writes the bank's index snapshot);
3. open + first recall on the closed store: loads the snapshot and replays nothing, which is
   what "opening a 100k-memory store with a current snapshot" costs; no re-tokenizing;
4. the same with the snapshot deleted (a full rebuild from rows), for comparison.

Before step 4, a fresh process reports its memory (Linux, /proc/self/status): the peak RSS
(VmHWM) of opening the store and answering the first recall against the RSS after it, then
the peak while ``close()`` writes a snapshot (one memory retained first) against the RSS
before it (the peak is reset with /proc/self/clear_refs). A load or save that held the
snapshot several times over shows here as a peak far above the steady state.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
PYTHON_DIR = Path(__file__).resolve().parent.parent / "python"
sys.path.insert(0, str(PYTHON_DIR))

from memwire import Memory  # noqa: E402

PROBE = r"""
import json, sys
sys.path.insert(0, sys.argv[3])
def status():
    out = {}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out
from memwire import Memory  # noqa: E402
m = Memory(sys.argv[1], backend=sys.argv[2] or None)
m.recall("memory")
s = status()
out = {"open_recall_peak_mib": s["VmHWM"], "after_open_recall_rss_mib": s["VmRSS"]}
m.retain("one more memory, so that close() writes a snapshot")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets VmHWM to the current RSS
out["before_close_rss_mib"] = status()["VmRSS"]
m.close()
out["close_peak_mib"] = status()["VmHWM"]
print(json.dumps(out))
"""


def memory_probe(path: Path, backend: str | None) -> None:
    probe = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), backend or "", str(PYTHON_DIR)],
        capture_output=True,
        text=True,
        check=True,
    )
    for key, value in json.loads(probe.stdout).items():
        print(f"{'fresh process: ' + key:<48} {value:10.1f}")


def corpus(n: int) -> list[str]:
    try:
        import corpus_cache

        if (corpus_cache.cache_dir(n) / "meta.json").exists():
            return corpus_cache.load_corpus(n).texts
    except Exception:
        pass
    rng = random.Random(7)
    words = [f"w{i}" for i in range(20_000)]
    return [" ".join(rng.choices(words, k=rng.randint(8, 40))) + f" id{i}" for i in range(n)]


def timed(label: str, fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    elapsed = time.perf_counter() - start
    print(f"{label:<48} {elapsed * 1000:10.1f} ms", flush=True)
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--backend", default=None)
    ap.add_argument("--dir", default=None)
    args = ap.parse_args()
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="memwire-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "memory.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    texts = corpus(args.n)
    print(f"{len(texts)} memories, backend={args.backend or 'auto'}, file={path}")

    m = Memory(path, backend=args.backend)
    print(f"backend in use: {m.backend}")
    timed("retain_many (import)", lambda: m.retain_many(texts))
    timed("first recall (builds the index from rows)", lambda: m.recall("memory"))
    timed("close (writes the snapshot)", m.close)
    size = sum(p.stat().st_size for p in workdir.iterdir() if p.name.startswith("memory.db"))
    print(f"{'store size':<48} {size / 1e6:10.1f} MB")

    def open_and_recall() -> None:
        with Memory(path, backend=args.backend) as again:
            again.recall("memory")  # close() writes nothing: no change since the snapshot

    timed("open + first recall, current snapshot", open_and_recall)
    timed("open + first recall, current snapshot (again)", open_and_recall)
    if sys.platform.startswith("linux"):
        memory_probe(path, args.backend)  # writes a snapshot: step 3 above ran before
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM snapshots")
    timed("open + first recall, no snapshot (rebuild)", open_and_recall)
    if not args.dir:
        shutil.rmtree(workdir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
