"""The pure-Python kernel: the fallback backend and the reference oracle of docs/parity.md.

It returns the same ordered ids and bit-identical scores as the Rust kernel, only slower.
"""

from __future__ import annotations

from memwire._pure._generated import CONTRACT_VERSION
from memwire._pure.index import BankIndex
from memwire._pure.ranking import rrf, trim_to_budget
from memwire._pure.tokenizer import tokenize
from memwire._pure.wordpiece import StaticEmbedder

__all__ = [
    "CONTRACT_VERSION",
    "BankIndex",
    "StaticEmbedder",
    "rrf",
    "tokenize",
    "trim_to_budget",
]
