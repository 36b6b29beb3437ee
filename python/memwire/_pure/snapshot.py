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


def _bin_header(n: int) -> bytes:
    if n < 0x100:
        return bytes((0xC4, n))
    if n < 0x10000:
        return b"\xc5" + n.to_bytes(2, "big")
    return b"\xc6" + n.to_bytes(4, "big")


def dump(index: BankIndex) -> bytes:
    live = index._live
    terms = sorted(index._vocab, key=lambda t: t.encode())
    dense = index._dense
    # optimize=False: no run containers, which the Rust kernel never writes (byte identity).
    vec_docs = BitMap(dense.vectors, optimize=False) if dense is not None else BitMap()
    vectors: Any = b""
    if dense is not None and len(vec_docs):
        vectors = np.stack([dense.vectors[o] for o in vec_docs]).astype("<i2", copy=False)
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
    # What msgpack.packb(doc, use_bin_type=True) writes, assembled in one join: the big
    # fields (vectors, graph) are copied once, into the result, with no packer buffer between.
    pieces: list[Any] = [bytes((0x80 | len(doc),))]
    for key, value in doc.items():
        pieces.append(msgpack.packb(key))
        if key in _BIG and value is not None:
            view = memoryview(value).cast("B")
            pieces += [_bin_header(len(view)), view]
        else:
            pieces.append(msgpack.packb(value, use_bin_type=True))
    return b"".join(pieces)


_BIG = ("vectors", "hnsw")
_BYTES = (bytes, memoryview)


def _field(doc: dict[Any, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = doc.get(key)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise SnapshotError(f"corrupt snapshot: field {key!r}")
    return value


class _Tail:
    """A file over ``view[pos:]`` behind one extra byte, for :class:`msgpack.Unpacker`."""

    def __init__(self, view: memoryview, pos: int, first: bytes) -> None:
        self.view, self.pos, self.first = view, pos, first

    def read(self, n: int) -> bytes:
        out, self.first = self.first + self.view[self.pos : self.pos + n].tobytes(), b""
        self.pos += n
        return out


def _unpack(data: bytes | memoryview) -> dict[Any, Any]:
    """``msgpack.unpackb(data, raw=False, strict_map_key=True)`` for a top-level map, except
    that a ``bin`` value of the map is a memoryview of ``data``, not a copy; raises what
    unpackb raises (ValueError and its kin) where unpackb would."""
    view = memoryview(data).cast("B")
    size = len(view)

    def length(pos: int, n: int) -> tuple[int, int]:
        if pos + n > size:
            raise ValueError("truncated")
        return int.from_bytes(view[pos : pos + n], "big"), pos + n

    marker = view[0] if size else -1
    if 0x80 <= marker <= 0x8F:
        count, pos = marker & 0x0F, 1
    elif marker in (0xDE, 0xDF):
        count, pos = length(1, 2 if marker == 0xDE else 4)
    else:
        raise ValueError("not a map")
    doc: dict[Any, Any] = {}
    for _ in range(count):
        key, pos = _key(view, pos, length)
        marker = view[pos] if pos < size else -1
        if marker in _BIN_LEN:
            n, start = length(pos + 1, _BIN_LEN[marker])
            if start + n > size:
                raise ValueError("truncated")
            doc[key], pos = view[start : start + n], start + n
            continue
        # Any other value: msgpack itself, one level down as in the map (the nesting limit).
        unpacker = msgpack.Unpacker(
            _Tail(view, pos, b"\x91"),
            raw=False,
            strict_map_key=True,
            max_buffer_size=size + 1,
            read_size=min(1 << 16, size + 1),
        )
        doc[key] = unpacker.unpack()[0]
        pos += unpacker.tell() - 1
    if pos != size:
        raise ValueError("extra data")
    return doc


_BIN_LEN = {0xC4: 1, 0xC5: 2, 0xC6: 4}
_STR_LEN = {0xD9: 1, 0xDA: 2, 0xDB: 4}


def _key(view: memoryview, pos: int, length: Any) -> tuple[str | bytes, int]:
    """A map key at ``pos``: str or bin only (strict_map_key)."""
    marker = view[pos] if pos < len(view) else -1
    if 0xA0 <= marker <= 0xBF:
        n, start = marker & 0x1F, pos + 1
    elif marker in _STR_LEN:
        n, start = length(pos + 1, _STR_LEN[marker])
    elif marker in _BIN_LEN:
        n, start = length(pos + 1, _BIN_LEN[marker])
    else:
        raise ValueError("map key neither str nor bin")
    if start + n > len(view):
        raise ValueError("truncated")
    raw = view[start : start + n].tobytes()
    return (raw if marker in _BIN_LEN else raw.decode()), start + n


def _header(doc: dict[Any, Any], key: str) -> Any:
    value = doc.get(key)
    return value.tobytes() if isinstance(value, memoryview) else value


def load(data: bytes) -> BankIndex:
    """Loads a snapshot; its big fields are read in place (no second copy of ``data``)."""
    try:
        doc = _unpack(data)
    except Exception as exc:
        raise SnapshotError("not a memwire index snapshot") from exc
    if _header(doc, "format") != SNAPSHOT_FORMAT:
        raise SnapshotError("not a memwire index snapshot")
    version = _header(doc, "version")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"unsupported snapshot version {version}")
    contract = _header(doc, "contract")
    if contract != CONTRACT_VERSION:
        raise SnapshotError(
            f"snapshot contract {contract} differs from this kernel's {CONTRACT_VERSION}"
        )
    tokenizer = _header(doc, "tokenizer")
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


def _build(doc: dict[Any, Any]) -> BankIndex:
    dim = _field(doc, "dim", int)
    index = BankIndex(dim)
    live = BitMap.deserialize(_field(doc, "docs", _BYTES))
    lens = np.frombuffer(_field(doc, "doc_lens", _BYTES), dtype="<u4")
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
    vec_docs = BitMap.deserialize(_field(doc, "vec_docs", _BYTES))
    raw_vectors = _field(doc, "vectors", _BYTES)
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
        if isinstance(graph, _BYTES):
            index._dense.load_hnsw(graph)
    return index
