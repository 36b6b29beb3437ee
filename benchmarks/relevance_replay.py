"""Record recall's kernel rows once, then replay relevance rules over them in seconds.

    python benchmarks/relevance_replay.py record [--embedder minilm] [--scifact train|test ...]
        [--out FILE]
    python benchmarks/relevance_replay.py record --small [--embedder minilm] [--out FILE]
    python benchmarks/relevance_replay.py replay FILE [FILE ...] [--floor X]
        [--calibration COSINE,MARGIN,CROWD[,FEW_COSINE,FEW_MARGIN] ...]

``record`` builds the banks of ``benchmarks/recall_quality.py`` and ``memwire eval locomo``
(development data only, issue 12) and asks every query of:

- **para**: the 40 paraphrase queries of ``paraphrase_dev.jsonl`` against their notes hidden
  among the 2,000 distractors of ``corpus.py --n 2000 --seed 5`` (limit 5; hit@5);
- **needle**: the 200 needle queries of that corpus against the distractors (limit 1; hit@1);
- **empty**: the 40 paraphrase queries against the distractors alone (no hit is right);
- **nothing**: the first 200 distinct SciFact *train* claims against each LoCoMo dev
  conversation (1,200 queries about topics the banks never mention; no hit is right);
- **locomo**: the LoCoMo dev questions (categories 1-4) against their conversation, ingested
  as ``memwire eval locomo`` does (limit 20; strict R@1 / R@10);
- with ``--scifact train`` (the tuning split; ``test`` to report; both in one run encode the
  abstracts once), **scifact_<split>**: its queries against the 5,183 abstracts, as
  ``memwire eval beir`` asks them (limit 100; nDCG@10).

``record --small`` records small banks instead, where the dense stream has fewer neighbours
than the rescue's crowd (:func:`record_small`): paraphrase notes among a few distractors,
the same queries against the distractors alone, SciFact train claims against each LoCoMo dev
session (a bank of 20-50 turns) and the LoCoMo dev questions against their session.

For each recall it keeps what ``Memory._hits`` received (the kernel's rows, best first, how
many were asked for, the dense stream's share, the bank's floor and pack settings, the bank's
embedder id), the terms of every memory those rows name (what the pack compares) and what the
shipped rule served, into one pickle per embedder. ``replay`` re-runs the relevance rule of
``memwire.memory.relevance`` (the shipped one; ``--floor`` and ``--calibration`` replace its
numbers; any candidate function can be given to :func:`evaluate`) then the pack over the
recorded rows, and prints hit@5, the share of silent queries, LoCoMo strict R@1 / R@10 and
needles hit@1; without overrides it also counts the recalls where the shipped rule does not
replay to what recall served when the rows were recorded (0 unless the rule changed since).

Shared data is read from ``$MEMWIRE_SHARED/bench/data`` (default ``../shared/bench/data``);
the distractor corpus is generated (and cached) by ``benchmarks/corpus_cache.py``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memwire._kernel import pack_rule
from memwire.config import MAX_RECALL_TOKENS
from memwire.embed import static
from memwire.eval.locomo import CATEGORIES, _evidence, _turns, evaluate_locomo
from memwire.eval.metrics import QueryResult, summarize
from memwire.memory import Memory, api, relevance
from memwire.memory.conversation import DEFAULT_AFTER, DEFAULT_BEFORE
from memwire.memory.pack import PACK_DEPTH, threshold_fraction
from memwire.memory.relevance import Calibration

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall_quality import _jsonl, dev_sets, embedder_named, scifact_train_claims  # noqa: E402

Row = tuple[int, float, int, int, int]
Member = tuple[pack_rule.Terms, str]  # the pack's view of a memory: its terms, its created_at
Judge = Callable[..., list[Row]]


@dataclass
class Call:
    """One recall: what ``Memory._hits`` received and what it served."""

    kind: str
    bank: str
    rows: list[Row]
    asked: int
    share: float
    count: int
    floor: float
    near: float
    newest: bool
    embedder: str  # the id of the embedder of the bank's vectors ("" without a query vector)
    served: list[int]  # the ordinals of the hits the shipped rule served
    gold: list[str] = field(default_factory=list)  # memory ids (dia ids for locomo)


@dataclass
class Recording:
    embedder: str
    calls: list[Call]
    members: dict[str, dict[int, Member]]  # bank -> ordinal -> the pack's view
    ids: dict[str, dict[int, str]]  # bank -> ordinal -> memory id
    dia: dict[str, dict[str, list[str]]]  # locomo bank -> memory id -> dia ids


class _Recorder:
    """Wraps ``Memory._hits`` to keep each call's inputs and the pack's view of its rows."""

    def __init__(self, memory: Memory, embedder: str) -> None:
        self.memory = memory
        self.embedder = embedder
        self.calls: list[Call] = []
        self.members: dict[str, dict[int, Member]] = {}
        self.ids: dict[str, dict[int, str]] = {}
        self.bank = ""
        self.kind = ""
        original = Memory._hits
        recorder = self

        def hits(self_: Memory, rows: list[Row], asked: int, dense: tuple[float, str | None],
                 count: int, floor: float | None, cfg: Any, budget: Any, lookup: Any,
                 packing: Any, index: Any) -> Any:  # fmt: skip
            out = original(self_, rows, asked, dense, count, floor, cfg, budget, lookup,
                           packing, index)  # fmt: skip
            recorder._keep(rows, asked, dense, count, floor, cfg, lookup, packing, out)
            return out

        self._original = original
        Memory._hits = hits  # type: ignore[method-assign]

    def close(self) -> None:
        Memory._hits = self._original  # type: ignore[method-assign]

    def _keep(self, rows: list[Row], asked: int, dense: tuple[float, str | None], count: int,
              floor: float | None, cfg: Any, lookup: Any, packing: Any,
              out: list[Any]) -> None:  # fmt: skip
        config = api.config
        members = self.members.setdefault(self.bank, {})
        ids = self.ids.setdefault(self.bank, {})
        missing = [r[0] for r in rows if r[0] not in members]
        if missing:
            tokenize = self.memory._kernel.tokenize
            for ordinal, stored in lookup(missing).items():
                members[ordinal] = (
                    pack_rule.terms_of(stored.content, tokenize),
                    stored.created_at,
                )
                ids[ordinal] = stored.id
        by_id = {v: k for k, v in ids.items()}
        self.calls.append(
            Call(
                kind=self.kind,
                bank=self.bank,
                rows=list(rows),
                asked=asked,
                share=dense[0],
                count=count,
                floor=config.min_score(cfg) if floor is None else floor,
                near=api._near(packing, cfg),
                newest=packing[1] if packing[1] is not None else config.prefer_newest(cfg),
                embedder=dense[1] or "",
                served=[by_id[h.id] for h in out],
            )
        )


def record(embedder_name: str, backend: str | None, scifact: Sequence[str] = ()) -> Recording:
    data, pairs, distractors, needles = dev_sets()
    chosen = embedder_named(embedder_name)
    # MiniLM: each distinct text encoded once (the banks share the distractors and claims).
    embedder = None if chosen is None else _Cached(chosen)
    defaults = inspect.signature(evaluate_locomo).parameters
    before = defaults["context_turns"].default
    after = defaults["context_after"].default
    limit = defaults["limit"].default
    dia: dict[str, dict[str, list[str]]] = {}
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        rec = _Recorder(memory, embedder.id if embedder is not None else static.MODEL_ID)
        try:
            ids = memory.retain_many([{"content": p["note"]} for p in pairs], bank="para")
            memory.retain_many(distractors, bank="para")
            plain = memory.retain_many(distractors, bank="distractors")
            rec.bank, rec.kind = "para", "para"
            for pair, want in zip(pairs, ids, strict=True):
                memory.recall(pair["query"], bank="para", limit=5)
                rec.calls[-1].gold = [want]
            rec.bank, rec.kind = "distractors", "empty"
            for pair in pairs:
                memory.recall(pair["query"], bank="distractors", limit=5)
            rec.kind = "needle"
            for q in needles:
                memory.recall(q["text"], bank="distractors", limit=1)
                rec.calls[-1].gold = [plain[q["gold"][0]]]
            train = scifact_train_claims(data)
            conversations = json.loads((data / "locomo_dev.json").read_text(encoding="utf-8"))
            for i, conv in enumerate(conversations):
                bank = f"locomo{i}"
                turns = _turns(conv["conversation"])
                dia[bank] = _ingest(memory, turns, bank, before=before, after=after)
                said = {t.dia_id for t in turns}
                rec.bank, rec.kind = bank, "nothing"
                for claim in train:
                    memory.recall(claim, bank=bank, limit=5)
                rec.kind = "locomo"
                for qa in conv["qa"]:
                    if qa.get("category") not in CATEGORIES:
                        continue
                    gold = [g for g in _evidence(qa) if g in said]
                    if not gold:
                        continue
                    memory.recall(qa["question"], bank=bank, limit=limit)
                    rec.calls[-1].gold = gold
            if scifact:
                _record_scifact(memory, rec, data / "scifact", scifact, dia)
        finally:
            rec.close()
    return Recording(rec.embedder, rec.calls, rec.members, rec.ids, dia)


def _ingest(
    memory: Memory,
    turns: Sequence[Any],
    bank: str,
    before: int = DEFAULT_BEFORE,
    after: int = DEFAULT_AFTER,
) -> dict[str, list[str]]:
    """Store ``turns`` through ``retain_conversation``; each memory id's LoCoMo dia_ids (a
    memory holds one turn, or several when turns were merged)."""
    got = memory.retain_conversation([t.turn for t in turns], bank=bank, before=before, after=after)
    by_id: dict[str, list[str]] = {}
    for turn, memory_id in zip(turns, got, strict=True):
        by_id.setdefault(memory_id, []).append(turn.dia_id)
    return by_id


SMALL_SIZES = (5, 10, 20, 40)  # memories per small bank (--small)
SMALL_CLAIMS = 50  # SciFact train claims asked of each LoCoMo session bank (--small)


class _Cached:
    """An embedder that encodes each distinct text once (small banks share their texts)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.id, self.dim = inner, inner.id, inner.dim
        self.seen: dict[str, Any] = {}

    def embed(self, texts: Sequence[str]) -> list[Any]:
        todo = list(dict.fromkeys(t for t in texts if t not in self.seen))
        if todo:
            self.seen.update(zip(todo, self.inner.embed(todo), strict=True))
        return [self.seen[t] for t in texts]


def record_small(embedder_name: str, backend: str | None) -> Recording:
    """Small banks (``SMALL_SIZES``), where few neighbours are dense-only: the kinds
    ``small_para`` (a paraphrase's note among ``size - 1`` distractors drawn from the 2,000,
    limit 5, hit@5), ``small_empty`` (the same query against the same distractors without
    the note), ``small_nothing`` (the first ``SMALL_CLAIMS`` SciFact train claims against each
    LoCoMo dev session, a bank of its own) and ``small_locomo`` (the LoCoMo dev questions whose
    evidence lies in one session, against that session, limit 20)."""
    import random

    data, pairs, distractors, _ = dev_sets()
    chosen = embedder_named(embedder_name)
    embedder = None if chosen is None else _Cached(chosen)  # the bundled table is fast
    dia: dict[str, dict[str, list[str]]] = {}
    with Memory(":memory:", backend=backend, embedder=embedder) as memory:
        rec = _Recorder(memory, static.MODEL_ID if embedder is None else embedder.id)
        try:
            for size in SMALL_SIZES:
                for i, pair in enumerate(pairs):
                    drawn = random.Random(size * 1000 + i).sample(distractors, size - 1)
                    bank = f"sp{size}_{i}"
                    ids = memory.retain_many([pair["note"], *drawn], bank=bank)
                    rec.bank, rec.kind = bank, "small_para"
                    memory.recall(pair["query"], bank=bank, limit=5)
                    rec.calls[-1].gold = [ids[0]]
                    bank = f"se{size}_{i}"
                    memory.retain_many(drawn, bank=bank)
                    rec.bank, rec.kind = bank, "small_empty"
                    memory.recall(pair["query"], bank=bank, limit=5)
            claims = scifact_train_claims(data)[:SMALL_CLAIMS]
            conversations = json.loads((data / "locomo_dev.json").read_text(encoding="utf-8"))
            for c, conv in enumerate(conversations):
                turns = _turns(conv["conversation"])
                sessions: dict[str, list[Any]] = {}
                for t in turns:
                    sessions.setdefault(t.dia_id.split(":")[0], []).append(t)
                for name, group in sessions.items():
                    bank = f"ss{c}_{name}"
                    dia[bank] = _ingest(memory, group, bank)
                    said = {t.dia_id for t in group}
                    rec.bank, rec.kind = bank, "small_nothing"
                    for claim in claims:
                        memory.recall(claim, bank=bank, limit=5)
                    rec.kind = "small_locomo"
                    for qa in conv["qa"]:
                        gold = _evidence(qa)
                        if qa.get("category") not in CATEGORIES or not gold:
                            continue
                        if not set(gold) <= said:
                            continue
                        memory.recall(qa["question"], bank=bank, limit=20)
                        rec.calls[-1].gold = gold
        finally:
            rec.close()
    return Recording(rec.embedder, rec.calls, rec.members, rec.ids, dia)


def _record_scifact(
    memory: Memory,
    rec: _Recorder,
    root: Path,
    splits: Sequence[str],
    dia: dict[str, dict[str, list[str]]],
) -> None:
    """SciFact's queries of each split against its abstracts (one bank), as ``memwire eval
    beir`` asks them; kind ``scifact_<split>``."""
    corpus = _jsonl(root / "corpus.jsonl")
    queries = {str(q["_id"]): str(q["text"]) for q in _jsonl(root / "queries.jsonl")}
    items = [
        {"content": f"{d.get('title') or ''}\n{d['text']}".strip(), "document_id": str(d["_id"])}
        for d in corpus
    ]
    ids = memory.retain_many(items, bank="scifact")
    dia["scifact"] = {i: [str(d["_id"])] for i, d in zip(ids, corpus, strict=True)}
    for split in splits:
        qrels: dict[str, list[str]] = {}
        with open(root / "qrels" / f"{split}.tsv", encoding="utf-8") as fh:
            next(fh)
            for line in fh:
                qid, doc, score = line.rstrip("\n").split("\t")
                if int(score) > 0:
                    qrels.setdefault(qid, []).append(doc)
        rec.bank, rec.kind = "scifact", f"scifact_{split}"
        for qid, gold in qrels.items():
            memory.recall(queries[qid], bank="scifact", limit=100, budget=MAX_RECALL_TOKENS)
            rec.calls[-1].gold = gold


def serve(call: Call, rec: Recording, rule: Judge) -> list[int]:
    """The ordinals ``rule`` then the pack serve for ``call`` (the token budget is not
    replayed: the recorded banks never reach it)."""
    complete = len(call.rows) < call.asked
    rows = rule(call.rows, call.floor, call.share, complete, call.embedder or None)
    depth = call.count * PACK_DEPTH if call.near > 0 else call.count
    rows = rows[:depth]
    if call.near > 0:
        members = rec.members[call.bank]
        rows = [r for r in rows if r[0] in members]
        num, den = threshold_fraction(call.near)
        order = pack_rule.walk(
            len(rows),
            lambda i: members[rows[i][0]][0],
            lambda i: (members[rows[i][0]][1], rows[i][0]),
            call.count,
            num,
            den,
            call.newest,
        )
        rows = [rows[i] for i in order]
    else:
        rows = rows[: call.count]
    return [r[0] for r in rows]


def shipped(rows: Sequence[Row], floor: float, share: float, complete: bool,
            embedder: str | None) -> list[Row]:  # fmt: skip
    return relevance.judge(rows, floor, share, complete, embedder)


def evaluate(rec: Recording, rule: Judge = shipped) -> dict[str, float]:
    """hit@5, silence and LoCoMo strict R@1 / R@10 of ``rule`` over ``rec``."""
    para = hit = empty = nothing = silent_e = silent_n = needles = n1 = 0
    results: list[QueryResult] = []
    beir: dict[str, list[QueryResult]] = {}
    small: dict[str, list[Any]] = {}
    for call in rec.calls:
        got = serve(call, rec, rule)
        if call.kind.startswith("small_"):
            _small(small, call, rec, got)
        elif call.kind == "para":
            para += 1
            hit += any(rec.ids[call.bank].get(o) in call.gold for o in got[:5])
        elif call.kind == "empty":
            empty += 1
            silent_e += not got
        elif call.kind == "nothing":
            nothing += 1
            silent_n += not got
        elif call.kind == "needle":
            needles += 1
            n1 += bool(got) and rec.ids[call.bank].get(got[0]) in call.gold
        else:
            found = _found(call, rec, got)
            if call.kind.startswith("scifact"):
                beir.setdefault(call.kind, []).append(found)
            else:
                results.append(found)
    m = summarize(results, (1, 10)).metrics["all"] if results else {}
    return {
        "para_hit5": hit,
        "para_n": para,
        "nothing_silent": silent_n / nothing if nothing else 0.0,
        "empty_silent": silent_e / empty if empty else 0.0,
        "locomo_r1": m.get("recall_any@1", 0.0),
        "locomo_r10": m.get("recall_any@10", 0.0),
        "needle_hit1": n1 / needles if needles else 0.0,
        **{f"{k}_ndcg10": summarize(v, (10,)).metrics["all"]["ndcg@10"] for k, v in beir.items()},
        **_small_summary(small),
    }


def _found(call: Call, rec: Recording, got: list[int]) -> QueryResult:
    """``got`` (ordinals) as the documents (dia ids) they hold, against ``call``'s gold."""
    ids, dia = rec.ids[call.bank], rec.dia[call.bank]
    ranked = [d for o in got for d in dia.get(ids.get(o, ""), [])]
    return QueryResult(ranked=ranked, gold={g: 1 for g in call.gold})


def _small(small: dict[str, list[Any]], call: Call, rec: Recording, got: list[int]) -> None:
    """Accumulate one small-bank call, per kind (and bank size for the paraphrase banks)."""
    if call.kind == "small_para":
        key = f"small_para{call.bank[2:].split('_')[0]}"
        small.setdefault(key, []).append(any(rec.ids[call.bank].get(o) in call.gold for o in got))
    elif call.kind == "small_empty":
        small.setdefault(f"small_empty{call.bank[2:].split('_')[0]}", []).append(not got)
    elif call.kind == "small_nothing":
        small.setdefault(call.kind, []).append(not got)
    else:
        small.setdefault(call.kind, []).append(_found(call, rec, got))


def _small_summary(small: dict[str, list[Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key in sorted(small):
        got = small[key]
        if key == "small_locomo":
            m = summarize(got, (1, 10)).metrics["all"]
            out["small_locomo_r1"] = m["recall_any@1"]
            out["small_locomo_r10"] = m["recall_any@10"]
        elif key.startswith("small_para"):
            out[f"{key}_hit5"] = sum(got)
        else:
            out[f"{key}_silent"] = sum(got) / len(got)
    return out


def variant(floor: float | None, cal: Calibration | None, embedder: str) -> Judge:
    """The shipped rule with the floor and/or ``embedder``'s calibration replaced."""

    def rule(rows: Sequence[Row], given: float, share: float, complete: bool,
             space: str | None) -> list[Row]:  # fmt: skip
        saved = relevance.CALIBRATION.get(embedder)
        if cal is not None:
            relevance.CALIBRATION[embedder] = cal
        try:
            return relevance.judge(rows, given if floor is None else floor, share, complete, space)
        finally:
            if saved is None:
                relevance.CALIBRATION.pop(embedder, None)
            else:
                relevance.CALIBRATION[embedder] = saved

    return rule


def _calibration(text: str, embedder: str) -> Calibration | None:
    """``--calibration``'s text: 'shipped', 'none', or 3 numbers (the crowd rule; the
    small-bank numbers stay as shipped) or 5 (both)."""
    if text == "shipped":
        return None
    if text == "none":  # no cosine reaches 2: no rescue
        return Calibration(cosine=2.0, margin=0.0, crowd=1.0, few_cosine=2.0, few_margin=0.0)
    numbers = [float(x) for x in text.split(",")]
    if len(numbers) not in (3, 5):
        raise SystemExit(f"--calibration wants 3 or 5 numbers, got {text!r}")
    return Calibration(*numbers, *relevance.calibration(embedder)[len(numbers) :])


def check(rec: Recording) -> int:
    """Calls whose replay of the shipped rule differs from what recall served."""
    return sum(serve(c, rec, shipped) != c.served for c in rec.calls)


def load(path: str | Path) -> Recording:
    with open(path, "rb") as fh:
        out: Recording = pickle.load(fh)  # a file this script wrote
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="build the banks and record every recall's rows")
    r.add_argument("--embedder", choices=("static", "minilm"), default="static")
    r.add_argument("--backend", choices=("rust", "python"), default=None)
    r.add_argument("--out", default=None, help="default: /tmp/relevance_<embedder>.pkl")
    r.add_argument(
        "--scifact",
        choices=("train", "test"),
        action="append",
        default=[],
        help="also SciFact's queries of this split against its 5,183 abstracts (nDCG@10; "
        "repeatable: one bank, encoded once)",
    )
    r.add_argument(
        "--small",
        action="store_true",
        help="record the small banks instead (kinds small_*; see record_small)",
    )
    s = sub.add_parser("replay", help="replay the shipped rule, or variants, over recordings")
    s.add_argument("files", nargs="+")
    s.add_argument("--floor", type=float, default=None, help="replace every call's floor")
    s.add_argument(
        "--calibration",
        action="append",
        default=None,
        metavar="COSINE,MARGIN,CROWD[,FEW_COSINE,FEW_MARGIN]",
        help="replace the recording's embedder's calibration (repeatable: one line each; "
        "'none': no rescue, 'shipped': as shipped; 3 numbers keep the small-bank rule's)",
    )
    args = p.parse_args()
    if args.command == "record":
        start = time.perf_counter()
        if args.small:
            rec = record_small(args.embedder, args.backend)
        else:
            rec = record(args.embedder, args.backend, args.scifact)
        out = args.out or f"/tmp/relevance_{args.embedder}.pkl"
        with open(out, "wb") as fh:
            pickle.dump(rec, fh, protocol=pickle.HIGHEST_PROTOCOL)
        took = time.perf_counter() - start
        print(f"{len(rec.calls)} recalls of {rec.embedder} -> {out} ({took:.0f} s)")
        return 0
    for path in args.files:
        rec = load(path)
        if args.floor is None and args.calibration is None:
            print(json.dumps({"file": path, "embedder": rec.embedder,
                              "replay_differs": check(rec), **evaluate(rec)}))  # fmt: skip
            continue
        for text in args.calibration or ["shipped"]:
            rule = variant(args.floor, _calibration(text, rec.embedder), rec.embedder)
            print(json.dumps({"file": path, "embedder": rec.embedder, "floor": args.floor,
                              "calibration": text, **evaluate(rec, rule)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    # Through the module's own name, so that the pickles name its classes, not __main__'s.
    from relevance_replay import main as _main

    raise SystemExit(_main())
