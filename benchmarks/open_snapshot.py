"""Opening a big bank from its snapshot: the time to the first recall, and what it holds.

    python benchmarks/recall_read.py --n 1000000 --store /tmp/b1m/bank.db   # builds the store
    python benchmarks/open_snapshot.py /tmp/b1m/bank.db --rounds 3 [--compare /work/main/python]

Each round is a fresh process per checkout (this one, then each ``--compare`` python/ dir, in
turn), on the same store file, which must hold a current snapshot (``recall_read.py`` closes
its Memory, which writes one). In that process: an empty Memory in a temporary file answers a
recall (the embedder table and the kernel loaded: the idle process a server would be), the
heap is trimmed and RSS read; then ``Memory(store)`` and its first recall are timed together
("open"), three more recalls run, and RSS is read again after a trim. The report gives, per
checkout, the median open over the rounds and the RSS above idle per memory, and the peak
RSS (VmHWM) of the last round. The store is only read (no memory is retained or removed, so
``close()`` writes no snapshot). Indicative: one machine, wall clock; nothing here asserts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYTHON_DIR = HERE.parent / "python"

PROBE = r"""
import gc, json, os, sys, tempfile, time
sys.path.insert(0, sys.argv[2])
from memwire import Memory, _heap

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024

_heap.tune_for_server()
with tempfile.TemporaryDirectory() as tmp:
    empty = Memory(os.path.join(tmp, "empty.db"), backend="rust")
    empty.retain("warm up the embedder")
    empty.recall("warm up")
    gc.collect(); _heap.trim()
    idle = status("VmRSS")
    started = time.perf_counter()
    m = Memory(sys.argv[1], backend="rust")
    m.recall("the first recall loads the bank", limit=10)
    opened = time.perf_counter() - started
    for q in ("deploy staging", "what did we decide about the cache", "release notes"):
        m.recall(q)
    n = m.stats()["count"]
    gc.collect(); _heap.trim()
    out = {"open_s": opened, "idle_mib": idle, "loaded_mib": status("VmRSS"),
           "peak_mib": status("VmHWM"), "memories": n}
    m.close(); empty.close()
print(json.dumps(out))
"""


def probe(store: Path, python_dir: Path) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(store), str(python_dir)],
        capture_output=True,
        text=True,
    )
    if done.returncode:
        sys.exit(f"the probe failed under {python_dir}:\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("store", type=Path, help="a store file holding one big bank and its snapshot")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts' python/ dirs")
    args = ap.parse_args()
    checkouts = [*map(Path, args.compare), PYTHON_DIR]
    runs: dict[str, list[dict[str, float]]] = {str(c): [] for c in checkouts}
    for r in range(args.rounds):
        for c in checkouts:
            got = probe(args.store, c)
            runs[str(c)].append(got)
            print(f"round {r + 1} {c}: open {got['open_s']:.2f} s", file=sys.stderr, flush=True)
    report = {}
    for c, rs in runs.items():
        n = rs[-1]["memories"]
        above = statistics.median(x["loaded_mib"] - x["idle_mib"] for x in rs)
        report[c] = {
            "open_s_median": round(statistics.median(x["open_s"] for x in rs), 2),
            "open_s_all": [round(x["open_s"], 2) for x in rs],
            "above_idle_mib": round(above, 1),
            "bytes_per_memory": round(above * 2**20 / n),
            "peak_mib": round(rs[-1]["peak_mib"], 1),
            "memories": n,
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
