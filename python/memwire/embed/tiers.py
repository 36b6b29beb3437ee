"""The embedders a configuration can name: ``static`` (bundled), ``minilm`` (the ``[embed]``
extra) and ``none`` (no vectors).

A bank's config key ``embedder``, ``Memory(embedder="minilm")``, ``MEMWIRE_EMBEDDER``,
``memwire serve --embedder`` and the CLI's ``--embedder`` all take these names (the rules are
in :mod:`memwire.config` and docs/dense.md). Each tier is loaded once per process, on first use.
"""

from __future__ import annotations

from memwire.config import EMBEDDER_TIERS
from memwire.embed import Embedder
from memwire.embed import minilm as _minilm
from memwire.embed import static as _static
from memwire.errors import InvalidInputError

__all__ = ["EMBEDDER_TIERS", "check_installed", "load", "tier_of"]


def check_installed(tier: str) -> None:
    """Raise :class:`memwire.embed.minilm.EmbedExtraMissing`, naming the install command, when
    ``tier`` needs packages that are not installed (the bundled tier needs none)."""
    if tier == "minilm":
        _minilm.check_installed()


def load(tier: str, backend: str | None = None) -> Embedder:
    """The process-wide embedder of ``tier`` (``backend``: the static tier's kernel), or of a
    previous bundled table named by its id (what :func:`tier_of` gives for its banks)."""
    if tier == "static":
        return _static.default_embedder(backend)
    if tier in _static.PREVIOUS_IDS:
        return _static.default_embedder(backend, tier)
    if tier == "minilm":
        return _minilm.minilm_embedder()
    raise InvalidInputError(f"no embedder tier {tier!r}; the tiers are {', '.join(EMBEDDER_TIERS)}")


def tier_of(embedder_id: str) -> str | None:
    """What :func:`load` takes to serve vectors that carry ``embedder_id``: a tier, or, for a
    previous bundled table, its id (banks filled by an earlier default keep that table until
    ``reembed``, docs/dense.md: never refused because the default moved on; not a tier a
    configuration can name); None for a user's own embedder."""
    if embedder_id in _static.PREVIOUS_IDS:
        return embedder_id
    return {_static.MODEL_ID: "static", _minilm.MODEL_ID: "minilm"}.get(embedder_id)
