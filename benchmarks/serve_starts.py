"""Start-up of ``memwire serve`` from several source trees, alternately, on the same machine.

    python benchmarks/serve_starts.py [--starts 9] TREE [TREE ...]

Each TREE is a checkout (its ``python/`` goes on PYTHONPATH). Every round starts the empty
server of each tree once, on a fresh SQLite store, with ``serve_bench.start_server``, and
records its seconds to the first ``ok`` on ``/health``, the CPU it had used by then and its
resident size 2 s later (the idle RSS of issue 18). Each tree gets its own bytecode cache,
filled by one discarded start, as an installed package has. Prints one line per start and the
medians; nothing here asserts.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _serve_bench() -> Any:
    spec = importlib.util.spec_from_file_location("serve_bench", HERE / "serve_bench.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", type=Path, help="checkouts to compare")
    ap.add_argument("--starts", type=int, default=9, help="starts of each tree")
    ap.add_argument("--idle-seconds", type=float, default=2.0)
    args = ap.parse_args()
    bench = _serve_bench()
    results: dict[Path, list[tuple[float, float, float]]] = {tree: [] for tree in args.trees}
    with tempfile.TemporaryDirectory(prefix="mw-starts-") as tmp:
        envs = {}
        for number, tree in enumerate(args.trees):
            env = dict(os.environ)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPATH"] = str(tree.resolve() / "python")
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / f"pycache-{number}")
            envs[tree] = env
            bench.stop(bench.start_server(Path(tmp) / f"warm-{number}.db", env)[0])
        for start in range(args.starts):
            for number, tree in enumerate(args.trees):
                db = Path(tmp) / f"{number}-{start}.db"
                process, _port, wall = bench.start_server(db, envs[tree])
                cpu = bench.cpu_seconds(process.pid)
                time.sleep(args.idle_seconds)
                rss = bench.rss_mib(process.pid)
                bench.stop(process)
                results[tree].append((wall, cpu, rss))
                print(
                    f"{tree}: first_health_s {wall:.3f} first_health_cpu_s {cpu:.2f} "
                    f"idle_rss_mib {rss:.1f} (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    for tree, runs in results.items():
        walls, cpus, rsses = zip(*runs, strict=True)
        print(
            f"{tree}: medians of {len(runs)}: first_health_s {statistics.median(walls):.3f} "
            f"(min {min(walls):.3f}), first_health_cpu_s {statistics.median(cpus):.3f}, "
            f"idle_rss_mib {statistics.median(rsses):.1f}"
        )


if __name__ == "__main__":
    main()
