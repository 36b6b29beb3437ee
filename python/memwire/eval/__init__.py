"""Retrieval-quality evaluation on public benchmarks and on your own bank.

Each function returns a :class:`~memwire.eval.report.Report` stating the memwire version,
backend, configuration and data hash; ``report.write("out.md")`` or ``"out.json"`` saves it.
The same runs are available as ``memwire eval locomo|longmemeval|beir|beam|bank``.
"""

from __future__ import annotations

from memwire.eval.bank import evaluate_bank
from memwire.eval.beam import evaluate_beam
from memwire.eval.beir import evaluate_beir
from memwire.eval.locomo import evaluate_locomo
from memwire.eval.longmemeval import evaluate_longmemeval
from memwire.eval.report import Report

__all__ = [
    "Report",
    "evaluate_bank",
    "evaluate_beam",
    "evaluate_beir",
    "evaluate_locomo",
    "evaluate_longmemeval",
]
