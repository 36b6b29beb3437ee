"""Turn caller vectors into the kernel's canonical int16 form (written once, for both backends).

Both kernels score int16 vectors with exact integer dot products (docs/parity.md, "Dense
stream"), so the only floating-point step, normalising and quantising, happens here, once.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memwire._kernel.constants import DENSE_SCALE
from memwire.errors import InvalidInputError

__all__ = ["quantize"]


def quantize(vector: Sequence[float] | npt.NDArray[np.floating], dim: int | None = None) -> bytes:
    """Normalise ``vector`` to unit length and encode it as little-endian int16 bytes."""
    try:
        arr = np.asarray(vector, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError("vector must be a sequence of numbers") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInputError("vector must be a non-empty one-dimensional sequence of numbers")
    if dim is not None and arr.size != dim:
        raise InvalidInputError(f"vector has {arr.size} dimensions, index has {dim}")
    if not np.isfinite(arr).all():
        raise InvalidInputError("vector must not contain NaN or infinite values")
    norm = float(np.linalg.norm(arr))
    if norm == 0.0:
        raise InvalidInputError("vector must not be all zeros")
    q = np.rint(arr / norm * DENSE_SCALE).astype("<i2")
    if not q.any():
        raise InvalidInputError("vector must not be all zeros")
    return q.tobytes()
