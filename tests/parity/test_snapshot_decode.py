"""Snapshots are decoded in place (no value tree, no copy of the big fields) and encoded without
a packer buffer: the bytes stay exactly what msgpack writes, and a damaged snapshot is refused
with the same message by both kernels, whatever the damage."""

from __future__ import annotations

from typing import Any

import msgpack
from memwire._kernel.contract import Kernel
from memwire._kernel.pure._generated import SNAPSHOT_VERSION
from memwire._kernel.vectors import quantize
from memwire.errors import SnapshotError


def outcome(kern: Kernel, data: bytes) -> str:
    try:
        return repr(kern.BankIndex.from_bytes(data).stats())
    except SnapshotError as exc:
        return f"SnapshotError: {exc}"


def agree(both_kernels: tuple[Kernel, Kernel], data: bytes) -> str:
    rust, py = (outcome(k, data) for k in both_kernels)
    assert rust == py, data.hex()
    return rust


def sample(kern: Kernel, n: int = 40, dim: int = 3) -> Any:
    index = kern.BankIndex(dim)
    words = ["alpha", "beta", "東京都", "src/main.rs", "café"]
    texts = [" ".join(words[: 1 + i % 5]) + f" w{i}" for i in range(n)]
    vectors = [quantize([1.0 + i, -2.0, 0.5 * i]) if i % 3 else None for i in range(n)]
    index.add_many(list(range(0, 2 * n, 2)), texts, vectors)
    return index


def test_bytes_are_what_msgpack_writes(both_kernels: tuple[Kernel, Kernel]) -> None:
    # 300 vectors of 256 int16 need a bin32 header; 200 terms need array16 headers.
    import numpy as np

    rng = np.random.default_rng(3)
    outs = []
    for kern in both_kernels:
        index = kern.BankIndex(256)
        vectors = [quantize(v) for v in rng.standard_normal((300, 256))]
        rng = np.random.default_rng(3)
        index.add_many(list(range(300)), [f"t{i} shared" for i in range(300)], vectors)
        outs.append(index.to_bytes())
        empty = kern.BankIndex(0).to_bytes()
        assert msgpack.packb(msgpack.unpackb(empty), use_bin_type=True) == empty
    assert outs[0] == outs[1]
    assert msgpack.packb(msgpack.unpackb(outs[0]), use_bin_type=True) == outs[0]


def test_every_truncation_and_trailing_byte_is_refused_alike(
    both_kernels: tuple[Kernel, Kernel],
) -> None:
    data = sample(both_kernels[1]).to_bytes()
    assert agree(both_kernels, data).startswith("{")
    for end in range(len(data)):
        assert agree(both_kernels, data[:end]) == "SnapshotError: not a memwire index snapshot"
    assert agree(both_kernels, data + b"\x00").endswith("not a memwire index snapshot")


def test_every_damaged_byte_gives_the_same_outcome(both_kernels: tuple[Kernel, Kernel]) -> None:
    """Damage that breaks the msgpack and damage inside a field alike: the same message from
    both, or the same index (tests/parity/test_snapshot_fields.py goes field by field)."""
    data = sample(both_kernels[1], n=12).to_bytes()
    for pos in range(len(data)):
        for byte in (0xC1, 0xFF, 0x00, data[pos] ^ 0x01):
            bad = data[:pos] + bytes((byte,)) + data[pos + 1 :]
            rust, py = (loaded(k, bad) for k in both_kernels)
            assert rust == py, (pos, byte)


def loaded(kern: Kernel, data: bytes) -> str:
    try:
        return kern.BankIndex.from_bytes(data).to_bytes().hex()
    except SnapshotError as exc:
        return f"SnapshotError: {exc}"


def test_structure_rules_follow_python_msgpack(both_kernels: tuple[Kernel, Kernel]) -> None:
    doc = msgpack.unpackb(sample(both_kernels[1]).to_bytes())

    def pack(d: dict[Any, Any]) -> bytes:
        return msgpack.packb(d, use_bin_type=True)  # type: ignore[no-any-return]

    ok = agree(both_kernels, pack(doc))
    # Key order does not matter; a later duplicate wins; bin keys are kept apart from str keys.
    assert agree(both_kernels, pack(dict(reversed(doc.items())))) == ok
    items = [*doc.items(), ("dim", "x")]
    dup = b"\xde" + len(items).to_bytes(2, "big") + b"".join(pack(k) + pack(v) for k, v in items)
    assert agree(both_kernels, dup) == "SnapshotError: corrupt snapshot: field 'dim'"
    assert agree(both_kernels, pack(dict(doc, **{"unicode": {b"k": 1}}))) == ok
    assert agree(both_kernels, pack(dict(doc, **{"unicode": {1: 1}}))).endswith("snapshot")

    def with_raw_unicode(value: bytes) -> bytes:
        items = {k: v for k, v in doc.items() if k != "unicode"}
        head = pack(items)
        return bytes((head[0] + 1,)) + head[1:] + pack("unicode") + value

    assert agree(both_kernels, with_raw_unicode(b"\x91" * 1023 + b"\x01")) == ok
    assert agree(both_kernels, with_raw_unicode(b"\x91" * 1024 + b"\x01")).endswith("snapshot")
    assert agree(both_kernels, with_raw_unicode(b"\x91" * 1022 + b"\x90")) == ok
    assert agree(both_kernels, with_raw_unicode(b"\x91" * 1023 + b"\x90")).endswith("snapshot")
    timestamp = b"\xd7\xff" + (10**9 << 34).to_bytes(8, "big")  # nanoseconds out of range
    assert agree(both_kernels, with_raw_unicode(timestamp)).endswith("not a memwire index snapshot")
    assert agree(both_kernels, with_raw_unicode(b"\xd6\xff" + bytes(4))) == ok
    assert agree(both_kernels, pack(dict(doc, unicode=msgpack.ExtType(5, b"ab")))) == ok
    bad_utf8 = pack(dict(doc, unicode="ab")).replace(b"\xa2ab", b"\xa2\xff\xfe")
    assert agree(both_kernels, bad_utf8) == "SnapshotError: not a memwire index snapshot"
    assert agree(both_kernels, pack([doc])) == "SnapshotError: not a memwire index snapshot"
    assert agree(both_kernels, pack(dict(doc, format=b"memwire.index"))).endswith("snapshot")
    assert agree(both_kernels, pack(dict(doc, version=float(SNAPSHOT_VERSION)))) == ok
    assert agree(both_kernels, pack(dict(doc, version=str(SNAPSHOT_VERSION)))) == (
        f"SnapshotError: unsupported snapshot version {SNAPSHOT_VERSION}"
    )
    for key in ("docs", "doc_lens", "vectors", "vec_docs", "terms", "dim"):
        assert agree(both_kernels, pack(dict(doc, **{key: "x"}))).startswith(
            "SnapshotError: corrupt snapshot"
        )
    assert agree(both_kernels, pack({k: v for k, v in doc.items() if k != "hnsw"})) == ok
