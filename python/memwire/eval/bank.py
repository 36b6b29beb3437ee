"""Evaluate recall on the user's own bank with labelled queries.

The queries file is JSONL, one ``{"query": str, "relevant": [memory id, ...]}`` per line
(``"group"`` optional), so anyone can check memwire on their own memories.
"""

from __future__ import annotations

import json
from pathlib import Path

from memwire.errors import InvalidInputError
from memwire.eval._common import progress, timed_recall, version
from memwire.eval.metrics import QueryResult, summarize
from memwire.eval.report import Latency, Report, file_sha256
from memwire.memory import Memory

__all__ = ["evaluate_bank"]

KS = (1, 5, 10)


def _load(path: Path) -> list[dict[str, object]]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                raise InvalidInputError(f"{path.name}:{n}: not valid JSON") from None
            if (
                not isinstance(row, dict)
                or not isinstance(row.get("query"), str)
                or not isinstance(row.get("relevant"), list)
                or not row["relevant"]
            ):
                raise InvalidInputError(
                    f'{path.name}:{n}: expected {{"query": str, "relevant": [id, ...]}}'
                )
            rows.append(row)
    if not rows:
        raise InvalidInputError(f"{path.name} holds no queries")
    return rows


def evaluate_bank(
    queries: str | Path,
    *,
    bank: str = "default",
    db: str | Path | None = None,
    backend: str | None = None,
    show_progress: bool | None = None,
) -> Report:
    """Recall each labelled query against ``bank`` of the store at ``db`` (default store)."""
    path = Path(queries)
    rows = _load(path)
    latency = Latency()
    results = []
    with Memory(db, backend=backend) as memory:
        for row in progress(rows, len(rows), "bank", show_progress):
            hits = timed_recall(memory, latency, str(row["query"]), bank=bank, limit=max(KS))
            gold = {str(x): 1 for x in row["relevant"]}  # type: ignore[attr-defined]
            results.append(
                QueryResult(
                    ranked=[h.id for h in hits], gold=gold, group=str(row.get("group", "all"))
                )
            )
        backend_used = memory.backend
    return Report(
        benchmark=f"bank {bank}",
        data=str(path),
        data_sha256=file_sha256(path),
        memwire_version=version(),
        backend=backend_used,
        config={"bank": bank, "limit": max(KS)},
        rules={"labelled": summarize(results, KS)},
        latency=latency,
    )
