"""The dense stream at the Memory API: vectors at retain, the per-bank embedder space, fusion
weights, min_score."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest
from dense_support import NOTES, PARAPHRASES, TinyEmbedder, bank_space, stored_vectors
from memwire import Memory
from memwire._kernel.backend import load_kernel
from memwire.config import DEFAULT_FUSION_WEIGHTS, DEFAULT_MIN_SCORE
from memwire.embed.static import MODEL_ID
from memwire.errors import InvalidInputError
from memwire.memory import api as memory_module
from memwire.memory.items import prepare
from memwire.store import Space

# -- the paraphrase test -------------------------------------------------------------------


@pytest.mark.parametrize(("note", "query"), PARAPHRASES)
def test_a_paraphrase_sharing_no_word_is_found_by_the_dense_stream(
    mem: Memory, backend: str, note: int, query: str
) -> None:
    tokenize = load_kernel(backend).tokenize
    assert not set(tokenize(query)) & set(tokenize(NOTES[note])), "the query must share no word"
    ids = mem.retain_many(NOTES, bank="team")
    # No floor: 18 notes are too few for a dense-only hit to be told from the crowd, so the
    # default floor drops it (tests/dense/test_relevance_floor.py has the rescue).
    hits = mem.recall(query, bank="team", limit=5, min_score=0)
    found = [h for h in hits if h.id == ids[note]]
    assert found, [h.content for h in hits]
    assert found[0].dense_rank >= 1
    assert found[0].bm25_rank == found[0].overlap_rank == 0
    # without vectors the same memory is not found at all
    mem.set_config("lexical", {"embedder": "none"})
    lexical_ids = mem.retain_many(NOTES, bank="lexical")
    lexical = mem.recall(query, bank="lexical", limit=100, min_score=0)
    assert lexical_ids[note] not in {h.id for h in lexical}


def test_embedder_none_is_purely_lexical(mem: Memory, db_path: Path) -> None:
    mem.set_config("plain", {"embedder": "none"})
    mem.retain_many(NOTES, bank="plain")
    assert bank_space(db_path, "plain") == (None, 0)
    assert set(stored_vectors(db_path, "plain").values()) == {None}
    hits = mem.recall("postgres backups", bank="plain", limit=100)
    assert hits and all(h.dense_rank == 0 and h.bm25_rank for h in hits)
    assert mem.recall("kitten", bank="plain") == []


# -- vectors at retain ---------------------------------------------------------------------


def test_vectors_are_stored_with_the_row_and_the_space_recorded(mem: Memory, db_path: Path) -> None:
    assert mem.embedder_id == MODEL_ID
    ids = mem.retain_many(NOTES)
    one = mem.retain("a single memory about kubernetes")
    assert bank_space(db_path) == (MODEL_ID, 256)
    vectors = stored_vectors(db_path)
    assert set(vectors) == {*ids, one}
    assert all(v is not None and len(v) == 512 for v in vectors.values())


def test_a_text_without_a_vector_is_kept_and_found_by_words(mem: Memory, db_path: Path) -> None:
    mem.retain_many(NOTES)
    glyphs = mem.retain("𓀀𓀁 hieroglyphs")  # "hieroglyphs" is known, so this one has a vector
    bare = mem.retain("𓀀𓀁")  # no WordPiece token the table knows: no vector
    vectors = stored_vectors(db_path)
    assert vectors[bare] is None and vectors[glyphs] is not None
    hits = mem.recall("𓀀𓀁", limit=100)
    by_id = {h.id: h for h in hits}
    assert by_id[bare].bm25_rank >= 1 and by_id[bare].dense_rank == 0
    assert all(h.dense_rank == 0 for h in hits if h.id == bare)


def test_retain_many_embeds_once_per_batch(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, any_backend: str
) -> None:
    tiny = TinyEmbedder()
    with Memory(db_path, backend=any_backend, embedder=tiny) as m:
        m.retain_many([f"memory number {i}" for i in range(25)])
        assert tiny.calls == [25]
        monkeypatch.setattr(memory_module, "BATCH_SIZE", 10)
        m.retain_many([f"another memory {i}" for i in range(25)])
        assert tiny.calls == [25, 10, 10, 5]
        m.retain("one more")
        assert tiny.calls[-1] == 1


def test_retain_many_with_a_failing_embedder_writes_nothing(
    db_path: Path, any_backend: str
) -> None:
    tiny = TinyEmbedder(fail_after=0)
    with Memory(db_path, backend=any_backend, embedder=tiny) as m:
        with pytest.raises(RuntimeError):
            m.retain_many(["never stored", "nor this"])
        assert m.banks() == []


# -- the embedder space of a bank ----------------------------------------------------------


def test_a_bank_refuses_another_embedder_space(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("team-model-a")) as m:
        m.retain_many(NOTES)
        assert [h.content for h in m.recall("postgres backups", limit=1)] == [NOTES[9]]
    assert bank_space(db_path) == ("team-model-a", 16)
    with Memory(db_path, backend=backend, embedder=TinyEmbedder("team-model-b", dim=24)) as m:
        for attempt in (
            lambda: m.retain("something new"),
            lambda: m.retain_many(["x", "y"]),
            lambda: m.recall("postgres"),
        ):
            with pytest.raises(InvalidInputError) as info:
                attempt()
            message = str(info.value)
            assert "'team-model-a'" in message and "'team-model-b'" in message
            assert "dim 16" in message and "dim 24" in message
        assert m.stats()["count"] == len(NOTES)
        # other banks are free to use this Memory's embedder
        m.retain("fine elsewhere", bank="other")
        assert bank_space(db_path, "other") == ("team-model-b", 24)
    with Memory(db_path, backend=backend) as m:  # the bundled embedder
        with pytest.raises(InvalidInputError, match=MODEL_ID):
            m.recall("postgres")
        # turning vectors off for the bank makes it usable lexically from anywhere
        m.set_config("default", {"embedder": "none"})
        assert [h.content for h in m.recall("postgres backups", limit=1)] == [NOTES[9]]
        m.retain("a lexical-only memory")
        assert stored_vectors(db_path)[m.recall("lexical-only", limit=1)[0].id] is None
    assert bank_space(db_path) == ("team-model-a", 16)  # the recorded space never moved


def test_the_store_refuses_a_mixed_write_even_if_the_check_before_it_raced(
    db_path: Path, any_backend: str
) -> None:
    with Memory(db_path, backend=any_backend, embedder=TinyEmbedder("a")) as m:
        m.retain("first")
        # simulate another process recording its space between our check and our write
        store = m._store
        item = prepare("second", now="2024-01-01T00:00:00.000000Z")
        item = dataclasses.replace(item, vector=b"\x01\x00" * 8)
        with pytest.raises(InvalidInputError, match="'a'"):
            store.write("default", [item], space=Space("b", 8))
        assert m.stats()["count"] == 1


@pytest.mark.parametrize(
    "bad",
    [
        object(),
        "nonsense",
        TinyEmbedder(name=""),
        TinyEmbedder(dim=0),
        TinyEmbedder(dim=5000),
    ],
)
def test_an_invalid_embedder_is_refused(db_path: Path, any_backend: str, bad: Any) -> None:
    with pytest.raises(InvalidInputError):
        Memory(db_path, backend=any_backend, embedder=bad)


class _Broken(TinyEmbedder):
    def __init__(self, mode: str) -> None:
        super().__init__("broken", dim=4)
        self.mode = mode

    def embed(self, texts: Any) -> Any:
        if self.mode == "count":
            return [[1.0, 0.0, 0.0, 0.0]]
        if self.mode == "dim":
            return [[1.0, 2.0, 3.0] for _ in texts]
        if self.mode == "nan":
            return [[math.nan, 1.0, 0.0, 0.0] for _ in texts]
        return [[0.0, 0.0, 0.0, 0.0] for _ in texts]  # "zero": no direction, no vector


@pytest.mark.parametrize("mode", ["count", "dim", "nan"])
def test_an_embedder_returning_garbage_writes_nothing(
    db_path: Path, any_backend: str, mode: str
) -> None:
    with Memory(db_path, backend=any_backend, embedder=_Broken(mode)) as m:
        with pytest.raises(InvalidInputError, match="'broken'"):
            m.retain_many(["one", "two"])
        assert m.banks() == []


def test_a_zero_vector_counts_as_no_vector(db_path: Path, any_backend: str) -> None:
    with Memory(db_path, backend=any_backend, embedder=_Broken("zero")) as m:
        mid = m.retain("zero vector text")
        assert stored_vectors(db_path)[mid] is None
        assert [h.id for h in m.recall("zero")] == [mid]


# -- fusion weights ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "1,0.5,0.3",
        [1.0, 0.5],
        [1.0, 0.5, 0.3, 0.1],
        [1.0, -0.5, 0.3],
        [1.0, math.nan, 0.3],
        [1.0, math.inf, 0.3],
        [0, 0, 0],
        [True, 1, 1],
        ["1", 1, 1],
        {"bm25": 1},
        1.0,
    ],
)
def test_fusion_weights_are_validated(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="fusion_weights"):
        mem.set_config("default", {"fusion_weights": bad})
    assert "fusion_weights" not in (mem.get_config() if "default" in mem.banks() else {})


@pytest.mark.parametrize("bad", ["dense", "", 1, True, ["static"]])
def test_embedder_config_is_validated(mem: Memory, bad: object) -> None:
    with pytest.raises(InvalidInputError, match="embedder"):
        mem.set_config("default", {"embedder": bad})


def test_fusion_weights_are_per_bank_and_shape_the_score(mem: Memory) -> None:
    assert DEFAULT_FUSION_WEIGHTS == (1.1, 0.1, 0.5)
    for bank in ("a", "b", "c"):
        mem.retain("the staging database runs on port 5433", bank=bank)
    mem.set_config("b", {"fusion_weights": [2, 1, 0]})
    assert mem.get_config("b")["fusion_weights"] == [2.0, 1.0, 0.0]
    mem.set_config("c", {"fusion_weights": [0, 0, 1]})
    query = "staging database port"
    [a] = mem.recall(query, bank="a")
    assert (a.bm25_rank, a.overlap_rank, a.dense_rank) == (1, 1, 1)
    assert 0.0 < a.score <= 1.0
    [b] = mem.recall(query, bank="b")
    assert (b.bm25_rank, b.overlap_rank, b.dense_rank) == (1, 1, 0)  # a 0 weight: not run
    # Every term once in a one-memory bank: BM25 / ((k1 + 1) * idf(q)) = 1 / 2.2, all terms
    # matched: (2 * (1 / 2.2) + 1 * 1) / 3.
    assert b.score == pytest.approx((2.0 / 2.2 + 1.0) / 3.0, rel=1e-12)
    [c] = mem.recall(query, bank="c")
    assert c.dense_rank == 1 and 0.0 < c.score < 1.0  # the exact cosine alone
    want = (1.1 * (1.0 / 2.2) + 0.1 * 1.0 + 0.5 * c.score) / 1.7
    assert a.score == pytest.approx(want, rel=1e-12)
    mem.set_config("b", {"fusion_weights": None})  # back to the default
    assert mem.recall(query, bank="b")[0].score == a.score


def test_a_dense_weight_of_zero_does_not_embed_the_query(db_path: Path, any_backend: str) -> None:
    tiny = TinyEmbedder()
    with Memory(db_path, backend=any_backend, embedder=tiny) as m:
        m.retain_many(NOTES)
        m.set_config("default", {"fusion_weights": [1, 0.5, 0]})
        calls = len(tiny.calls)
        assert m.recall("postgres backups")
        assert len(tiny.calls) == calls
        m.set_config("default", {"fusion_weights": [1, 0.5, 0.3]})
        m.recall("postgres backups")
        assert tiny.calls[calls:] == [1]


# -- min_score -----------------------------------------------------------------------------


def test_min_score_turns_confident_junk_into_nothing(mem: Memory) -> None:
    mem.retain_many(NOTES)
    junk = mem.recall("quantum chromodynamics lecture", min_score=0)
    assert junk and all(h.bm25_rank == 0 for h in junk)  # the dense stream always answers
    assert all(h.score <= 0.5 / 1.7 for h in junk)  # the dense share of the fused score
    assert mem.recall("quantum chromodynamics lecture", min_score=0.2) == []
    assert "No memories" in mem.reflect("quantum chromodynamics lecture", min_score=0.2)
    good = mem.recall("staging database port", min_score=0.2)
    assert good and good[0].content == NOTES[1]
    assert all(h.score >= 0.2 for h in good)
    assert mem.recall("staging database port", min_score=1.0) == []


def test_the_bank_floor_returns_nothing_when_nothing_is_relevant(mem: Memory) -> None:
    mem.retain_many(NOTES)
    mem.set_config("default", {"min_score": 0.2})
    for query in ("what is the capital of France", "banana smoothie recipe"):
        assert mem.recall(query, min_score=0)  # there are neighbours...
        assert mem.recall(query) == []  # ...and none clears the bank's floor
        assert "No memories" in mem.reflect(query)
    [top, *_] = mem.recall("staging database port")
    assert top.content == NOTES[1] and top.score >= 0.2
    # A per-call min_score overrides the bank's key; None removes the key.
    assert mem.recall("banana smoothie recipe", min_score=0)
    mem.set_config("default", {"min_score": 0.99})
    assert mem.recall("staging database port") == []
    assert mem.recall("staging database port", min_score=0.2)[0].content == NOTES[1]
    mem.set_config("default", {"min_score": None})  # back to DEFAULT_MIN_SCORE
    assert mem.recall("banana smoothie recipe") == []
    mem.set_config("default", {"min_score": 0})  # a bank can turn the floor off
    assert mem.recall("banana smoothie recipe")
    assert DEFAULT_MIN_SCORE > 0


@pytest.mark.parametrize("bad", [-0.1, 1.5, math.nan, math.inf, True, "0.2", [0.2]])
def test_min_score_config_is_validated(mem: Memory, bad: object) -> None:
    mem.retain("a note")
    with pytest.raises(InvalidInputError, match="min_score"):
        mem.set_config("default", {"min_score": bad})
    assert "min_score" not in mem.get_config()


@pytest.mark.parametrize("bad", [-0.1, math.nan, math.inf, "0.1", True])
def test_min_score_is_validated(mem: Memory, bad: object) -> None:
    mem.retain("something")
    with pytest.raises(InvalidInputError, match="min_score"):
        mem.recall("something", min_score=bad)  # type: ignore[arg-type]


# -- content and context ---------------------------------------------------------------------


def test_the_vector_is_computed_from_the_content_alone(db_path: Path, any_backend: str) -> None:
    tiny = TinyEmbedder()
    with Memory(db_path, backend=any_backend, embedder=tiny) as m:
        plain = m.retain("deploys go through the staging cluster")
        with_context = m.retain(
            "deploys go through the staging cluster", context="said during the outage review"
        )
    vectors = stored_vectors(db_path)
    assert vectors[plain] is not None and vectors[plain] == vectors[with_context]


def test_a_memory_saying_it_outranks_one_whose_context_says_it(mem: Memory) -> None:
    mem.set_config("ctx", {"embedder": "none"})
    # Same words, same length: only the field the query words sit in differs. The older
    # memory would win a tie, so it is the one whose context holds the words.
    around = mem.retain(
        "notes on the billing export", context="rotate the signing keys monthly", bank="ctx"
    )
    said = mem.retain(
        "rotate the signing keys monthly", context="notes on the billing export", bank="ctx"
    )
    hits = mem.recall("rotate signing keys", bank="ctx", limit=10)
    assert [h.id for h in hits] == [said, around]


# -- lookups -----------------------------------------------------------------------------------


def test_a_lookup_query_skips_the_dense_stream(mem: Memory) -> None:
    needle = mem.retain_many([*NOTES, "the staging deploy failed with error E0502"])[-1]
    # "E0502" is in one memory only: BM25's leader scores far above the runner-up
    # ("the staging database..."), so the query is a lookup and runs lexically.
    lookup = mem.recall("staging E0502", limit=10)
    assert lookup[0].id == needle
    assert len(lookup) >= 2 and all(h.dense_rank == 0 for h in lookup)
    # A query matching two memories about as well is not a lookup: the dense stream runs.
    broad = mem.recall("staging", limit=10)
    assert any(h.dense_rank for h in broad)
    # lookup_ratio 0 turns the gate off; a ratio no query reaches keeps the dense stream too.
    for ratio in (0, 1e9):
        mem.set_config("default", {"lookup_ratio": ratio})
        hits = mem.recall("staging E0502", limit=10)
        assert hits[0].id == needle and any(h.dense_rank for h in hits)
    # a dense-only bank is never gated
    mem.set_config("default", {"lookup_ratio": None, "fusion_weights": [0, 0, 1]})
    assert all(h.dense_rank for h in mem.recall("staging E0502", limit=10))


@pytest.mark.parametrize("bad", [0.5, -1, math.nan, math.inf, True, "2", [1.5]])
def test_lookup_ratio_is_validated(mem: Memory, bad: object) -> None:
    mem.retain("a memory so that the bank exists")
    with pytest.raises(InvalidInputError, match="lookup_ratio"):
        mem.set_config("default", {"lookup_ratio": bad})
    assert "lookup_ratio" not in mem.get_config("default")
