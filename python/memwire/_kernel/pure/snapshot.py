"""Snapshot (de)serialisation of the pure kernel: the format of native/format.md."""

from __future__ import annotations

from array import array
from typing import Any, cast

import msgpack
import numpy as np
import numpy.typing as npt
from pyroaring import BitMap

from memwire._kernel.pure._generated import (
    CONTRACT_VERSION,
    MAX_DIM,
    SNAPSHOT_FORMAT,
    SNAPSHOT_VERSION,
    TOKENIZER_VERSION,
    UNICODE_VERSION,
)
from memwire._kernel.pure.dense import DenseStore
from memwire._kernel.pure.index import BankIndex, Postings
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
    vec_docs = BitMap(optimize=False)
    vectors: Any = b""
    if dense is not None and len(dense):
        ords, mat = dense.in_order()
        vec_docs = BitMap(ords.tolist(), optimize=False)
        vectors = mat.astype("<i2", copy=False)
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


def _shown(value: Any) -> str:
    """How an error message shows a header field: ``str(value)`` for nil, booleans, numbers
    and strings, the msgpack type for the rest (docs/parity.md, "Errors")."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return str(value)
    if isinstance(value, bytes):
        return "<bin>"
    if isinstance(value, list):
        return "<array>"
    return "<map>" if isinstance(value, dict) else "<ext>"


def load(data: bytes | memoryview) -> BankIndex:
    """Loads a snapshot; its big fields are read in place (no second copy of ``data``)."""
    try:
        doc = _unpack(data)
    except Exception as exc:
        raise SnapshotError("not a memwire index snapshot") from exc
    if _header(doc, "format") != SNAPSHOT_FORMAT:
        raise SnapshotError("not a memwire index snapshot")
    version = _header(doc, "version")
    if version != SNAPSHOT_VERSION:
        raise SnapshotError(f"unsupported snapshot version {_shown(version)}")
    contract = _header(doc, "contract")
    if contract != CONTRACT_VERSION:
        raise SnapshotError(
            f"snapshot contract {_shown(contract)} differs from this kernel's {CONTRACT_VERSION}"
        )
    tokenizer = _header(doc, "tokenizer")
    if tokenizer != TOKENIZER_VERSION:
        raise SnapshotError(
            f"snapshot tokenizer {_shown(tokenizer)} differs from this kernel's {TOKENIZER_VERSION}"
        )
    try:
        return _build(doc)
    except SnapshotError:
        raise
    except Exception as exc:  # a check missing above: never name a Python class
        raise SnapshotError("corrupt snapshot") from exc


def _corrupt(detail: str) -> SnapshotError:
    return SnapshotError(f"corrupt snapshot: {detail}")


# The cookie of the portable roaring format without run containers (12346, little-endian).
_NO_RUNS = b":0\x00\x00"


def _roaring(raw: bytes | memoryview, key: str) -> BitMap:
    """A roaring bitmap in exactly the form both writers produce: the portable format without
    run containers, every invariant holding (pyroaring validates after deserialising), and the
    serialisation of the set equal to the input (offsets, container kinds, no trailing bytes).
    The Rust kernel checks the same bytes directly."""
    bitmap = None
    if raw[:4] == _NO_RUNS:
        try:
            bitmap = BitMap.deserialize(cast(bytes, raw))  # a memoryview is read in place
        except Exception:
            bitmap = None
    if bitmap is None or bitmap.serialize() != raw:
        raise _corrupt(f"{key}: bad roaring bitmap")
    return bitmap


def _u32s(raw: bytes | memoryview, key: str) -> npt.NDArray[np.uint32]:
    if len(raw) % 4:
        raise _corrupt(f"{key}: length {len(raw)} is not a multiple of 4")
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32, copy=False)


def _first_outside(bitmap: BitMap, live: BitMap) -> int | None:
    """The smallest member of ``bitmap`` that is not in ``live``."""
    return None if bitmap.issubset(live) else int((bitmap - live).min())


def _build(doc: dict[Any, Any]) -> BankIndex:
    # The checks run in the order docs/parity.md ("Errors") lists them, as in the Rust kernel,
    # so that a snapshot damaged in several places gets the same message from both.
    dim = _field(doc, "dim", int)
    if not 0 <= dim <= MAX_DIM:
        raise _corrupt(f"dim: must be between 0 and {MAX_DIM}, got {dim}")
    index = BankIndex(dim)
    live = _roaring(_field(doc, "docs", _BYTES), "docs")
    lens = _u32s(_field(doc, "doc_lens", _BYTES), "doc_lens")
    if len(lens) != len(live):
        raise _corrupt(f"doc_lens: {len(lens)} lengths for {len(live)} documents")
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
    if len(postings) != len(terms):
        raise _corrupt(f"postings: {len(postings)} lists for {len(terms)} terms")
    if len(tfs) != len(terms):
        raise _corrupt(f"tfs: {len(tfs)} lists for {len(terms)} terms")
    previous: str | None = None
    all_slots: list[npt.NDArray[np.int64]] = []
    all_tfs: list[npt.NDArray[np.uint32]] = []
    for i, (term, raw_docs, raw_tfs) in enumerate(zip(terms, postings, tfs, strict=True)):
        if not isinstance(term, str):
            raise _corrupt(f"terms[{i}]: not a string")
        # Code point order is UTF-8 byte order.
        if previous is not None and term <= previous:
            raise _corrupt(f"terms[{i}]: not after the previous term in UTF-8 byte order")
        previous = term
        if not isinstance(raw_docs, bytes):
            raise _corrupt(f"postings[{i}]: not bin")
        p = Postings()
        p.docs = _roaring(raw_docs, f"postings[{i}]")
        if not p.docs:
            raise _corrupt(f"postings[{i}]: empty")
        outside = _first_outside(p.docs, live)
        if outside is not None:
            raise _corrupt(f"postings[{i}]: document {outside} is not in docs")
        if not isinstance(raw_tfs, bytes):
            raise _corrupt(f"tfs[{i}]: not bin")
        freqs = _u32s(raw_tfs, f"tfs[{i}]")
        if len(freqs) != len(p.docs):
            raise _corrupt(f"tfs[{i}]: {len(freqs)} frequencies for {len(p.docs)} documents")
        if np.count_nonzero(freqs) != len(freqs):
            raise _corrupt(f"tfs[{i}]: a frequency is 0")
        p.tfs = array("I", freqs.tobytes())
        docs = np.frombuffer(p.docs.to_array(), dtype=np.uint32).astype(np.int64)
        slots = np.searchsorted(live_ords, docs)
        p.slots = array("I", slots.astype(np.uint32).tobytes())
        all_slots.append(slots)
        all_tfs.append(freqs)
        index._vocab[term] = p
    # Every token is a term: a document's length is the sum of its term frequencies (u64,
    # wrapping like the Rust kernel's, which no real snapshot comes near).
    sums = np.zeros(len(live), dtype=np.uint64)
    if all_slots:
        np.add.at(sums, np.concatenate(all_slots), np.concatenate(all_tfs).astype(np.uint64))
    wrong = np.flatnonzero(sums != lens)
    if len(wrong):
        s = int(wrong[0])
        raise _corrupt(
            f"doc_lens: document {int(live_ords[s])} has length {int(lens[s])}, "
            f"its term frequencies sum to {int(sums[s])}"
        )
    index._doc_terms = None  # rebuilt on the first remove(): loading never re-tokenizes
    vec_docs = _roaring(_field(doc, "vec_docs", _BYTES), "vec_docs")
    if vec_docs and not dim:
        raise _corrupt("vec_docs: not empty in an index of dim 0")
    outside = _first_outside(vec_docs, live)
    if outside is not None:
        raise _corrupt(f"vec_docs: document {outside} is not in docs")
    raw_vectors = _field(doc, "vectors", _BYTES)
    if len(raw_vectors) != 2 * dim * len(vec_docs):
        raise _corrupt(
            f"vectors: {len(raw_vectors)} bytes for {len(vec_docs)} vectors of dim {dim}"
        )
    if vec_docs:
        mat = np.frombuffer(raw_vectors, dtype="<i2").astype(np.int16).reshape(-1, dim)
        zero = np.flatnonzero(~mat.any(axis=1))
        if len(zero):
            raise _corrupt(f"vectors: vector of document {vec_docs[int(zero[0])]} is all zeros")
        index._dense = DenseStore(dim)
        index._dense.load_rows(vec_docs, mat)
    graph = doc.get("hnsw")
    if graph is not None:
        if not isinstance(graph, _BYTES):
            raise _corrupt("field 'hnsw'")
        if index._dense is None:
            raise _corrupt("hnsw: a graph in an index of dim 0")
        index._dense.load_hnsw(graph)
    return index
