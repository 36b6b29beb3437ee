"""``memwire eval``: retrieval quality on public benchmarks or on your own bank.

Each run prints a Markdown report (``--json`` for JSON) that states the memwire version,
backend, configuration and data hash; ``--out FILE.md|FILE.json`` also writes it to a file.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memwire.cli._common import EXIT_OK, EXIT_USAGE, CommandError, add_common, db_path, status
from memwire.config import DEFAULT_FUSION_WEIGHTS

__all__ = ["register"]

_DEFAULT_WEIGHTS = ",".join(f"{w:g}" for w in DEFAULT_FUSION_WEIGHTS)


def _weights(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected three numbers like {_DEFAULT_WEIGHTS}"
        ) from None
    if len(values) != 3:
        raise argparse.ArgumentTypeError("expected three numbers: bm25,overlap,dense")
    return values


def _add_run_options(p: argparse.ArgumentParser, *, weights: bool = True) -> None:
    if weights:
        p.add_argument(
            "--weights",
            type=_weights,
            default=None,
            metavar="BM25,OVERLAP,DENSE",
            help="fusion weights of the evaluation banks (default: the bank default, "
            f"{_DEFAULT_WEIGHTS}); 1,0,0 measures BM25 alone",
        )
        p.add_argument(
            "--embedder",
            choices=("static", "minilm"),
            default="static",
            help="embedder of the evaluation banks: the bundled static one (default) or "
            "all-MiniLM-L6-v2 from the [embed] extra (docs/dense.md)",
        )
        p.add_argument(
            "--min-score",
            type=float,
            default=None,
            metavar="SCORE",
            help="relevance floor of the evaluation banks, 0 to 1 (default: the bank default; "
            "0 keeps every hit)",
        )
        p.add_argument(
            "--near-duplicate",
            type=float,
            default=None,
            metavar="JACCARD",
            help="the banks' pack threshold, 0 to 1: one hit per family of near-duplicates "
            "(default: the bank default; 0 turns the pack off)",
        )
        p.add_argument(
            "--prefer-newest",
            choices=("on", "off"),
            default=None,
            help="serve each family of near-duplicates by its newest memory (default: the "
            "bank default)",
        )
    p.add_argument(
        "--backend",
        choices=("rust", "python"),
        default=None,
        help="kernel to evaluate (default: the one MEMWIRE_BACKEND selects)",
    )
    p.add_argument("--out", type=Path, default=None, help="also write the report (.md or .json)")
    p.add_argument("--no-progress", action="store_true", help="never show the progress line")
    add_common(p)


def _add_window(p: argparse.ArgumentParser, unit: str, before: int, after: int) -> None:
    """``--context-turns`` / ``--context-after``: the window ``Memory.retain_conversation``
    stores each {unit} with."""
    p.add_argument(
        "--context-turns",
        type=int,
        default=before,
        metavar="N",
        help=f"store each {unit} with the N {unit}s before it (same session) as context, "
        f"through Memory.retain_conversation (default: {before})",
    )
    p.add_argument(
        "--context-after",
        type=int,
        default=after,
        metavar="N",
        help=f"and with the N {unit}s after it (default: {after}); --context-turns 0 "
        f"--context-after 0 stores {unit}s alone",
    )


def register(commands: Any) -> None:
    p = commands.add_parser(
        "eval",
        help="measure retrieval quality (LoCoMo, LongMemEval, BEIR, BEAM, your own bank)",
        description="Measure recall on a public benchmark file or on your own labelled queries.",
    )
    runs = p.add_subparsers(dest="benchmark", metavar="BENCHMARK")
    p.set_defaults(run=lambda args: _usage(p))

    s = runs.add_parser(
        "locomo",
        help="LoCoMo conversations: one memory per turn, strict and served hit rules",
        description="One bank per conversation, one memory per dialogue turn, categories 1-4.",
    )
    s.add_argument("--data", type=Path, required=True, help="LoCoMo JSON (locomo10.json format)")
    s.add_argument("--limit", type=int, default=20, help="hits recalled per question (max 100)")
    _add_window(s, "turn", 2, 1)
    _add_run_options(s)
    s.set_defaults(run=run_locomo)

    s = runs.add_parser(
        "longmemeval",
        help="LongMemEval S/M: fresh bank per question",
        description="Session- or turn-level retrieval, the protocol published for LongMemEval.",
    )
    s.add_argument("--data", type=Path, required=True, help="LongMemEval JSON file")
    s.add_argument("--granularity", choices=("session", "turn"), default="session")
    _add_run_options(s)
    s.set_defaults(run=run_longmemeval)

    s = runs.add_parser(
        "beir",
        help="a BEIR folder (corpus.jsonl, queries.jsonl, qrels/): nDCG@10, R@100",
        description="Index the corpus into one bank and score every query of the qrels split.",
    )
    s.add_argument("--data", type=Path, required=True, help="the BEIR dataset folder")
    s.add_argument("--split", default="test", help="qrels split (default: test)")
    _add_run_options(s)
    s.set_defaults(run=run_beir)

    s = runs.add_parser(
        "beam",
        help="BEAM chats (a folder of <n>/chat.json): one memory per message",
        description="One bank per conversation, one memory per message; every probing "
        "question with gold message ids is a query.",
    )
    s.add_argument("--data", type=Path, required=True, help="the BEAM folder (e.g. beam_100k)")
    s.add_argument("--limit", type=int, default=20, help="hits recalled per question (max 100)")
    _add_window(s, "message", 0, 0)
    _add_run_options(s)
    s.set_defaults(run=run_beam)

    s = runs.add_parser(
        "bank",
        help="your bank against labelled queries",
        description='Recall each line of a JSONL file {"query": ..., "relevant": [ids]} '
        "against a bank of the store.",
    )
    s.add_argument("--queries", type=Path, required=True, help="labelled queries (JSONL)")
    s.add_argument("--bank", "-b", default="default", help="the bank (default: default)")
    _add_run_options(s, weights=False)
    s.set_defaults(run=run_bank)


def _on(value: str | None) -> bool | None:
    return None if value is None else value == "on"


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return EXIT_USAGE


def _existing(path: Path, what: str) -> Path:
    if not path.exists():
        raise CommandError(f"no such {what}: {path}", EXIT_USAGE)
    return path


def _finish(args: argparse.Namespace, report: Any) -> int:
    if args.out is not None:
        report.write(args.out)
        status(f"report written to {args.out}")
    print(report.to_json() if getattr(args, "json", False) else report.to_markdown(), end="")
    return EXIT_OK


def _embedder(args: argparse.Namespace) -> Any:
    """None for the bundled static embedder, else the [embed] tier's MiniLM (clear error when
    the extra is not installed)."""
    if getattr(args, "embedder", "static") != "minilm":
        return None
    from memwire.embed.minilm import EmbedExtraMissing, minilm_embedder

    try:
        return minilm_embedder()
    except EmbedExtraMissing as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None


def _show(args: argparse.Namespace) -> bool | None:
    return False if args.no_progress else None


def run_locomo(args: argparse.Namespace) -> int:
    from memwire.eval import evaluate_locomo

    data = _existing(args.data, "file")
    report = evaluate_locomo(
        data,
        backend=args.backend,
        embedder=_embedder(args),
        weights=args.weights,
        limit=args.limit,
        context_turns=args.context_turns,
        context_after=args.context_after,
        min_score=args.min_score,
        near_duplicate=args.near_duplicate,
        prefer_newest=_on(args.prefer_newest),
        show_progress=_show(args),
    )
    return _finish(args, report)


def run_longmemeval(args: argparse.Namespace) -> int:
    from memwire.eval import evaluate_longmemeval

    data = _existing(args.data, "file")
    report = evaluate_longmemeval(
        data,
        granularity=args.granularity,
        backend=args.backend,
        embedder=_embedder(args),
        weights=args.weights,
        min_score=args.min_score,
        near_duplicate=args.near_duplicate,
        prefer_newest=_on(args.prefer_newest),
        show_progress=_show(args),
    )
    return _finish(args, report)


def run_beir(args: argparse.Namespace) -> int:
    from memwire.eval import evaluate_beir

    data = _existing(args.data, "folder")
    report = evaluate_beir(
        data,
        split=args.split,
        backend=args.backend,
        embedder=_embedder(args),
        weights=args.weights,
        min_score=args.min_score,
        near_duplicate=args.near_duplicate,
        prefer_newest=_on(args.prefer_newest),
        show_progress=_show(args),
    )
    return _finish(args, report)


def run_beam(args: argparse.Namespace) -> int:
    from memwire.eval import evaluate_beam

    data = _existing(args.data, "folder")
    report = evaluate_beam(
        data,
        backend=args.backend,
        embedder=_embedder(args),
        weights=args.weights,
        limit=args.limit,
        min_score=args.min_score,
        near_duplicate=args.near_duplicate,
        prefer_newest=_on(args.prefer_newest),
        context_turns=args.context_turns,
        context_after=args.context_after,
        show_progress=_show(args),
    )
    return _finish(args, report)


def run_bank(args: argparse.Namespace) -> int:
    from memwire.eval import evaluate_bank

    queries = _existing(args.queries, "file")
    report = evaluate_bank(
        queries,
        bank=args.bank,
        db=db_path(args),
        backend=args.backend,
        show_progress=_show(args),
    )
    return _finish(args, report)
