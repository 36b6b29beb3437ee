"""The benchmark corpus, generated once by ../shared/bench/corpus.py and cached outside the repo.

    python benchmarks/corpus_cache.py --n 100000 [--seed 7]      # generate (if missing), print dir

Every memwire speed figure (asv_bench/, benchmarks/kernel_speed.py, and later the harness that
runs memwire beside tantivy, bm25s, SQLite FTS5...) reads the same corpus through this module,
so every number is on the same documents and queries. Nothing generated here goes into the
repository.

- The generator is ``corpus.py`` in the shared benchmark directory: ``$MEMWIRE_SHARED/bench``
  when ``MEMWIRE_SHARED`` is set, else ``../shared/bench`` relative to the repository root. It
  needs the PyPI package ``wordfreq``.
- The cache is ``$MEMWIRE_BENCH_CACHE/n{N}-s{SEED}`` when ``MEMWIRE_BENCH_CACHE`` is set, else
  ``~/.cache/memwire/bench/n{N}-s{SEED}``. A directory counts as complete only once its
  ``meta.json`` exists (the generator writes it last); generation goes to a temporary sibling
  that is renamed into place, so concurrent or interrupted runs never leave a half corpus.

asv_bench/ imports this file by path (its own package is also called ``benchmarks``), and other
harnesses may too: keep it dependency-free (stdlib only).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "DEFAULT_SEED",
    "Corpus",
    "CorpusError",
    "Query",
    "cache_dir",
    "ensure_corpus",
    "generator_path",
    "load_corpus",
    "repo_root",
]

DEFAULT_SEED = 7
REPO_ROOT = Path(__file__).resolve().parent.parent


class CorpusError(RuntimeError):
    """The corpus cannot be found or generated."""


@dataclass(frozen=True)
class Query:
    qid: str
    kind: str  # "needle" or "generic"
    text: str
    gold: tuple[int, ...]


@dataclass
class Corpus:
    """Documents (ids are 0..n-1, in order) and queries of one generated corpus."""

    path: Path
    ids: list[int]
    texts: list[str]
    queries: list[Query]
    meta: dict[str, object] = field(default_factory=dict)

    @property
    def n(self) -> int:
        return len(self.texts)

    def queries_of(self, kind: str) -> list[Query]:
        return [q for q in self.queries if q.kind == kind]


def repo_root() -> Path:
    return REPO_ROOT


def generator_path() -> Path:
    """Where ``corpus.py`` is; raises :class:`CorpusError` with the fix when it is missing."""
    shared = os.environ.get("MEMWIRE_SHARED")
    base = Path(shared).expanduser() if shared else REPO_ROOT.parent / "shared"
    path = base / "bench" / "corpus.py"
    if not path.is_file():
        how = "MEMWIRE_SHARED" if shared else "the default ../shared (relative to the repo root)"
        raise CorpusError(
            f"corpus generator not found at {path} (from {how}); set MEMWIRE_SHARED to the "
            "directory that holds bench/corpus.py"
        )
    return path


def cache_dir(n: int, seed: int = DEFAULT_SEED) -> Path:
    root = os.environ.get("MEMWIRE_BENCH_CACHE")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "memwire" / "bench"
    return base / f"n{n}-s{seed}"


def ensure_corpus(n: int, seed: int = DEFAULT_SEED, *, quiet: bool = True) -> Path:
    """The cache directory of corpus ``(n, seed)``, generating it first when absent."""
    out = cache_dir(n, seed)
    if (out / "meta.json").is_file():
        return out
    gen = generator_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        proc = subprocess.run(
            [sys.executable, str(gen), "--n", str(n), "--seed", str(seed), "--out", str(tmp)],
            capture_output=True,
            text=True,
            check=False,
        )
        if proc.returncode != 0:
            raise CorpusError(
                f"{gen} failed (exit {proc.returncode}); it needs `pip install wordfreq`:\n"
                f"{proc.stderr.strip() or proc.stdout.strip()}"
            )
        if not quiet:
            sys.stderr.write(proc.stderr)
        try:
            tmp.rename(out)
        except OSError:  # another process finished first
            if not (out / "meta.json").is_file():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def load_corpus(n: int, seed: int = DEFAULT_SEED, *, nfkc: bool = False) -> Corpus:
    """Load corpus ``(n, seed)``, generating it first when it is not cached.

    ``nfkc=True`` NFKC-normalises documents and queries, as memwire's Python shell does before
    the kernel sees any text (docs/parity.md): use it when calling the kernel directly, and
    leave it off when feeding ``Memory`` or another engine, which get the raw text.
    """
    path = ensure_corpus(n, seed)
    ids: list[int] = []
    texts: list[str] = []
    with open(path / "docs.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            ids.append(int(row["id"]))
            texts.append(row["text"])
    queries: list[Query] = []
    with open(path / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            queries.append(Query(row["qid"], row["kind"], row["text"], tuple(row["gold"])))
    meta = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    if nfkc:
        texts = [unicodedata.normalize("NFKC", t) for t in texts]
        queries = [
            Query(q.qid, q.kind, unicodedata.normalize("NFKC", q.text), q.gold) for q in queries
        ]
    return Corpus(path, ids, texts, queries, meta)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate (if needed) and locate a bench corpus.")
    ap.add_argument("--n", type=int, action="append", required=True, help="docs (repeatable)")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    a = ap.parse_args(argv)
    try:
        for n in a.n:
            print(ensure_corpus(n, a.seed, quiet=False))
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
