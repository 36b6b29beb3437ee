"""Snapshot (de)serialisation of the pure kernel: format version 1 of docs/parity.md."""

from __future__ import annotations

from array import array
from typing import Any

import msgpack
import numpy as np
from pyroaring import BitMap

from memwire._pure._generated import (
    CONTRACT_VERSION,
    SNAPSHOT_FORMAT,
    SNAPSHOT_VERSION,
    TOKENIZER_VERSION,
    UNICODE_VERSION,
)
from memwire._pure.dense import DenseStore
from memwire._pure.index import BankIndex, Postings
from memwire.errors import SnapshotError

__all__ = ["dump", "load"]


def _u32le(values: Any) -> bytes:
    return np.asarray(values, dtype="<u4").tobytes()


def dump(index: BankIndex) -> bytes:
    live = index._live
    terms = sorted(index._vocab, key=lambda t: t.encode())
    dense = index._dense
    vec_docs = BitMap(dense.vectors) if dense is not None else BitMap()
    if dense is not None and len(vec_docs):
        vectors = np.stack([dense.vectors[o] for o in vec_docs]).astype("<i2").tobytes()
    else:
        vectors = b""
    doc = {
        "format": SNAPSHOT_FORMAT,
        "version": SNAPSHOT_VERSION,
        "contract": CONTRACT_VERSION,
        "tokenizer": TOKENIZER_VERSION,
        "unicode": UNICODE_VERSION,
        "docs": live.serialize(),
        "doc_lens": _u32le([index._doc_len[index._slot_of[o]] for o in live]),
        "terms": terms,
        "postings": [index._vocab[t].docs.serialize() for t in terms],
        "tfs": [_u32le(index._vocab[t].tfs) for t in terms],
        "dim": index.dim,
        "vec_docs": vec_docs.serialize(),
        "vectors": vectors,
        "hnsw": dense.hnsw_bytes() if dense is not None else None,
    }
    return msgpack.packb(doc, use_bin_type=True)  # type: ignore[no-any-return]


def _field(doc: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SnapshotError(f"corrupt snapshot: field {key!r}")
    return value


def load(data: bytes) -> BankIndex:
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=True)
    except Exception as exc:
        raise SnapshotError("not a memwire index snapshot") from exc
    if not isinstance(doc, dict) or doc.get("format") != SNAPSHOT_FORMAT:
        raise SnapshotError("not a memwire index snapshot")
    version = doc.get("version")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"unsupported snapshot version {version}")
    contract = doc.get("contract")
    if contract != CONTRACT_VERSION:
        raise SnapshotError(
            f"snapshot contract {contract} differs from this kernel's {CONTRACT_VERSION}"
        )
    tokenizer = doc.get("tokenizer")
    if tokenizer != TOKENIZER_VERSION:
        raise SnapshotError(
            f"snapshot tokenizer {tokenizer} differs from this kernel's {TOKENIZER_VERSION}"
        )
    try:
        return _build(doc)
    except SnapshotError:
        raise
    except Exception as exc:
        raise SnapshotError(f"corrupt snapshot: {type(exc).__name__}") from exc


def _build(doc: dict[str, Any]) -> BankIndex:
    dim = _field(doc, "dim", int)
    index = BankIndex(dim)
    live = BitMap.deserialize(_field(doc, "docs", bytes))
    lens = np.frombuffer(_field(doc, "doc_lens", bytes), dtype="<u4")
    if len(lens) != len(live):
        raise SnapshotError("corrupt snapshot: doc_lens")
    # Slots are handed out in ascending ordinal order, so a document's slot is its rank.
    live_ords = np.frombuffer(live.to_array(), dtype=np.uint32).astype(np.int64)
    size = max(16, len(live))
    index._doc_len = np.zeros(size, dtype=np.uint32)
    index._doc_len[: len(live)] = lens
    index._ordinal_of = np.zeros(size, dtype=np.int64)
    index._ordinal_of[: len(live)] = live_ords
    index._slot_of = {int(o): i for i, o in enumerate(live_ords)}
    index._live = live
    index._total_len = int(lens.astype(np.uint64).sum())  # integers: exact in any order
    terms = _field(doc, "terms", list)
    postings = _field(doc, "postings", list)
    tfs = _field(doc, "tfs", list)
    if not (len(terms) == len(postings) == len(tfs)):
        raise SnapshotError("corrupt snapshot: postings")
    for term, raw_docs, raw_tfs in zip(terms, postings, tfs, strict=True):
        if not isinstance(term, str) or not isinstance(raw_docs, bytes):
            raise SnapshotError("corrupt snapshot: postings")
        p = Postings()
        p.docs = BitMap.deserialize(raw_docs)
        p.tfs = array("I", np.frombuffer(raw_tfs, dtype="<u4").astype(np.uint32).tobytes())
        if len(p.tfs) != len(p.docs) or not p.docs or not p.docs.issubset(live):
            raise SnapshotError("corrupt snapshot: postings")
        docs = np.frombuffer(p.docs.to_array(), dtype=np.uint32).astype(np.int64)
        p.slots = array("I", np.searchsorted(live_ords, docs).astype(np.uint32).tobytes())
        index._vocab[term] = p
    index._doc_terms = None  # rebuilt on the first remove(): loading never re-tokenizes
    vec_docs = BitMap.deserialize(_field(doc, "vec_docs", bytes))
    raw_vectors = _field(doc, "vectors", bytes)
    if len(vec_docs):
        if index._dense is None or len(raw_vectors) != 2 * dim * len(vec_docs):
            raise SnapshotError("corrupt snapshot: vectors")
        if not vec_docs.issubset(live):
            raise SnapshotError("corrupt snapshot: vectors")
        mat = np.frombuffer(raw_vectors, dtype="<i2").astype(np.int16).reshape(-1, dim)
        index._dense = DenseStore(dim)
        for o, row in zip(vec_docs, mat, strict=True):
            index._dense.vectors[o] = row
        graph = doc.get("hnsw")
        if isinstance(graph, bytes):
            index._dense.load_hnsw(graph)
    return index
