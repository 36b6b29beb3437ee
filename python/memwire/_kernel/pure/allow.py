"""The pure kernel's :class:`AllowSet`: a search filter built once and passed by reference
(docs/parity.md, "Filters"). It holds ordinals (a roaring bitmap), so it stays right however the
index changes after it was built, and the same set serves any index."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from memwire._kernel.pure import _checks
from memwire._kernel.pure._generated import MAX_ORDINAL
from memwire.errors import InvalidInputError

if TYPE_CHECKING:
    from memwire._kernel.contract import Allow

__all__ = ["AllowSet", "as_bitmap"]

# A plain boolean mask over ``0..=max`` is kept when it takes at most this many bytes per
# member plus the slack (else membership is tested through the bitmap).
_MASK_BYTES_PER_MEMBER = 64
_MASK_SLACK = 1 << 18


def _ordinal(item: object) -> int:
    """``item`` as an ordinal: an int (or an object with ``__index__``) in range."""
    if isinstance(item, int):
        return _checks.ordinal(item)
    index = getattr(type(item), "__index__", None)
    if index is None:
        raise TypeError(f"expected an int, got {type(item).__name__}")
    return _checks.ordinal(operator.index(item))  # type: ignore[arg-type]


class AllowSet:
    """A set of ordinals for the ``allow`` argument of searches."""

    __slots__ = ("_mask", "bitmap")

    def __init__(self, ordinals: Iterable[int]) -> None:
        self.bitmap = BitMap(_ordinal(o) for o in ordinals)
        self._mask: npt.NDArray[np.bool_] | None = None

    @staticmethod
    def from_bytes(data: bytes) -> AllowSet:
        """A set from the portable roaring serialisation (pyroaring's ``BitMap.serialize()``)."""
        try:
            bitmap = BitMap.deserialize(bytes(data))
        except Exception:
            bitmap = None
        if bitmap is None or len(bitmap.serialize()) != len(data):
            raise InvalidInputError("allow set: not a roaring bitmap")
        made = AllowSet(())
        made.bitmap = bitmap
        return made

    def __len__(self) -> int:
        return len(self.bitmap)

    def __contains__(self, ordinal: object) -> bool:
        return isinstance(ordinal, int) and 0 <= ordinal <= MAX_ORDINAL and ordinal in self.bitmap

    def __repr__(self) -> str:
        return f"<memwire._kernel.pure.AllowSet len={len(self.bitmap)}>"

    def keep(self, ordinals: npt.NDArray[np.intp]) -> npt.NDArray[np.bool_]:
        """Which of ``ordinals`` (an array) are members."""
        if not self.bitmap:
            return np.zeros(len(ordinals), dtype=bool)
        if self._mask is None:
            top = self.bitmap.max()
            if top < len(self.bitmap) * _MASK_BYTES_PER_MEMBER + _MASK_SLACK:
                mask = np.zeros(top + 1, dtype=bool)
                mask[np.asarray(self.bitmap.to_array(), dtype=np.intp)] = True
                self._mask = mask
            else:
                members = np.asarray(self.bitmap.to_array(), dtype=np.int64)
                return np.isin(ordinals, members)
        mask = self._mask
        inside = ordinals < len(mask)
        out = np.zeros(len(ordinals), dtype=bool)
        out[inside] = mask[ordinals[inside]]
        return out


def as_bitmap(allow: Allow) -> AllowSet:
    """``allow`` as a set: this kernel's :class:`AllowSet` as it is; from any other iterable the
    ints that can be ordinals, the rest ignored (docs/parity.md, "Filters")."""
    if isinstance(allow, AllowSet):
        return allow
    if not isinstance(allow, Iterable):
        raise TypeError(f"'{type(allow).__name__}' object is not iterable")
    made = AllowSet(())
    made.bitmap = BitMap(o for o in allow if isinstance(o, int) and 0 <= o <= MAX_ORDINAL)
    return made
