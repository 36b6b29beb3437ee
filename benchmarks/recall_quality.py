"""Recall quality beyond the public benchmarks: paraphrases, needles and "nothing relevant".

    python benchmarks/recall_quality.py [--weights 1,0.5,0.3] [--min-score X] [--backend rust]

Three measurements, all on development data (issue 12):

- **paraphrase**: the 40 notes of ``paraphrase_dev.jsonl`` hidden among the 2,000 distractor
  notes of ``corpus.py --n 2000 --seed 5``; each note is queried with words it mostly does not
  contain; hit@1 and hit@5 count the queries whose note is in the top 1 / 5.
- **needles**: the 200 needle queries of that corpus (a rare identifier plus a few of its
  document's words); hit@1.
- **nothing relevant**: queries about topics absent from the bank, where the right answer is
  no hit at all: (a) the 40 paraphrase queries against the 2,000 distractors alone, (b) the
  first 200 SciFact *train* claims (distinct, in qrels order) against each LoCoMo dev
  conversation (ingested as ``memwire eval locomo`` does: ``Memory.retain_conversation``, two
  turns before and one after as context): scientific claims asked of chats, the default
  floor's calibration set; (c) with ``--scifact-bank``, every third LoCoMo dev question
  (categories 1-4) asked of a bank of the 5,183 SciFact abstracts.
  Reported: the share of queries that return nothing under ``--min-score`` (default: the
  bank's floor), and the distribution of the top hit's score, to calibrate a floor.

Shared data is read from ``$MEMWIRE_SHARED/bench/data`` (default ``../shared/bench/data``);
the distractor corpus is generated (and cached) by ``benchmarks/corpus_cache.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from memwire.eval.locomo import CATEGORIES, _turns
from memwire.memory import Memory

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus_cache import ensure_corpus  # noqa: E402


def _data_dir() -> Path:
    shared = os.environ.get("MEMWIRE_SHARED")
    return (Path(shared) if shared else ROOT.parent / "shared") / "bench" / "data"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _quantiles(values: list[float]) -> str:
    if not values:
        return "n/a"
    v = sorted(values)
    pick = [v[int(q * (len(v) - 1))] for q in (0.0, 0.5, 0.9, 0.99, 1.0)]
    return "min {:.4f} p50 {:.4f} p90 {:.4f} p99 {:.4f} max {:.4f}".format(*pick)


def scifact_train_claims(data: Path, n: int = 200) -> list[str]:
    """The first ``n`` distinct SciFact train claims, in qrels order: the "nothing relevant"
    queries asked of the LoCoMo dev conversations."""
    claims = {str(q["_id"]): str(q["text"]) for q in _jsonl(data / "scifact/queries.jsonl")}
    train: list[str] = []
    with open(data / "scifact/qrels/train.tsv", encoding="utf-8") as fh:
        next(fh)
        for line in fh:
            qid = line.split("\t")[0]
            if qid in claims and claims[qid] not in train:
                train.append(claims[qid])
    return train[:n]


def _recall(memory: Memory, query: str, bank: str, limit: int, floor: float | None) -> list[Any]:
    return memory.recall(query, bank=bank, limit=limit, min_score=floor)


def dev_sets() -> tuple[Path, list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """The data folder, the paraphrase pairs, the 2,000 distractors and their needle queries."""
    data = _data_dir()
    pairs = _jsonl(data / "paraphrase_dev.jsonl")
    corpus = ensure_corpus(2000, 5)
    distractors = [str(d["text"]) for d in _jsonl(corpus / "docs.jsonl")]
    needles = [q for q in _jsonl(corpus / "queries.jsonl") if q["kind"] == "needle"]
    return data, pairs, distractors, needles


def embedder_named(name: str) -> Any:
    """``--embedder``'s embedder: None for the bundled default, else the [embed] tier's."""
    if name != "minilm":
        return None
    from memwire.embed.minilm import minilm_embedder

    return minilm_embedder()


def run(args: argparse.Namespace) -> dict[str, Any]:
    data, pairs, distractors, needles = dev_sets()
    embedder = embedder_named(args.embedder)
    out: dict[str, Any] = {}
    with Memory(":memory:", backend=args.backend, embedder=embedder) as memory:
        cfg = {"fusion_weights": args.weights} if args.weights else {}
        for bank in ("para", "empty", "needle"):
            if cfg:
                memory.set_config(bank, cfg)
        ids = memory.retain_many([{"content": p["note"]} for p in pairs], bank="para")
        memory.retain_many(distractors, bank="para")
        memory.retain_many(distractors, bank="empty")
        needle_ids = memory.retain_many(distractors, bank="needle")
        hit1 = hit5 = 0
        for pair, want in zip(pairs, ids, strict=True):
            got = [h.id for h in _recall(memory, pair["query"], "para", 5, args.min_score)]
            hit1 += got[:1] == [want]
            hit5 += want in got
        out["paraphrase"] = {"n": len(pairs), "hit@1": hit1, "hit@5": hit5}
        n1 = 0
        for q in needles:
            got = [h.id for h in _recall(memory, q["text"], "needle", 1, args.min_score)]
            n1 += got == [needle_ids[q["gold"][0]]]
        out["needles"] = {"n": len(needles), "hit@1": n1 / len(needles)}
        empty, tops = 0, []
        for pair in pairs:
            hits = _recall(memory, pair["query"], "empty", 5, args.min_score)
            empty += not hits
            top = _recall(memory, pair["query"], "empty", 1, 0.0)
            tops.append(top[0].score if top else 0.0)
        out["nothing_relevant_distractors"] = {
            "n": len(pairs),
            "no_hit": empty / len(pairs),
            "top_score": _quantiles(tops),
        }
        train = scifact_train_claims(data)
        conversations = json.loads((data / "locomo_dev.json").read_text(encoding="utf-8"))
        empty, tops, total = 0, [], 0
        questions: list[str] = []
        for i, conv in enumerate(conversations):
            bank = f"locomo{i}"
            if cfg:
                memory.set_config(bank, cfg)
            turns = _turns(conv["conversation"])
            # Ingested as `memwire eval locomo` does (retain_conversation, 2 before, 1 after).
            memory.retain_conversation([t.turn for t in turns], bank=bank, before=2, after=1)
            questions += [q["question"] for q in conv["qa"] if q.get("category") in CATEGORIES]
            for claim in train:
                total += 1
                hits = _recall(memory, claim, bank, 5, args.min_score)
                empty += not hits
                top = _recall(memory, claim, bank, 1, 0.0)
                tops.append(top[0].score if top else 0.0)
        out["nothing_relevant_scifact_on_locomo"] = {
            "n": total,
            "no_hit": empty / total,
            "top_score": _quantiles(tops),
        }
        if args.scifact_bank:
            # (c) every third LoCoMo dev question asked of the SciFact abstracts (one bank).
            if cfg:
                memory.set_config("scifact", cfg)
            abstracts = _jsonl(data / "scifact/corpus.jsonl")
            memory.retain_many(
                [f"{d.get('title') or ''}\n{d['text']}".strip() for d in abstracts], bank="scifact"
            )
            empty, tops = 0, []
            asked = questions[::3]
            for q in asked:
                empty += not _recall(memory, q, "scifact", 5, args.min_score)
                top = _recall(memory, q, "scifact", 1, 0.0)
                tops.append(top[0].score if top else 0.0)
            out["nothing_relevant_locomo_on_scifact"] = {
                "n": len(asked),
                "no_hit": empty / len(asked),
                "top_score": _quantiles(tops),
            }
        out["backend"] = memory.backend
    out["weights"] = args.weights or "default"
    out["min_score"] = args.min_score if args.min_score is not None else "bank default"
    out["embedder"] = args.embedder
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--weights", type=lambda s: [float(x) for x in s.split(",")], default=None)
    p.add_argument("--min-score", type=float, default=None)
    p.add_argument("--backend", choices=("rust", "python"), default=None)
    p.add_argument("--embedder", choices=("static", "minilm"), default="static")
    p.add_argument(
        "--scifact-bank",
        action="store_true",
        help="also ask LoCoMo dev questions of a bank of the SciFact abstracts (slow with minilm)",
    )
    result = run(p.parse_args())
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
