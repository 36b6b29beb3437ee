"""Per-bank configuration: a JSON object; the keys below act, any other key is kept verbatim.

- ``recall_max_tokens`` (int >= 1): the default ``budget`` of :meth:`Memory.recall`.
- ``retain_tags`` (list of str): tags added to every memory retained into the bank.
- ``ttl_days`` (number > 0): memories whose ``created_at`` is older are hidden from recall and
  removed by :meth:`Memory.sweep`.
- ``embedder`` (``"static"`` or ``"none"``; default ``"static"``): whether retain computes
  vectors and recall runs the dense stream. ``"static"`` means the Memory's embedder: the bundled
  static one, or the one given to ``Memory(embedder=...)``. See docs/dense.md.
- ``fusion_weights`` (three finite numbers >= 0, not all 0; default ``[1.1, 0.1, 0.5]``): the
  weights of the BM25, overlap and dense streams in the fused score (docs/dense.md).
- ``lookup_ratio`` (number >= 1, or 0 for never; default ``1.5``): when the best BM25 hit of a
  query scores at least this many times the second, the query is a lookup (it names something
  one memory has, such as an identifier) and recall skips the dense stream for it, so a
  paraphrase-ish neighbour cannot outrank the exact match.
- ``min_score`` (number in [0, 1]; default ``0.15``): the relevance floor, hits whose fused
  score is below it are dropped (except a dense neighbour that stands out from the crowd), so a
  query with nothing relevant returns nothing (0 turns it off); a per-call ``min_score``
  overrides it. See docs/dense.md, "The relevance floor".

A value of ``None`` in :meth:`Memory.set_config` removes the key.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from memwire._kernel.contract import DEFAULT_WEIGHTS
from memwire._text import clean_tags
from memwire.errors import InvalidInputError

__all__ = [
    "ACTING_KEYS",
    "ACTING_KEYS_TEXT",
    "DEFAULT_EMBEDDER",
    "DEFAULT_FUSION_WEIGHTS",
    "DEFAULT_LOOKUP_RATIO",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_RECALL_TOKENS",
    "EMBEDDER_MODES",
    "MAX_CONFIG_BYTES",
    "MAX_RECALL_TOKENS",
    "check_floor",
    "embedder_mode",
    "fusion_weights",
    "lookup_ratio",
    "merge_config",
    "min_score",
    "recall_budget",
    "retain_tags",
    "ttl_days",
]

DEFAULT_RECALL_TOKENS = 8000
# The keys that change behaviour, for help texts and schemas (any other key is kept verbatim).
ACTING_KEYS = (
    "recall_max_tokens",
    "retain_tags",
    "ttl_days",
    "embedder",
    "fusion_weights",
    "lookup_ratio",
    "min_score",
)
ACTING_KEYS_TEXT = ", ".join(ACTING_KEYS[:-1]) + " and " + ACTING_KEYS[-1]
MAX_RECALL_TOKENS = 1_000_000
MAX_CONFIG_BYTES = 64 * 1024
EMBEDDER_MODES = ("static", "none")
DEFAULT_EMBEDDER = "static"
# The kernel's default (native/constants.toml, chosen on LoCoMo dev, docs/dense.md): the dense
# stream at 0.3 lifts R@10 over BM25 + overlap; 1.0 hurts.
DEFAULT_FUSION_WEIGHTS: tuple[float, float, float] = DEFAULT_WEIGHTS
# Chosen on LoCoMo dev and the benchmark corpus's needle queries (docs/dense.md): at 1.5 the
# gate fires on 95% of identifier lookups and on 3% of LoCoMo questions, leaving their recall
# unchanged.
DEFAULT_LOOKUP_RATIO = 1.5
# The default relevance floor, chosen on dev data (docs/dense.md, "The relevance floor"): 92%
# (bundled static table) and 96% (MiniLM) of SciFact train claims asked of LoCoMo dev
# conversations return nothing, at a LoCoMo dev R@10 cost of 0.5 and 0.3 points. Dense-only
# hits, which score at most 0.29, pass it only through the rescue of memory/relevance.py.
DEFAULT_MIN_SCORE = 0.15


def _check_budget(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an integer, got {type(value).__name__}")
    if not 1 <= value <= MAX_RECALL_TOKENS:
        raise InvalidInputError(f"{what} must be between 1 and {MAX_RECALL_TOKENS}, got {value}")
    return value


def _check_ttl(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"ttl_days must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise InvalidInputError(f"ttl_days must be a finite number above 0, got {value}")
    return float(value) if isinstance(value, float) else value


def _check_embedder(value: object) -> str:
    if not isinstance(value, str) or value not in EMBEDDER_MODES:
        raise InvalidInputError(f"embedder must be 'static' or 'none', got {value!r}")
    return value


def _check_weights(value: object) -> list[float]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, (list, tuple)):
        raise InvalidInputError("fusion_weights must be a list of 3 numbers (bm25, overlap, dense)")
    if len(value) != 3:
        raise InvalidInputError(f"fusion_weights must have 3 numbers, got {len(value)}")
    out: list[float] = []
    for w in value:
        if isinstance(w, bool) or not isinstance(w, (int, float)):
            raise InvalidInputError(f"fusion_weights must be numbers, got {type(w).__name__}")
        if not math.isfinite(w) or w < 0:
            raise InvalidInputError(f"fusion_weights must be finite and non-negative, got {w}")
        out.append(float(w))
    if not any(out):
        raise InvalidInputError("fusion_weights must not all be 0")
    return out


def _check_lookup_ratio(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"lookup_ratio must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or (value != 0 and value < 1):
        raise InvalidInputError(f"lookup_ratio must be 0 (never) or a number >= 1, got {value}")
    return float(value)


def check_floor(value: object, what: str = "min_score") -> float:
    """A relevance floor: a finite number in [0, 1] (fused scores never exceed 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{what} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise InvalidInputError(f"{what} must be a number between 0 and 1, got {value}")
    return float(value)


def min_score(config: Mapping[str, Any]) -> float:
    """The bank's relevance floor (``min_score``), else :data:`DEFAULT_MIN_SCORE`."""
    value = config.get("min_score")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return DEFAULT_MIN_SCORE


def merge_config(current: Mapping[str, Any], update: object) -> dict[str, Any]:
    """Validate ``update`` and return ``current`` with it applied (``None`` deletes a key)."""
    if not isinstance(update, Mapping):
        raise InvalidInputError(f"config must be a dict, got {type(update).__name__}")
    merged = dict(current)
    for key, value in update.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError("config keys must be non-empty strings")
        if value is None:
            merged.pop(key, None)
            continue
        if key == "recall_max_tokens":
            value = _check_budget(value, "recall_max_tokens")
        elif key == "retain_tags":
            if isinstance(value, str):
                raise InvalidInputError("retain_tags must be a list of strings")
            value = clean_tags(value, "retain_tags")
        elif key == "ttl_days":
            value = _check_ttl(value)
        elif key == "embedder":
            value = _check_embedder(value)
        elif key == "fusion_weights":
            value = _check_weights(value)
        elif key == "lookup_ratio":
            value = _check_lookup_ratio(value)
        elif key == "min_score":
            value = check_floor(value)
        merged[key] = value
    try:
        encoded = json.dumps(merged, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"config values must be JSON-serialisable ({exc})") from None
    if len(encoded.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
        raise InvalidInputError(f"config is too large (limit {MAX_CONFIG_BYTES} bytes)")
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError("config contains a lone surrogate") from None
    return json.loads(encoded)  # type: ignore[no-any-return]


def recall_budget(config: Mapping[str, Any], budget: object) -> int:
    """Precedence: the ``budget`` argument, then ``recall_max_tokens``, then 8000."""
    if budget is not None:
        return _check_budget(budget, "budget")
    value = config.get("recall_max_tokens")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return DEFAULT_RECALL_TOKENS


def retain_tags(config: Mapping[str, Any]) -> list[str]:
    value = config.get("retain_tags")
    if isinstance(value, list):
        return [t for t in value if isinstance(t, str)]
    return []


def ttl_days(config: Mapping[str, Any]) -> float | None:
    value = config.get("ttl_days")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def embedder_mode(config: Mapping[str, Any]) -> str:
    """``"static"`` (vectors on, the Memory's embedder) or ``"none"``."""
    value = config.get("embedder")
    return value if isinstance(value, str) and value in EMBEDDER_MODES else DEFAULT_EMBEDDER


def fusion_weights(config: Mapping[str, Any]) -> tuple[float, float, float]:
    """The bank's (bm25, overlap, dense) weights, else :data:`DEFAULT_FUSION_WEIGHTS`."""
    value = config.get("fusion_weights")
    try:
        w = _check_weights(value)
    except InvalidInputError:
        return DEFAULT_FUSION_WEIGHTS
    return (w[0], w[1], w[2])


def lookup_ratio(config: Mapping[str, Any]) -> float:
    """The bank's ``lookup_ratio`` (0: never), else :data:`DEFAULT_LOOKUP_RATIO`."""
    try:
        return _check_lookup_ratio(config.get("lookup_ratio", DEFAULT_LOOKUP_RATIO))
    except InvalidInputError:
        return DEFAULT_LOOKUP_RATIO
