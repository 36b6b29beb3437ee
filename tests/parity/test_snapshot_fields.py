"""Damage inside well-formed msgpack: every field of the snapshot (native/format.md) wrong in
every way, one at a time, is refused by both kernels with the same message (docs/parity.md,
"Errors"); random damage either loads to the same index on both or is refused alike."""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from memwire._kernel.backend import load_kernel
from memwire._kernel.contract import Kernel
from memwire._kernel.pure._generated import (
    CONTRACT_VERSION,
    DENSE_SCALE,
    HNSW_SCALAR,
    SNAPSHOT_VERSION,
)
from memwire._kernel.vectors import quantize
from memwire.errors import SnapshotError
from pyroaring import BitMap

Doc = dict[str, Any]

# Live ordinals of the base index, ascending; text by ordinal (the empty one has no terms).
ORDINALS = [0, 3, 7, 70000, 4000000000]
TEXTS = ["alpha beta", "beta beta gamma", "", "東京都 alpha", "src/main.rs gamma"]
VECTORS = {0: [1.0, 0.0, 0.5], 7: [-1.0, 2.0, 0.0], 4000000000: [0.0, 0.0, 1.0]}


def base_index(kern: Kernel) -> Any:
    index = kern.BankIndex(3)
    vectors = [quantize(VECTORS[o]) if o in VECTORS else None for o in ORDINALS]
    index.add_many(ORDINALS, TEXTS, vectors)
    return index


def graph_index(kern: Kernel) -> Any:
    """An index with an HNSW graph installed (dim 2, 12 vectors)."""
    index = kern.BankIndex(2)
    index._set_dense_exact_max(4)
    index.add_many(
        list(range(12)),
        [f"d{o}" for o in range(12)],
        [quantize([1.0 + o, 12.0 - o]) for o in range(12)],
    )
    assert index.build_dense_graph()
    return index


@functools.cache
def graph_snapshot() -> bytes:
    return graph_index(load_kernel("python")).to_bytes()  # type: ignore[no-any-return]


def pack(doc: dict[Any, Any]) -> bytes:
    return msgpack.packb(doc, use_bin_type=True)  # type: ignore[no-any-return]


def outcome(kern: Kernel, data: bytes) -> str:
    """The snapshot the loaded index writes, or the error (any other exception propagates)."""
    try:
        return kern.BankIndex.from_bytes(data).to_bytes().hex()
    except SnapshotError as exc:
        return f"SnapshotError: {exc}"


def roaring(values: Any) -> bytes:
    # A list, not a range: pyroaring makes run containers of ranges.
    return BitMap(list(values), optimize=False).serialize()


def u32s(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}I", *values)


def i16s(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}h", *values)


def term_at(doc: Doc, term: str) -> int:
    return list(doc["terms"]).index(term)


def with_list(doc: Doc, key: str, i: int, value: Any) -> Doc:
    items = list(doc[key])
    items[i] = value
    return dict(doc, **{key: items})


def without(doc: Doc, key: str) -> Doc:
    return {k: v for k, v in doc.items() if k != key}


def run_containers(doc: Doc) -> Doc:
    data = BitMap(range(100, 200))
    data.run_optimize()
    # A run container is valid portable roaring, but no writer writes one.
    return dict(doc, vec_docs=data.serialize())


def bad_offset(doc: Doc) -> Doc:
    data = bytearray(roaring(ORDINALS))
    data[8 + 4 * 3] += 2  # the first container's offset (3 containers)
    return dict(doc, docs=bytes(data))


def bitset_count(doc: Doc) -> Doc:
    data = bytearray(roaring(range(5000)))
    data[10:12] = struct.pack("<H", 4999 - 1)  # declares 4999 values, holds 5000
    return dict(doc, docs=bytes(data))


def array_order(doc: Doc) -> Doc:
    data = bytearray(roaring([1, 2]))
    data[16:20] = data[18:20] + data[16:18]
    return dict(doc, docs=bytes(data))


def mix_tfs(doc: Doc, term: str, tfs: list[int]) -> Doc:
    return with_list(doc, "tfs", term_at(doc, term), u32s(tfs))


# (case, mutation of the decoded base snapshot, the message both kernels give)
CASES: list[tuple[str, Callable[[Doc], Doc], str]] = [
    # header fields (messages of their own)
    ("format missing", lambda d: without(d, "format"), "not a memwire index snapshot"),
    ("format other", lambda d: dict(d, format="memwire.other"), "not a memwire index snapshot"),
    (
        "version next",
        lambda d: dict(d, version=SNAPSHOT_VERSION + 1),
        f"unsupported snapshot version {SNAPSHOT_VERSION + 1}",
    ),
    # Version 1 held an f32 HNSW graph: refused, and the store rebuilds the index from rows.
    ("version 1", lambda d: dict(d, version=1), "unsupported snapshot version 1"),
    ("version missing", lambda d: without(d, "version"), "unsupported snapshot version None"),
    (
        "version str",
        lambda d: dict(d, version=str(SNAPSHOT_VERSION)),
        f"unsupported snapshot version {SNAPSHOT_VERSION}",
    ),
    ("version float", lambda d: dict(d, version=1.5), "unsupported snapshot version 1.5"),
    ("version big float", lambda d: dict(d, version=1e16), "unsupported snapshot version 1e+16"),
    (
        "version small float",
        lambda d: dict(d, version=-1e-05),
        "unsupported snapshot version -1e-05",
    ),
    ("version nan", lambda d: dict(d, version=float("nan")), "unsupported snapshot version nan"),
    ("version bin", lambda d: dict(d, version=b"1"), "unsupported snapshot version <bin>"),
    ("version array", lambda d: dict(d, version=[1]), "unsupported snapshot version <array>"),
    ("version map", lambda d: dict(d, version={"v": 1}), "unsupported snapshot version <map>"),
    (
        "version ext",
        lambda d: dict(d, version=msgpack.ExtType(5, b"1")),
        "unsupported snapshot version <ext>",
    ),
    (
        "contract",
        lambda d: dict(d, contract=9),
        f"snapshot contract 9 differs from this kernel's {CONTRACT_VERSION}",
    ),
    (
        "tokenizer",
        lambda d: dict(d, tokenizer=None),
        "snapshot tokenizer None differs from this kernel's 1",
    ),
    # dim
    ("dim missing", lambda d: without(d, "dim"), "corrupt snapshot: field 'dim'"),
    ("dim str", lambda d: dict(d, dim="3"), "corrupt snapshot: field 'dim'"),
    ("dim bool", lambda d: dict(d, dim=True), "corrupt snapshot: field 'dim'"),
    ("dim float", lambda d: dict(d, dim=3.0), "corrupt snapshot: field 'dim'"),
    (
        "dim negative",
        lambda d: dict(d, dim=-1),
        "corrupt snapshot: dim: must be between 0 and 4096, got -1",
    ),
    (
        "dim large",
        lambda d: dict(d, dim=4097),
        "corrupt snapshot: dim: must be between 0 and 4096, got 4097",
    ),
    (
        "dim u64",
        lambda d: dict(d, dim=2**64 - 1),
        "corrupt snapshot: dim: must be between 0 and 4096, got 18446744073709551615",
    ),
    (
        "dim other",
        lambda d: dict(d, dim=4),
        "corrupt snapshot: vectors: 18 bytes for 3 vectors of dim 4",
    ),
    # docs
    ("docs missing", lambda d: without(d, "docs"), "corrupt snapshot: field 'docs'"),
    ("docs str", lambda d: dict(d, docs="x"), "corrupt snapshot: field 'docs'"),
    ("docs nil", lambda d: dict(d, docs=None), "corrupt snapshot: field 'docs'"),
    ("docs list", lambda d: dict(d, docs=[1, 2]), "corrupt snapshot: field 'docs'"),
    ("docs empty bin", lambda d: dict(d, docs=b""), "corrupt snapshot: docs: bad roaring bitmap"),
    (
        "docs garbage",
        lambda d: dict(d, docs=b"\x00" * 9),
        "corrupt snapshot: docs: bad roaring bitmap",
    ),
    (
        "docs truncated",
        lambda d: dict(d, docs=d["docs"][:-1]),
        "corrupt snapshot: docs: bad roaring bitmap",
    ),
    (
        "docs trailing byte",
        lambda d: dict(d, docs=d["docs"] + b"\x00"),
        "corrupt snapshot: docs: bad roaring bitmap",
    ),
    ("docs bad offset", bad_offset, "corrupt snapshot: docs: bad roaring bitmap"),
    ("docs bitset count", bitset_count, "corrupt snapshot: docs: bad roaring bitmap"),
    ("docs array order", array_order, "corrupt snapshot: docs: bad roaring bitmap"),
    (
        "docs fewer",
        lambda d: dict(d, docs=roaring(ORDINALS[:-1])),
        "corrupt snapshot: doc_lens: 5 lengths for 4 documents",
    ),
    # doc_lens
    ("doc_lens missing", lambda d: without(d, "doc_lens"), "corrupt snapshot: field 'doc_lens'"),
    ("doc_lens int", lambda d: dict(d, doc_lens=5), "corrupt snapshot: field 'doc_lens'"),
    (
        "doc_lens odd length",
        lambda d: dict(d, doc_lens=d["doc_lens"][:-1]),
        "corrupt snapshot: doc_lens: length 19 is not a multiple of 4",
    ),
    (
        "doc_lens short",
        lambda d: dict(d, doc_lens=d["doc_lens"][:-4]),
        "corrupt snapshot: doc_lens: 4 lengths for 5 documents",
    ),
    (
        "doc_lens wrong",
        lambda d: dict(d, doc_lens=u32s([2, 3, 1, 2, 4])),
        "corrupt snapshot: doc_lens: document 7 has length 1, its term frequencies sum to 0",
    ),
    (
        "doc_lens too short for the tfs",
        lambda d: dict(d, doc_lens=u32s([2, 2, 0, 2, 4])),
        "corrupt snapshot: doc_lens: document 3 has length 2, its term frequencies sum to 3",
    ),
    # terms
    ("terms missing", lambda d: without(d, "terms"), "corrupt snapshot: field 'terms'"),
    ("terms bin", lambda d: dict(d, terms=b"alpha"), "corrupt snapshot: field 'terms'"),
    ("terms map", lambda d: dict(d, terms={"a": 1}), "corrupt snapshot: field 'terms'"),
    ("term int", lambda d: with_list(d, "terms", 0, 7), "corrupt snapshot: terms[0]: not a string"),
    (
        "term bin",
        lambda d: with_list(d, "terms", 1, b"beta"),
        "corrupt snapshot: terms[1]: not a string",
    ),
    (
        "terms unsorted",
        lambda d: with_list(d, "terms", 1, "a"),
        "corrupt snapshot: terms[1]: not after the previous term in UTF-8 byte order",
    ),
    (
        "terms repeated",
        lambda d: with_list(d, "terms", 1, d["terms"][0]),
        "corrupt snapshot: terms[1]: not after the previous term in UTF-8 byte order",
    ),
    (
        "terms fewer",
        lambda d: dict(d, terms=d["terms"][:-1]),
        "corrupt snapshot: postings: 9 lists for 8 terms",
    ),
    # postings
    ("postings missing", lambda d: without(d, "postings"), "corrupt snapshot: field 'postings'"),
    ("postings bin", lambda d: dict(d, postings=b""), "corrupt snapshot: field 'postings'"),
    (
        "postings more",
        lambda d: dict(d, postings=[*d["postings"], roaring([0])]),
        "corrupt snapshot: postings: 10 lists for 9 terms",
    ),
    (
        "posting str",
        lambda d: with_list(d, "postings", 2, "x"),
        "corrupt snapshot: postings[2]: not bin",
    ),
    (
        "posting nil",
        lambda d: with_list(d, "postings", 0, None),
        "corrupt snapshot: postings[0]: not bin",
    ),
    (
        "posting garbage",
        lambda d: with_list(d, "postings", 3, b"\x01\x02"),
        "corrupt snapshot: postings[3]: bad roaring bitmap",
    ),
    (
        "posting empty",
        lambda d: with_list(d, "postings", 0, roaring([])),
        "corrupt snapshot: postings[0]: empty",
    ),
    (
        "posting not live",
        lambda d: with_list(d, "postings", term_at(d, "alpha"), roaring([0, 5])),
        "corrupt snapshot: postings[0]: document 5 is not in docs",
    ),
    (
        "posting above every ordinal",
        lambda d: with_list(d, "postings", term_at(d, "alpha"), roaring([0, 2**32 - 1])),
        "corrupt snapshot: postings[0]: document 4294967295 is not in docs",
    ),
    (
        "posting fewer than tfs",
        lambda d: with_list(d, "postings", term_at(d, "alpha"), roaring([0])),
        "corrupt snapshot: tfs[0]: 2 frequencies for 1 documents",
    ),
    # tfs
    ("tfs missing", lambda d: without(d, "tfs"), "corrupt snapshot: field 'tfs'"),
    ("tfs nil", lambda d: dict(d, tfs=None), "corrupt snapshot: field 'tfs'"),
    (
        "tfs fewer",
        lambda d: dict(d, tfs=d["tfs"][:-1]),
        "corrupt snapshot: tfs: 8 lists for 9 terms",
    ),
    ("tf list", lambda d: with_list(d, "tfs", 0, [1]), "corrupt snapshot: tfs[0]: not bin"),
    (
        "tf str",
        lambda d: with_list(d, "tfs", 4, "\x01\x00\x00\x00"),
        "corrupt snapshot: tfs[4]: not bin",
    ),
    (
        "tf odd length",
        lambda d: with_list(d, "tfs", 0, d["tfs"][0] + b"\x00"),
        "corrupt snapshot: tfs[0]: length 9 is not a multiple of 4",
    ),
    (
        "tf count",
        lambda d: mix_tfs(d, "beta", [1]),
        "corrupt snapshot: tfs[1]: 1 frequencies for 2 documents",
    ),
    (
        "tf zero",
        lambda d: mix_tfs(d, "beta", [1, 0]),
        "corrupt snapshot: tfs[1]: a frequency is 0",
    ),
    (
        "tf changed",
        lambda d: mix_tfs(d, "beta", [1, 1]),
        "corrupt snapshot: doc_lens: document 3 has length 3, its term frequencies sum to 2",
    ),
    (
        "tf huge",
        lambda d: mix_tfs(d, "beta", [1, 2**32 - 1]),
        "corrupt snapshot: doc_lens: document 3 has length 3, "
        "its term frequencies sum to 4294967296",
    ),
    # vec_docs
    ("vec_docs missing", lambda d: without(d, "vec_docs"), "corrupt snapshot: field 'vec_docs'"),
    ("vec_docs str", lambda d: dict(d, vec_docs="x"), "corrupt snapshot: field 'vec_docs'"),
    (
        "vec_docs garbage",
        lambda d: dict(d, vec_docs=b"\x3a\x30\x00\x00\x01"),
        "corrupt snapshot: vec_docs: bad roaring bitmap",
    ),
    ("vec_docs run containers", run_containers, "corrupt snapshot: vec_docs: bad roaring bitmap"),
    (
        "vec_docs not live",
        lambda d: dict(d, vec_docs=roaring([0, 5, 7])),
        "corrupt snapshot: vec_docs: document 5 is not in docs",
    ),
    (
        "vec_docs more",
        lambda d: dict(d, vec_docs=roaring([0, 3, 7, 4000000000])),
        "corrupt snapshot: vectors: 18 bytes for 4 vectors of dim 3",
    ),
    (
        "vec_docs in dim 0",
        lambda d: dict(d, dim=0),
        "corrupt snapshot: vec_docs: not empty in an index of dim 0",
    ),
    # vectors
    ("vectors missing", lambda d: without(d, "vectors"), "corrupt snapshot: field 'vectors'"),
    ("vectors list", lambda d: dict(d, vectors=[1, 2, 3]), "corrupt snapshot: field 'vectors'"),
    (
        "vectors short",
        lambda d: dict(d, vectors=d["vectors"][:-2]),
        "corrupt snapshot: vectors: 16 bytes for 3 vectors of dim 3",
    ),
    (
        "vectors odd",
        lambda d: dict(d, vectors=d["vectors"] + b"\x00"),
        "corrupt snapshot: vectors: 19 bytes for 3 vectors of dim 3",
    ),
    (
        "vectors without vec_docs",
        lambda d: dict(d, vec_docs=roaring([])),
        "corrupt snapshot: vectors: 18 bytes for 0 vectors of dim 3",
    ),
    (
        "vector zero",
        lambda d: dict(d, vectors=d["vectors"][:6] + i16s([0, 0, 0]) + d["vectors"][12:]),
        "corrupt snapshot: vectors: vector of document 7 is all zeros",
    ),
    # hnsw
    ("hnsw str", lambda d: dict(d, hnsw="graph"), "corrupt snapshot: field 'hnsw'"),
    ("hnsw false", lambda d: dict(d, hnsw=False), "corrupt snapshot: field 'hnsw'"),
    ("hnsw list", lambda d: dict(d, hnsw=[]), "corrupt snapshot: field 'hnsw'"),
    ("hnsw garbage", lambda d: dict(d, hnsw=b"not a graph"), "corrupt snapshot: hnsw: header"),
    ("hnsw empty", lambda d: dict(d, hnsw=b""), "corrupt snapshot: hnsw: header"),
    (
        "hnsw in dim 0",
        lambda d: dict(d, dim=0, vec_docs=roaring([]), vectors=b"", hnsw=b"x"),
        "corrupt snapshot: hnsw: a graph in an index of dim 0",
    ),
]

# Damage that still loads (to the same index on both).
HARMLESS: list[tuple[str, Callable[[Doc], Doc]]] = [
    ("unknown key", lambda d: dict(d, extra=[1, {"a": b"x"}])),
    ("bin key named like a field", lambda d: {**d, b"dim": "x"}),  # type: ignore[dict-item]
    ("unicode other", lambda d: dict(d, unicode=None)),
    ("unicode missing", lambda d: without(d, "unicode")),
    ("hnsw missing", lambda d: without(d, "hnsw")),
    ("version float", lambda d: dict(d, version=float(SNAPSHOT_VERSION))),
]


@pytest.mark.parametrize(("case", "mutate", "message"), CASES, ids=[c[0] for c in CASES])
def test_each_damaged_field_is_refused_with_its_message(
    kernel: Kernel, case: str, mutate: Callable[[Doc], Doc], message: str
) -> None:
    doc = msgpack.unpackb(base_index(kernel).to_bytes())
    assert doc["terms"] == sorted(doc["terms"], key=str.encode) and len(doc["terms"]) == 9
    assert outcome(kernel, pack(mutate(doc))) == f"SnapshotError: {message}"


def test_the_cases_agree_across_backends(both_kernels: tuple[Kernel, Kernel]) -> None:
    rust, py = both_kernels
    data = base_index(py).to_bytes()
    assert base_index(rust).to_bytes() == data
    doc = msgpack.unpackb(data)
    for case, mutate, message in CASES:
        bad = pack(mutate(doc))
        assert [outcome(k, bad) for k in both_kernels] == [f"SnapshotError: {message}"] * 2, case
    for case, mutate in HARMLESS:
        good = pack(mutate(doc))
        assert [outcome(k, good) for k in both_kernels] == [data.hex()] * 2, case


def foreign_graph(doc: Doc, scalar: str, metric: str) -> bytes:
    """A usearch graph built directly over the snapshot's vectors and keys."""
    from usearch.index import Index

    ords = np.array(list(BitMap.deserialize(doc["vec_docs"])), dtype=np.uint64)
    mat = np.frombuffer(doc["vectors"], dtype="<i2").reshape(len(ords), doc["dim"])
    graph = Index(ndim=doc["dim"], metric=metric, dtype=scalar)
    graph.add(ords, mat.astype(np.float32) / np.float32(DENSE_SCALE), threads=1)
    return bytes(graph.save())


def test_a_damaged_graph_is_refused_alike(both_kernels: tuple[Kernel, Kernel]) -> None:
    rust, py = both_kernels
    data = graph_index(py).to_bytes()
    doc = msgpack.unpackb(data)
    graph = doc["hnsw"]
    other = msgpack.unpackb(graph_index(rust).to_bytes())["hnsw"]
    small = msgpack.unpackb(base_index(py).to_bytes())
    cases = [
        (graph[:-1], "hnsw: body"),
        (graph[:40], "hnsw: header"),
        (other[: len(other) // 2], "hnsw: body"),
    ]
    mismatch = "hnsw: does not match the vectors"
    # One vector fewer than the graph holds; vectors of another dimension.
    cases.append((dict(doc, vec_docs=roaring(range(11)), vectors=doc["vectors"][:-4]), mismatch))
    cases.append((dict(doc, dim=3, vectors=doc["vectors"] + doc["vectors"][:24]), mismatch))
    for value, message in cases:
        bad = pack(value) if isinstance(value, dict) else pack(dict(doc, hnsw=value))
        want = f"SnapshotError: corrupt snapshot: {message}"
        assert [outcome(k, bad) for k in both_kernels] == [want] * 2, message
    # A graph of other vectors (the base index has 3 vectors of dim 3).
    bad = pack(dict(small, hnsw=graph))
    assert [outcome(k, bad) for k in both_kernels] == [
        f"SnapshotError: corrupt snapshot: {mismatch}"
    ] * 2
    # The same vectors and keys in a graph of another scalar type (snapshot version 1 held f32
    # graphs) or another metric.
    for scalar, metric in (("f32", "ip"), ("bf16", "ip"), (HNSW_SCALAR, "cos")):
        bad = pack(dict(doc, hnsw=foreign_graph(doc, scalar, metric)))
        want = f"SnapshotError: corrupt snapshot: {mismatch}"
        assert [outcome(k, bad) for k in both_kernels] == [want] * 2, (scalar, metric)
    assert not outcome(py, pack(dict(doc, hnsw=foreign_graph(doc, HNSW_SCALAR, "ip")))).startswith(
        "SnapshotError"
    )
    # Both load either backend's graph, and an empty graph over no vectors.
    for loaded in (data, pack(dict(doc, hnsw=other))):
        assert outcome(rust, loaded) == outcome(py, loaded)
        assert not outcome(py, loaded).startswith("SnapshotError")


# -- random damage ---------------------------------------------------------------------------

FIELDS = [
    "format", "version", "contract", "tokenizer", "unicode", "docs", "doc_lens", "terms",
    "postings", "tfs", "dim", "vec_docs", "vectors", "hnsw", "extra",
]  # fmt: skip

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.sampled_from([0, 1, 2, 3, 4, 4096, 4097, -1, 2**32 - 1, 2**32]),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.binary(max_size=24),
)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4), max_leaves=8)
ordinal_sets = st.lists(
    st.one_of(st.sampled_from(ORDINALS), st.integers(0, 2**32 - 1), st.integers(0, 70)),
    max_size=8,
)


@st.composite
def damaged(draw: st.DrawFn, doc: Doc) -> Doc:
    """``doc`` with one to three fields damaged, the msgpack kept valid."""
    out = dict(doc)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(FIELDS))
        old = out.get(key)
        kind = draw(st.sampled_from(["value", "delete", "bytes", "bitmap", "u32s", "item"]))
        if kind == "delete":
            out.pop(key, None)
        elif kind == "bytes" and isinstance(old, bytes):
            data = bytearray(old)
            op = draw(st.sampled_from(["flip", "cut", "grow"]))
            if op == "flip" and data:
                i = draw(st.integers(0, len(data) - 1))
                data[i] = draw(st.sampled_from([0, 1, 0xFF, data[i] ^ 1, data[i] ^ 0x80]))
            elif op == "cut" and data:
                del data[draw(st.integers(0, len(data) - 1)) :]
            else:
                data += draw(st.binary(min_size=1, max_size=4))
            out[key] = bytes(data)
        elif kind == "bitmap":
            out[key] = roaring(draw(ordinal_sets))
        elif kind == "u32s":
            out[key] = u32s(draw(st.lists(st.integers(0, 2**32 - 1), max_size=6)))
        elif kind == "item" and isinstance(old, list) and old:
            items = list(old)
            i = draw(st.integers(0, len(items) - 1))
            op = draw(st.sampled_from(["set", "drop", "swap", "dup", "tfs", "bitmap"]))
            if op == "set":
                items[i] = draw(values)
            elif op == "drop":
                del items[i]
            elif op == "swap":
                j = draw(st.integers(0, len(items) - 1))
                items[i], items[j] = items[j], items[i]
            elif op == "dup":
                items.insert(i, items[i])
            elif op == "tfs":
                items[i] = u32s(draw(st.lists(st.integers(0, 4), max_size=4)))
            else:
                items[i] = roaring(draw(ordinal_sets))
            out[key] = items
        else:
            out[key] = draw(values)
    return out


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_random_damage_loads_alike_or_is_refused_alike(
    both_kernels: tuple[Kernel, Kernel], data: st.DataObject
) -> None:
    base = msgpack.unpackb(base_index(both_kernels[1]).to_bytes())
    doc = data.draw(damaged(base))
    snapshot = pack(doc)
    got = [outcome(k, snapshot) for k in both_kernels]
    assert got[0] == got[1]
    assert "Error:" not in got[0].removeprefix("SnapshotError:")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_damage_to_a_graph_snapshot(
    both_kernels: tuple[Kernel, Kernel], data: st.DataObject
) -> None:
    base = msgpack.unpackb(graph_snapshot())
    snapshot = pack(data.draw(damaged(base)))
    rust, py = (outcome(k, snapshot) for k in both_kernels)
    assert rust == py
