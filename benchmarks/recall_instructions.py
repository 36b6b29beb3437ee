"""Recalls to count under callgrind: instruction counts do not depend on the machine's load.

    OPENBLAS_NUM_THREADS=1 valgrind --tool=callgrind --callgrind-out-file=N.out \\
        python benchmarks/recall_instructions.py --dir DIR --tree T --n N [--always]

Opens the store a ``dense_speed.py --dir DIR --tree T`` run left (built by the same tree's
code, HNSW graph included), makes two warm-up recalls (the second: the 40th generic query),
then ``N`` recalls of the corpus's first generic queries with the bank's defaults and, with
``--always``, ``N`` more with ``lookup_ratio`` 0 (the dense stream on every query).
Per recall = (total with N - total with 0) / N; with ``--always``, (its total - the run with
N) / N. OPENBLAS_NUM_THREADS=1: idle BLAS threads otherwise add noise. Leaves without writing
a snapshot.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True, help="the dense_speed.py --dir")
    ap.add_argument("--tree", type=Path, default=HERE.parent / "python", help="python/ to use")
    ap.add_argument("--n", type=int, default=40, help="recalls per block (at most 500)")
    ap.add_argument("--always", action="store_true", help="then N with lookup_ratio 0")
    ap.add_argument("--corpus", type=int, default=100_000, help="corpus size of the store")
    args = ap.parse_args()
    sys.path.insert(0, str(args.tree))
    from corpus_cache import load_corpus
    from memwire import Memory

    generic = [q.text for q in load_corpus(args.corpus).queries_of("generic")]
    queries, warm = generic[: args.n], generic[39]
    memory = Memory(args.dir / "memory.db", backend="rust")
    memory.recall("warm up query")
    memory.recall(warm)
    for q in queries:
        memory.recall(q)
    if args.always:
        memory.set_config("default", {"lookup_ratio": 0})
        memory.recall(warm)
        for q in queries:
            memory.recall(q)
    memory._closed = True  # leave without writing a snapshot
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
