"""Evaluation reports: what was measured, on what, with which memwire, as Markdown or JSON."""

from __future__ import annotations

import hashlib
import json
import platform
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from memwire.eval.metrics import Summary

__all__ = ["Latency", "Report", "file_sha256"]


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, or of a directory's files in name order (for BEIR folders)."""
    p = Path(path)
    digest = hashlib.sha256()
    files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in files:
        if p.is_dir():
            digest.update(f.relative_to(p).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


@dataclass
class Latency:
    """Wall-clock timings of one evaluation run (seconds)."""

    retain_seconds: float = 0.0
    retained: int = 0
    recall_seconds: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, float]:
        out = {
            "retained": float(self.retained),
            "retain_per_second": self.retained / self.retain_seconds
            if self.retain_seconds
            else 0.0,
        }
        if self.recall_seconds:
            ordered = sorted(self.recall_seconds)
            out["recall_p50_ms"] = 1000 * statistics.median(ordered)
            out["recall_p95_ms"] = 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
        return out


@dataclass
class Report:
    """The outcome of one ``memwire eval`` run."""

    benchmark: str
    data: str
    data_sha256: str
    memwire_version: str
    backend: str
    config: dict[str, Any]
    rules: dict[str, Summary]
    latency: Latency
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark,
            "data": self.data,
            "data_sha256": self.data_sha256,
            "memwire_version": self.memwire_version,
            "backend": self.backend,
            "python": platform.python_version(),
            "config": self.config,
            "results": {rule: asdict(summary) for rule, summary in self.rules.items()},
            "latency": self.latency.as_dict(),
            "notes": self.notes,
        }

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=True)

    def to_markdown(self) -> str:
        lines = [
            f"# memwire eval {self.benchmark}",
            "",
            f"- data: `{self.data}` (sha256 `{self.data_sha256[:16]}…`)",
            f"- memwire {self.memwire_version}, {self.backend} backend, Python "
            f"{platform.python_version()}",
            f"- configuration: `{json.dumps(self.config, sort_keys=True)}`",
        ]
        lat = self.latency.as_dict()
        if lat.get("retained"):
            lines.append(
                f"- retain: {int(lat['retained'])} memories, {lat['retain_per_second']:.0f}/s"
            )
        if "recall_p50_ms" in lat:
            lines.append(
                f"- recall latency: p50 {lat['recall_p50_ms']:.3f} ms, "
                f"p95 {lat['recall_p95_ms']:.3f} ms"
            )
        lines.extend(f"- note: {n}" for n in self.notes)
        for rule, summary in self.rules.items():
            lines += ["", f"## {rule}", ""]
            groups = list(summary.metrics)
            names = list(summary.metrics["all"])
            lines.append("| group | n | " + " | ".join(names) + " |")
            lines.append("| --- | ---: | " + " | ".join("---:" for _ in names) + " |")
            for g in groups:
                cells = " | ".join(f"{summary.metrics[g][m]:.4f}" for m in names)
                lines.append(f"| {g} | {summary.counts[g]} | {cells} |")
        return "\n".join(lines) + "\n"

    def write(self, path: str | Path) -> None:
        """Write as JSON when ``path`` ends in ``.json``, else as Markdown."""
        p = Path(path)
        p.write_text(self.to_json() if p.suffix == ".json" else self.to_markdown(), "utf-8")
