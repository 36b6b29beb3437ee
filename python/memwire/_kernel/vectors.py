"""Turn caller vectors into the kernel's canonical int16 form (written once, for both backends).

Both kernels score int16 vectors with exact integer dot products (docs/parity.md, "Dense
stream"), so the only floating-point step, normalising and quantising, happens here, once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from memwire._kernel.constants import DENSE_SCALE
from memwire.errors import InvalidInputError

__all__ = ["quantize", "quantize_many"]


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


# Integer-valued components whose squares sum below 2**53 are summed exactly in any order, so
# one vectorised sum gives the same norm, bit for bit, as ``quantize``'s ``dot``.
_EXACT_SUM = 2.0**53


def quantize_many(vectors: Sequence[object], dim: int) -> list[bytes | None] | None:
    """``quantize`` of each vector in one numpy pass: the same bytes, None for a None or
    all-zero vector. Returns None (the caller goes one by one, for the exact error message)
    when any vector is not a finite number sequence of ``dim`` components."""
    present = [i for i, v in enumerate(vectors) if v is not None]
    out: list[bytes | None] = [None] * len(vectors)
    if not present:
        return out
    rows = [vectors[i] for i in present]
    stacked: npt.NDArray[Any]
    try:
        arrays = [v for v in rows if isinstance(v, np.ndarray)]
        if len(arrays) == len(rows):
            stacked = np.stack(arrays)
        else:
            stacked = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if stacked.ndim != 2 or stacked.shape[1] != dim:
        return None
    kind = stacked.dtype.kind
    if kind not in "iuf":
        return None
    arr = stacked.astype(np.float64, copy=False)
    if kind == "f" and not np.isfinite(arr).all():
        return None
    integral = kind in "iu" or np.array_equal(arr, np.rint(arr))
    if integral and float(np.abs(arr).max()) ** 2 * dim < _EXACT_SUM:
        norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    else:  # the summation order matters: sum as quantize does
        norms = np.sqrt(np.array([row.dot(row) for row in arr]))
    nonzero = norms != 0.0
    safe = np.where(nonzero, norms, 1.0)
    # In place (``arr`` is this call's own copy): the same operations as quantize's, in order.
    np.divide(arr, safe[:, None], out=arr)
    np.multiply(arr, DENSE_SCALE, out=arr)
    q = np.rint(arr, out=arr).astype("<i2")
    keep = nonzero & q.any(axis=1)
    raw = q.tobytes()
    width = 2 * dim
    for row, i in enumerate(present):
        if keep[row]:
            out[i] = raw[row * width : (row + 1) * width]
    return out
