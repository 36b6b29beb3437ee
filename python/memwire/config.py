"""Per-bank configuration: a JSON object of the keys below; any other key is refused.

- ``recall_max_tokens`` (int >= 1): the default ``budget`` of :meth:`Memory.recall`.
- ``retain_tags`` (list of str): tags added to every memory retained into the bank.
- ``ttl_days`` (number > 0): memories whose ``created_at`` is older are hidden from recall and
  removed by :meth:`Memory.sweep` and by the background sweep (deleted outright: expiry does
  not go through the trash).
- ``trash_days`` (int >= 0; default 30): how long :meth:`Memory.forget` keeps a memory in the
  trash (restorable) before the background sweep deletes it; 0 makes forget delete at once.
- ``embedder`` (``"static"``, ``"minilm"`` or ``"none"``; default: the store-wide default,
  :func:`default_tier`): the embedder of the bank's vectors. ``"static"`` is the bundled one,
  ``"minilm"`` all-MiniLM-L6-v2 of the ``[embed]`` extra (setting it without the extra is
  refused, naming the install command), ``"none"`` turns vectors and the dense stream off. A
  bank whose memories already have vectors keeps the embedder it recorded until
  :meth:`Memory.reembed`, which re-encodes it with this key's tier. See docs/dense.md.
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
- ``near_duplicate`` (number in [0, 1]; default ``DEFAULT_NEAR_DUPLICATE``): the pack rule,
  recall serves one hit per family of near-duplicates, memories whose contents are the same or
  whose index terms have at least this Jaccard similarity (0 turns it off); a per-call
  ``near_duplicate`` overrides it. See docs/dense.md, "The pack".
- ``prefer_newest`` (bool; default ``DEFAULT_PREFER_NEWEST``): a family of near-duplicates is
  served by its newest memory (``created_at``) instead of its best-ranked one; a per-call
  ``prefer_newest`` overrides it.

- ``memory_wire`` (object): the config a memory-wire client last PUT through the ``/mw``
  compatibility routes, kept verbatim so they can answer it back (docs/compat.md); it acts
  through the keys above, which those routes translate it into.

A value of ``None`` in :meth:`Memory.set_config` removes the key (any key, so a key stored
before unknown keys were refused can still be removed). An unknown key is refused with a
message naming it; an import of an older export keeps such keys verbatim (``strict=False``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from memwire._kernel.contract import DEFAULT_WEIGHTS
from memwire._text import clean_tags, fold_tags
from memwire.errors import InvalidInputError

__all__ = [
    "ACTING_KEYS",
    "ACTING_KEYS_TEXT",
    "DEFAULT_EMBEDDER",
    "DEFAULT_FUSION_WEIGHTS",
    "DEFAULT_LOOKUP_RATIO",
    "DEFAULT_MIN_SCORE",
    "DEFAULT_NEAR_DUPLICATE",
    "DEFAULT_PREFER_NEWEST",
    "DEFAULT_RECALL_TOKENS",
    "DEFAULT_TRASH_DAYS",
    "EMBEDDER_ENV",
    "EMBEDDER_MODES",
    "EMBEDDER_TIERS",
    "KNOWN_KEYS",
    "MAX_CONFIG_BYTES",
    "MAX_RECALL_TOKENS",
    "MEMORY_WIRE_KEY",
    "check_embedder_mode",
    "check_floor",
    "check_prefer_newest",
    "default_tier",
    "embedder_mode",
    "from_memory_wire",
    "fusion_weights",
    "lookup_ratio",
    "merge_config",
    "min_score",
    "near_duplicate",
    "prefer_newest",
    "recall_budget",
    "retain_tags",
    "to_memory_wire",
    "trash_days",
    "ttl_days",
]

DEFAULT_RECALL_TOKENS = 8000
DEFAULT_TRASH_DAYS = 30
MAX_TRASH_DAYS = 100_000
# The keys that change behaviour, for help texts and schemas.
ACTING_KEYS = (
    "recall_max_tokens",
    "retain_tags",
    "ttl_days",
    "trash_days",
    "embedder",
    "fusion_weights",
    "lookup_ratio",
    "min_score",
    "near_duplicate",
    "prefer_newest",
)
ACTING_KEYS_TEXT = ", ".join(ACTING_KEYS[:-1]) + " and " + ACTING_KEYS[-1]
MEMORY_WIRE_KEY = "memory_wire"
"""Where the ``/mw`` routes keep a memory-wire client's config verbatim (docs/compat.md)."""
KNOWN_KEYS = (*ACTING_KEYS, MEMORY_WIRE_KEY)
"""Every key a bank's config may hold; :func:`merge_config` refuses any other."""
MAX_RECALL_TOKENS = 1_000_000
MAX_CONFIG_BYTES = 64 * 1024
EMBEDDER_TIERS = ("static", "minilm")
"""The embedders a configuration can name (:mod:`memwire.embed.tiers` loads them)."""
EMBEDDER_MODES = (*EMBEDDER_TIERS, "none")
DEFAULT_EMBEDDER = "static"
EMBEDDER_ENV = "MEMWIRE_EMBEDDER"
"""The environment variable naming the store-wide default embedder (:func:`default_tier`)."""
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
# The pack rule's default (docs/dense.md, "The pack"), chosen on dev data.
DEFAULT_NEAR_DUPLICATE = 0.8
DEFAULT_PREFER_NEWEST = False


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


def _check_trash(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"trash_days must be an integer, got {type(value).__name__}")
    if not 0 <= value <= MAX_TRASH_DAYS:
        raise InvalidInputError(f"trash_days must be between 0 and {MAX_TRASH_DAYS}, got {value}")
    return value


def check_embedder_mode(value: object, what: str = "embedder") -> str:
    """An embedder name: ``static``, ``minilm`` or ``none``."""
    if not isinstance(value, str) or value not in EMBEDDER_MODES:
        names = ", ".join(repr(m) for m in EMBEDDER_MODES)
        raise InvalidInputError(f"{what} must be one of {names}, got {value!r}")
    return value


def default_tier(value: str | None = None) -> str:
    """The store-wide default embedder, which a bank without vectors or an ``embedder`` key
    takes: ``value`` (``Memory(embedder=...)``, ``--embedder``), else ``$MEMWIRE_EMBEDDER``,
    else :data:`DEFAULT_EMBEDDER`."""
    if value is not None:
        return check_embedder_mode(value)
    found = os.environ.get(EMBEDDER_ENV, "").strip()
    return check_embedder_mode(found, EMBEDDER_ENV) if found else DEFAULT_EMBEDDER


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
    """A finite number in [0, 1]: a relevance floor (fused scores never exceed 1), or the pack's
    Jaccard threshold."""
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


def near_duplicate(config: Mapping[str, Any]) -> float:
    """The bank's pack threshold (``near_duplicate``, 0: off), else the default."""
    value = config.get("near_duplicate")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1:
        return float(value)
    return DEFAULT_NEAR_DUPLICATE


def check_prefer_newest(value: object, what: str = "prefer_newest") -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{what} must be true or false, got {type(value).__name__}")
    return value


def prefer_newest(config: Mapping[str, Any]) -> bool:
    """The bank's ``prefer_newest``, else :data:`DEFAULT_PREFER_NEWEST`."""
    value = config.get("prefer_newest")
    return value if isinstance(value, bool) else DEFAULT_PREFER_NEWEST


def _unknown_key(key: str) -> InvalidInputError:
    return InvalidInputError(
        f"unknown config key {key!r}; the keys are {', '.join(KNOWN_KEYS)} (docs/serving.md)"
    )


def merge_config(
    current: Mapping[str, Any], update: object, *, strict: bool = True
) -> dict[str, Any]:
    """Validate ``update`` and return ``current`` with it applied (``None`` deletes a key).

    ``strict``: refuse a key that is not in :data:`KNOWN_KEYS` (an import of an older export
    passes False, keeping such keys verbatim)."""
    if not isinstance(update, Mapping):
        raise InvalidInputError(f"config must be a dict, got {type(update).__name__}")
    merged = dict(current)
    for key, value in update.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError("config keys must be non-empty strings")
        if value is None:
            merged.pop(key, None)
            continue
        if strict and key not in KNOWN_KEYS:
            raise _unknown_key(key)
        if key == "recall_max_tokens":
            value = _check_budget(value, "recall_max_tokens")
        elif key == "retain_tags":
            if isinstance(value, str):
                raise InvalidInputError("retain_tags must be a list of strings")
            value = clean_tags(value, "retain_tags")
        elif key == "ttl_days":
            value = _check_ttl(value)
        elif key == "trash_days":
            value = _check_trash(value)
        elif key == "embedder":
            value = check_embedder_mode(value)
        elif key == "fusion_weights":
            value = _check_weights(value)
        elif key == "lookup_ratio":
            value = _check_lookup_ratio(value)
        elif key == "min_score":
            value = check_floor(value)
        elif key == "near_duplicate":
            value = check_floor(value, "near_duplicate")
        elif key == "prefer_newest":
            value = check_prefer_newest(value)
        elif key == MEMORY_WIRE_KEY and not isinstance(value, Mapping):
            raise InvalidInputError(f"{MEMORY_WIRE_KEY} must be an object")
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


MEMORY_WIRE_NAMES = {
    "recallMaxTokens": "recall_max_tokens",
    "retainTags": "retain_tags",
    "ttl_days": "ttl_days",
}
"""memory-wire's config keys that act, and the keys they are here."""


def from_memory_wire(theirs: Mapping[str, Any]) -> dict[str, Any]:
    """The :meth:`Memory.set_config` update that makes a memory-wire config act as it does
    there: its acting keys under memwire's names (tags lowercased, as memory-wire stores
    them), ``None`` for those it leaves out (memory-wire's PUT replaces), and the object itself
    under :data:`MEMORY_WIRE_KEY`. A value memwire could not act on is refused, naming
    memory-wire's key. Other keys of the bank are not touched."""
    update: dict[str, Any] = {}
    for their_key, key in MEMORY_WIRE_NAMES.items():
        value = theirs.get(their_key)
        if key == "retain_tags" and isinstance(value, list):
            value = [t.lower() if isinstance(t, str) else t for t in value]
        try:
            merge_config({}, {key: value})
        except InvalidInputError as exc:
            raise InvalidInputError(str(exc).replace(key, their_key, 1)) from None
        update[key] = value
    update[MEMORY_WIRE_KEY] = dict(theirs)
    return update


def to_memory_wire(config: Mapping[str, Any]) -> dict[str, Any]:
    """A bank's config as a memory-wire client sees it: what it last set, else the acting
    keys set here, under memory-wire's names."""
    kept = config.get(MEMORY_WIRE_KEY)
    if isinstance(kept, dict):
        return kept
    return {theirs: config[ours] for theirs, ours in MEMORY_WIRE_NAMES.items() if ours in config}


def recall_budget(config: Mapping[str, Any], budget: object) -> int:
    """Precedence: the ``budget`` argument, then ``recall_max_tokens``, then 8000."""
    if budget is not None:
        return _check_budget(budget, "budget")
    value = config.get("recall_max_tokens")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    return DEFAULT_RECALL_TOKENS


def retain_tags(config: Mapping[str, Any]) -> list[str]:
    """The bank's ``retain_tags``, casefolded (a config written before tags were folded may
    hold capitals)."""
    value = config.get("retain_tags")
    if isinstance(value, list):
        return fold_tags(t for t in value if isinstance(t, str))
    return []


def ttl_days(config: Mapping[str, Any]) -> float | None:
    value = config.get("ttl_days")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


def trash_days(config: Mapping[str, Any]) -> int:
    """How many days forget keeps a memory in the trash (0: forget deletes)."""
    value = config.get("trash_days")
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return DEFAULT_TRASH_DAYS


def embedder_mode(config: Mapping[str, Any]) -> str | None:
    """The bank's ``embedder`` key (``"static"``, ``"minilm"`` or ``"none"``), or None when it
    has none (the store-wide default applies)."""
    value = config.get("embedder")
    return value if isinstance(value, str) and value in EMBEDDER_MODES else None


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
