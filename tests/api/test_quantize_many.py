"""The bulk quantiser gives exactly ``quantize``'s bytes, and hands anything unusual back to the
one-by-one path (whose messages callers see)."""

from __future__ import annotations

import numpy as np
import pytest
from memwire._kernel.vectors import quantize, quantize_many
from memwire.embed import encode
from memwire.errors import InvalidInputError

pytestmark = pytest.mark.backend_independent


def one_by_one(vectors: list[object], dim: int) -> list[bytes | None]:
    out: list[bytes | None] = []
    for v in vectors:
        if v is None:
            out.append(None)
            continue
        try:
            out.append(quantize(v, dim))  # type: ignore[arg-type]
        except InvalidInputError:
            out.append(None)  # all zeros
    return out


@pytest.mark.parametrize("seed", range(6))
def test_float_vectors_quantise_bit_for_bit(seed: int) -> None:
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(1, 400))
    scale = 10.0 ** rng.integers(-30, 30)
    vectors: list[object] = [rng.standard_normal(dim) * scale for _ in range(300)]
    vectors[3] = None
    vectors[7] = np.zeros(dim)
    vectors[9] = [float(x) for x in rng.standard_normal(dim)]  # a plain list works too
    assert quantize_many(vectors, dim) == one_by_one(vectors, dim)


@pytest.mark.parametrize("bound", [3, 127 * 40, 2**20, 2**31 - 1])
def test_integer_vectors_quantise_bit_for_bit(bound: int) -> None:
    """The static embedder's int32 row sums (summed exactly; huge ones sum as quantize does)."""
    rng = np.random.default_rng(bound)
    vectors: list[object] = [
        rng.integers(-bound, bound, 256, dtype=np.int64).astype("<i4") for _ in range(500)
    ]
    assert quantize_many(vectors, 256) == one_by_one(vectors, 256)


@pytest.mark.parametrize(
    "bad",
    [[1.0, float("nan")], [1.0, 2.0, 3.0], [[1.0, 2.0]], ["a", "b"], [1.0, float("inf")]],
)
def test_unusual_vectors_go_one_by_one(bad: object) -> None:
    assert quantize_many([[1.0, 0.0], bad], 2) is None


class FixedEmbedder:
    id = "fixed"
    dim = 2

    def __init__(self, vectors: list[object]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[object]:
        return self.vectors


def test_encode_keeps_the_per_vector_message() -> None:
    embedder = FixedEmbedder([[1.0, 0.0], [1.0, float("nan")]])
    with pytest.raises(InvalidInputError, match="unusable vector for text 1"):
        encode(embedder, ("fixed", 2), ["a", "b"])  # type: ignore[arg-type]
    ok = FixedEmbedder([[3.0, 4.0], None, [0.0, 0.0]])
    assert encode(ok, ("fixed", 2), ["a", "b", "c"]) == [quantize([3.0, 4.0]), None, None]  # type: ignore[arg-type]
