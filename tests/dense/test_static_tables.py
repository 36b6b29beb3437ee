"""The bundled static tables: the default (minilm-wndebian) and the previous defaults it replaced.

A new table is a new vector space: it has its own embedder id, and a bank whose vectors are in
a previous space keeps them (and refuses the new table) until ``reembed`` moves it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dense_support import DENSE_BACKENDS, NOTES, PARAPHRASES, RUST_SKIP, bank_space, recall_rows
from memwire import Memory
from memwire.embed.static import (
    MODEL_ID,
    PREVIOUS_IDS,
    TABLES,
    ModelFileError,
    StaticEmbedder,
)

QUERIES = [q for _, q in PARAPHRASES] + ["postgres backups", "staging database port"]


@pytest.mark.parametrize("table", sorted(TABLES))
def test_each_bundled_table_loads_with_its_own_id(table: str, backend: str) -> None:
    embedder = StaticEmbedder(backend, table=table)
    assert embedder.id == table and embedder.dim == 256
    vectors = embedder.embed(NOTES)
    assert all(v is not None and v.shape == (256,) and np.any(v) for v in vectors)


def test_every_table_ships_and_the_default_is_not_a_previous_one() -> None:
    assert set(TABLES) == {MODEL_ID, *PREVIOUS_IDS} and len(TABLES) == 1 + len(PREVIOUS_IDS)


@pytest.mark.parametrize("previous", PREVIOUS_IDS)
def test_the_default_is_the_new_table_under_a_new_id(previous: str, backend: str) -> None:
    assert StaticEmbedder(backend).id == MODEL_ID
    new = StaticEmbedder(backend).embed(NOTES)
    old = StaticEmbedder(backend, table=previous).embed(NOTES)
    assert all(a is not None and b is not None for a, b in zip(new, old, strict=True))
    assert not any(np.array_equal(a, b) for a, b in zip(new, old, strict=True))


@pytest.mark.parametrize("table", sorted(TABLES))
def test_vectors_are_deterministic(table: str, backend: str) -> None:
    first = StaticEmbedder(backend, table=table).embed(NOTES)
    again = StaticEmbedder(backend, table=table).embed(list(reversed(NOTES)))[::-1]
    for a, b in zip(first, again, strict=True):
        assert a is not None and b is not None and a.tobytes() == b.tobytes()


def test_an_unknown_table_is_refused() -> None:
    with pytest.raises(ValueError, match="no bundled static table"):
        StaticEmbedder("python", table="memwire/nope")


def test_a_changed_table_file_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from memwire.embed import static

    package, digests = TABLES[MODEL_ID]
    monkeypatch.setitem(TABLES, MODEL_ID, (package, {**digests, "model.safetensors": "0" * 64}))
    with pytest.raises(ModelFileError, match="corrupt"):
        static.StaticEmbedder("python")


@pytest.mark.skipif(len(DENSE_BACKENDS) < 2, reason=RUST_SKIP or "needs both backends")
@pytest.mark.parametrize("table", sorted(TABLES))
def test_both_kernels_rank_identically_with_each_table(table: str, tmp_path: Path) -> None:
    runs = {}
    for backend in ("rust", "python"):
        embedder = StaticEmbedder(backend, table=table)
        with Memory(tmp_path / f"{backend}.db", backend=backend, embedder=embedder) as m:
            ids = m.retain_many(NOTES)
            position = {memory_id: i for i, memory_id in enumerate(ids)}  # ids are random
            runs[backend] = [
                [(position[row[0]], *row[1:]) for row in q] for q in recall_rows(m, QUERIES)
            ]
    assert runs["rust"] == runs["python"]
    assert any(row[4] for q in runs["rust"] for row in q)  # the dense stream took part


@pytest.mark.parametrize("previous", PREVIOUS_IDS)
def test_an_old_bank_keeps_its_space_until_reembed(
    previous: str, db_path: Path, backend: str
) -> None:
    legacy = StaticEmbedder(backend, table=previous)
    with Memory(db_path, backend=backend, embedder=legacy) as m:
        ids = m.retain_many(NOTES)
        before = recall_rows(m, QUERIES)
    assert bank_space(db_path) == (previous, 256)
    with Memory(db_path, backend=backend) as m:  # the new default table
        assert m.embedder_id == MODEL_ID
        # the bank is served by the table that made its vectors, as it was: an upgrade never
        # refuses (nor silently mixes) a bank of the previous default
        assert recall_rows(m, QUERIES) == before
        added = m.retain("a new note about kubernetes")
        assert m.recall("kubernetes note")[0].id == added
    assert bank_space(db_path) == (previous, 256)
    with Memory(db_path, backend=backend) as m:
        assert m.reembed("default") == len(ids) + 1
        assert bank_space(db_path) == (MODEL_ID, 256)
        assert m.recall("postgres backups")
