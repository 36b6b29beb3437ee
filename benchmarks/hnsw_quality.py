"""How often the HNSW proposals give the exact dense top 10, by the graph's scalar type.

    python benchmarks/hnsw_quality.py [--n 100000] [--scalars f32 f16] [--backend rust]
    python benchmarks/hnsw_quality.py --scifact ../shared/bench/data/scifact   # real text
    python benchmarks/hnsw_quality.py --scalars i8 --oversample 1 2 4             # proposals
    python benchmarks/hnsw_quality.py --scalars i8 --expansion 64 128 256         # search width
    python benchmarks/hnsw_quality.py --scalars i8 --binary 1000 2000 4000        # no graph
    python benchmarks/hnsw_quality.py --scalars --signs 4000:1000 5000:1000      # the scan

On the benchmark corpus (corpus_cache.py, NFKC as the shell applies it), every document and
query is embedded with the bundled static embedder. One kernel index holds the vectors; its
dense top 10 with exhaustive search (``_set_dense_exact_max`` above N) is the reference. For
each scalar type a graph is built as both kernels build theirs (usearch, inner product, the
f32 ``q / DENSE_SCALE`` vectors inserted in ascending ordinal order on one thread, the HNSW
settings of native/constants.toml), its ``k * HNSW_OVERSAMPLE`` proposals are re-scored
exactly, and the top 10 is compared with the reference, for ``k`` = 10 (``search_dense(q,
10)``) and ``k`` = 100 (the stream depth inside ``recall``); ``--oversample`` compares other
factors than the contract's, ``--expansion`` other search widths (each row adds the median
time of one graph search, single thread). The graph of the scalar type the kernel uses is
checked against the kernel's own graph: same top 10 on every query.

Above ``DENSE_EXACT_MAX`` vectors the kernel itself searches by its sign scan (contract 8,
docs/parity.md, "Dense stream"): a row for it is printed first, with the contract's
``DENSE_SIGN_CANDIDATES:DENSE_SIGN_RESCORED`` and every ``--signs C1:C2`` given, each at ``k`` =
10 and 100, with the median time of the kernel's ``search_dense`` (this backend, one thread).
``--scalars`` with no value skips the graphs.

``--binary C [C ...]`` adds the one-stage scan of session 16 (numpy, for comparison): every
vector's sign bits (one bit per dimension, 32 bytes at dim 256), the ``C`` nearest to
the query's bits by Hamming distance (an exhaustive scan, numpy's ``bitwise_count``), then those
re-scored exactly; the top 10 and the top 100 against the exact ones. Its time here is numpy's
and says nothing of a compiled scan.

``--scifact DIR`` swaps the generated corpus for real text: the sentences of the BEIR SciFact
abstracts (read from DIR, never copied; ~45k sentences) as documents and its claims as
queries. The generated corpus is word soup drawn by frequency: its documents' static vectors
sit close together (mean pairwise cosine ~0.56 against ~0.34 for the SciFact sentences), a hard
case for any graph index.

One run, wall clock for the builds (indicative)."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import statistics
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

import corpus_cache  # noqa: E402
from memwire._kernel.backend import load_kernel  # noqa: E402
from memwire._kernel.pure import _generated as contract  # noqa: E402
from memwire.embed import encode  # noqa: E402
from memwire.embed.static import default_embedder  # noqa: E402

Top = list[int]


def top10(ords: npt.NDArray[np.uint64], dots: npt.NDArray[np.int64]) -> Top:
    """Best 10 by exact dot product, ties by ascending ordinal (the kernels' order)."""
    return top_k(ords, dots, 10)


def binary_prefilter(
    ords: npt.NDArray[np.uint64],
    wide: npt.NDArray[np.int64],
    qmat: npt.NDArray[np.int64],
    exact: list[Top],
    sizes: list[int],
) -> None:
    """Print how often the ``C`` vectors nearest by the Hamming distance of their sign bits,
    re-scored exactly, hold the exact top 10 (and top 100), for each ``C`` in ``sizes``."""
    bits = np.packbits(wide > 0, axis=1).view(np.uint64)
    qbits = np.packbits(qmat > 0, axis=1).view(np.uint64)
    exact100 = [set(top_k(ords, wide @ q, 100)) for q in qmat]
    for size in sizes:
        same, overlap, overlap100, times = 0, 0, 0, []
        for q, qb, want, want100 in zip(qmat, qbits, exact, exact100, strict=True):
            t = time.perf_counter()
            cands = np.argpartition(np.bitwise_count(bits ^ qb).sum(axis=1), size)[:size]
            times.append(time.perf_counter() - t)
            best = top_k(ords[cands], wide[cands] @ q, 100)  # re-scored once, both depths read
            got = best[:10]
            same += got == want
            overlap += len(set(got) & set(want))
            overlap100 += len(set(best) & want100)
        print(
            f"sign bits, {size} candidates re-scored: top 10 exact on {same}/{len(exact)} "
            f"({same / len(exact):.1%}), recall@10 {overlap / (10 * len(exact)):.4f}, "
            f"recall@100 {overlap100 / (100 * len(exact)):.4f}, "
            f"numpy scan p50 {statistics.median(times) * 1e6:.0f} us",
            flush=True,
        )


def kernel_signs(index: Any, queries: list[bytes], exact: list[Top], extra: list[str]) -> None:
    """Print how often the kernel's sign scan (the contract's counts, then each ``C1:C2`` of
    ``extra``) gives the exact top 10, asked for 10 and for 100 (recall's depth)."""
    configs = [(contract.DENSE_SIGN_CANDIDATES, contract.DENSE_SIGN_RESCORED)]
    configs += [(int(a), int(b)) for a, b in (c.split(":") for c in extra)]
    for c1, c2 in configs:
        index._set_dense_tiers(contract.DENSE_EXACT_MAX, contract.DENSE_GRAPH_MIN, c1, c2)
        for k in (10, 100):
            same, overlap, times = 0, 0, []
            for q, want in zip(queries, exact, strict=True):
                t = time.perf_counter()
                got = [o for o, _ in index.search_dense(q, k)][:10]
                times.append(time.perf_counter() - t)
                same += got == want
                overlap += len(set(got) & set(want))
            print(
                f"kernel sign scan {c1}:{c2}, k={k}: top 10 exact on {same}/{len(exact)} "
                f"({same / len(exact):.1%}), recall@10 {overlap / (10 * len(exact)):.4f}, "
                f"search_dense p50 {statistics.median(times) * 1e6:.0f} us",
                flush=True,
            )
    index._set_dense_exact_max(contract.DENSE_EXACT_MAX)


def top_k(ords: npt.NDArray[np.uint64], dots: npt.NDArray[np.int64], k: int) -> Top:
    """Best ``k`` by exact dot product, ties by ascending ordinal."""
    return [int(ords[i]) for i in np.lexsort((ords, -dots))[:k]]


def scifact_texts(folder: Path) -> tuple[list[str], list[str]]:
    """(sentences of the SciFact abstracts, claims), NFKC as the shell applies it."""
    nfkc = lambda t: unicodedata.normalize("NFKC", t)  # noqa: E731
    sentences: list[str] = []
    with open(folder / "corpus.jsonl", encoding="utf-8") as lines:
        for line in lines:
            for sentence in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]):
                if len(sentence) > 20:
                    sentences.append(nfkc(sentence))
    with open(folder / "queries.jsonl", encoding="utf-8") as lines:
        claims = [nfkc(json.loads(line)["text"]) for line in lines]
    return sentences, claims


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--scalars", nargs="*", default=["f32", "f16"])
    ap.add_argument("--backend", default="rust")
    ap.add_argument("--scifact", type=Path, default=None, help="real text: a BEIR SciFact folder")
    ap.add_argument(
        "--oversample",
        nargs="+",
        type=int,
        default=[contract.HNSW_OVERSAMPLE],
        help="proposals per wanted vector (default: the contract's HNSW_OVERSAMPLE)",
    )
    ap.add_argument(
        "--expansion",
        nargs="+",
        type=int,
        default=[contract.HNSW_EXPANSION_SEARCH],
        help="search widths to compare (default: the contract's HNSW_EXPANSION_SEARCH)",
    )
    ap.add_argument(
        "--binary",
        nargs="+",
        type=int,
        default=[],
        help="also compare a sign-bit Hamming prefilter of C candidates, re-scored exactly",
    )
    ap.add_argument(
        "--signs",
        nargs="+",
        default=[],
        metavar="C1:C2",
        help="also time the kernel's sign scan with these candidate counts",
    )
    args = ap.parse_args()
    from usearch.index import Index

    if args.scifact is not None:
        texts, query_texts = scifact_texts(args.scifact)
    else:
        corpus = corpus_cache.load_corpus(args.n, nfkc=True)
        texts, query_texts = corpus.texts, [q.text for q in corpus.queries]
    kernel = load_kernel(args.backend)
    embedder = default_embedder(args.backend)
    space = (embedder.id, embedder.dim)
    t = time.perf_counter()
    docs = encode(embedder, space, texts)
    queries = [v for v in encode(embedder, space, query_texts) if v]
    print(
        f"embedded {len(docs):,} documents, {len(queries)} queries: {time.perf_counter() - t:.1f} s"
    )
    index = kernel.BankIndex(embedder.dim)
    index.add_many(list(range(len(docs))), [""] * len(docs), docs)
    have = [o for o, v in enumerate(docs) if v]
    ords = np.array(have, dtype=np.uint64)
    mat = np.stack([np.frombuffer(docs[o] or b"", dtype="<i2") for o in have])
    wide = mat.astype(np.int64)
    qmat = np.stack([np.frombuffer(q, dtype="<i2") for q in queries]).astype(np.int64)
    index._set_dense_exact_max(len(docs) + 1)
    exact = [top10(ords, wide @ q) for q in qmat]
    assert all(
        [o for o, _ in index.search_dense(q, 10)] == e
        for q, e in zip(queries[:50], exact, strict=False)
    ), "the reference is the kernel's exact search"
    print(f"{len(have):,} vectors of dim {embedder.dim}; exact reference on {len(queries)} queries")
    sample = wide[:500] @ wide[500:1000].T / float(contract.DENSE_SCALE) ** 2
    print(f"mean pairwise cosine of the documents (500 x 500 sample): {sample.mean():.3f}")

    def dots(top: Top) -> npt.NDArray[np.int64]:
        """The vectors of ``top``, as rows."""
        return wide[np.searchsorted(ords, np.array(top, dtype=np.uint64))]

    if len(docs) > contract.DENSE_EXACT_MAX:
        kernel_signs(index, queries, exact, args.signs)
    if args.binary:
        binary_prefilter(ords, wide, qmat, exact, args.binary)

    kernel_top: list[Top] | None = None
    for scalar in args.scalars:
        graph = Index(
            ndim=embedder.dim,
            metric="ip",
            dtype=scalar,
            connectivity=contract.HNSW_CONNECTIVITY,
            expansion_add=contract.HNSW_EXPANSION_ADD,
            expansion_search=contract.HNSW_EXPANSION_SEARCH,
        )
        t = time.perf_counter()
        graph.add(ords, mat.astype(np.float32) / np.float32(contract.DENSE_SCALE), threads=1)
        built = time.perf_counter() - t
        row = [f"{scalar}: graph {graph.memory_usage / 2**20:.0f} MiB, built in {built:.1f} s"]
        for width, factor in itertools.product(args.expansion, args.oversample):
            graph.expansion_search = width
            for k in (10, 100):
                same, overlap, same_scores = 0, 0, 0
                tops, times = [], []
                for q, want in zip(qmat, exact, strict=True):
                    t = time.perf_counter()
                    found = graph.search(
                        q.astype(np.float32) / np.float32(contract.DENSE_SCALE),
                        k * factor,
                        threads=1,
                    )
                    times.append(time.perf_counter() - t)
                    cands = np.unique(np.asarray(found.keys, dtype=np.uint64))
                    rows = np.searchsorted(ords, cands)
                    got = top10(cands, wide[rows] @ q)
                    tops.append(got)
                    same += got == want
                    # Equal scores: the top 10 differs from the reference only among tied
                    # documents.
                    same_scores += bool(np.array_equal(dots(got) @ q, dots(want) @ q))
                    overlap += len(set(got) & set(want))
                row.append(
                    f"k={k} x {factor}, expansion {width}: top 10 exact on {same}/{len(exact)} "
                    f"({same / len(exact):.1%}), recall@10 {overlap / (10 * len(exact)):.4f}, "
                    f"same 10 scores on {same_scores}/{len(exact)}, "
                    f"search p50 {statistics.median(times) * 1e6:.0f} us"
                )
                mine = (scalar, factor, width) == (
                    contract.HNSW_SCALAR,
                    contract.HNSW_OVERSAMPLE,
                    contract.HNSW_EXPANSION_SEARCH,
                )
                if mine and k == 10:
                    kernel_top = tops
        print("\n  ".join(row), flush=True)
    if kernel_top is not None and len(docs) > contract.DENSE_EXACT_MAX:
        index._set_dense_exact_max(contract.DENSE_EXACT_MAX)
        t = time.perf_counter()
        assert index.build_dense_graph()
        print(f"kernel ({args.backend}) graph built in {time.perf_counter() - t:.1f} s")
        agree = sum(
            [o for o, _ in index.search_dense(q, 10)] == mine
            for q, mine in zip(queries, kernel_top, strict=True)
        )
        times = []
        for q in queries:
            t = time.perf_counter()
            index.search_dense(q, 100)
            times.append(time.perf_counter() - t)
        print(
            f"kernel graph: the same top 10 as the {contract.HNSW_SCALAR} graph here on "
            f"{agree}/{len(queries)} queries; search_dense k=100 p50 "
            f"{statistics.median(times) * 1e6:.0f} us"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
