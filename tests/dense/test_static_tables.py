"""The bundled static tables: the default (minilm-wordnet) and the previous one it replaced.

A new table is a new vector space: it has its own embedder id, and a bank whose vectors are in
the previous space keeps them (and refuses the new table) until ``reembed`` moves it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dense_support import DENSE_BACKENDS, NOTES, PARAPHRASES, RUST_SKIP, bank_space, recall_rows
from memwire import Memory
from memwire.embed.static import LEGACY_ID, MODEL_ID, TABLES, ModelFileError, StaticEmbedder
from memwire.errors import InvalidInputError

QUERIES = [q for _, q in PARAPHRASES] + ["postgres backups", "staging database port"]


@pytest.mark.parametrize("table", sorted(TABLES))
def test_each_bundled_table_loads_with_its_own_id(table: str, backend: str) -> None:
    embedder = StaticEmbedder(backend, table=table)
    assert embedder.id == table and embedder.dim == 256
    vectors = embedder.embed(NOTES)
    assert all(v is not None and v.shape == (256,) and np.any(v) for v in vectors)


def test_the_default_is_the_new_table_under_a_new_id(backend: str) -> None:
    assert MODEL_ID != LEGACY_ID
    assert StaticEmbedder(backend).id == MODEL_ID
    new = StaticEmbedder(backend).embed(NOTES)
    old = StaticEmbedder(backend, table=LEGACY_ID).embed(NOTES)
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


def test_an_old_bank_keeps_its_space_until_reembed(db_path: Path, backend: str) -> None:
    legacy = StaticEmbedder(backend, table=LEGACY_ID)
    with Memory(db_path, backend=backend, embedder=legacy) as m:
        ids = m.retain_many(NOTES)
        before = recall_rows(m, QUERIES)
    assert bank_space(db_path) == (LEGACY_ID, 256)
    with Memory(db_path, backend=backend) as m:  # the new default table
        assert m.embedder_id == MODEL_ID
        with pytest.raises(InvalidInputError, match=LEGACY_ID):
            m.recall("postgres backups")
        with pytest.raises(InvalidInputError, match=LEGACY_ID):
            m.retain("a new note about kubernetes")
    assert bank_space(db_path) == (LEGACY_ID, 256)
    with Memory(db_path, backend=backend, embedder=legacy) as m:  # still served as it was
        assert recall_rows(m, QUERIES) == before
    with Memory(db_path, backend=backend) as m:
        assert m.reembed("default") == len(ids)
        assert bank_space(db_path) == (MODEL_ID, 256)
        assert m.recall("postgres backups")
