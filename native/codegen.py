#!/usr/bin/env python3
"""Write the kernel tables of both backends from one source.

Inputs: native/constants.toml and the pinned Unicode Character Database in native/ucd/.
Outputs: rust/memwire-core/src/generated.rs, python/memwire/_kernel/pure/_generated.py (tables)
and python/memwire/_kernel/constants.py (the scalar constants, imported by the tables module).

    python native/codegen.py           # (re)write both files
    python native/codegen.py --check   # exit 1 if either file differs from what would be written

The tables are derived only from the pinned UCD files, never from the running interpreter's
`unicodedata` or the compiler's `char` methods: those follow whatever Unicode version ships with
them, and the two backends would drift apart (docs/parity.md, "Tokenizer").
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
UCD = ROOT / "native" / "ucd"
RUST_OUT = ROOT / "rust" / "memwire-core" / "src" / "generated.rs"
PY_OUT = ROOT / "python" / "memwire" / "_kernel" / "pure" / "_generated.py"
# The scalar constants alone, small enough that importing them costs nothing (the tables of
# PY_OUT take ~0.15 s to load): what code outside the kernel imports, via _kernel.contract.
PY_CONSTANTS_OUT = ROOT / "python" / "memwire" / "_kernel" / "constants.py"

SEP, WORD, CJK, JOIN = 0, 1, 2, 3
# Bases whose accents are folded away: Latin, Greek and Cyrillic (incl. their extended blocks).
STRIP_BASE_RANGES = ((0x0000, 0x052F), (0x1E00, 0x1FFF))
# Overrides of the full case folding, applied before accent stripping. U+0130 (capital I with
# dot above) folds to "i" + U+0307 in CaseFolding.txt; folding it to plain "i" keeps Turkish
# words findable from ASCII queries.
FOLD_OVERRIDES = {0x0130: "i"}
MAX_CP = 0x10FFFF


def _lines(name: str) -> list[list[str]]:
    with gzip.open(UCD / f"{name}.txt.gz", "rt", encoding="utf-8") as fh:
        rows = []
        for raw in fh:
            line = raw.split("#", 1)[0].strip()
            if line:
                rows.append([field.strip() for field in line.split(";")])
        return rows


def _range(field: str) -> range:
    if ".." in field:
        lo, hi = field.split("..")
        return range(int(lo, 16), int(hi, 16) + 1)
    return range(int(field, 16), int(field, 16) + 1)


class Ucd:
    """The parts of the pinned UCD the tables are built from."""

    def __init__(self) -> None:
        (
            self.category,
            self.decomposition,
            self.script,
            self.ignorable,
            self.folding,
            self.lowercase,
        ) = load_ucd()

    def full_decomposition(self, cp: int) -> list[int]:
        if 0xAC00 <= cp <= 0xD7A3:  # Hangul syllables decompose algorithmically (Unicode ch. 3.12)
            index = cp - 0xAC00
            lead, vowel, trail = 0x1100 + index // 588, 0x1161 + (index % 588) // 28, index % 28
            return [lead, vowel] + ([0x11A7 + trail] if trail else [])
        if cp not in self.decomposition:
            return [cp]
        out: list[int] = []
        for c in self.decomposition[cp]:
            out.extend(self.full_decomposition(c))
        return out


def load_ucd() -> tuple[
    dict[int, str], dict[int, list[int]], dict[int, str], set[int], dict[int, str], dict[int, int]
]:
    """Category, canonical decomposition, script, default-ignorables, case folding, lowercase."""
    category: dict[int, str] = {}
    decomposition: dict[int, list[int]] = {}
    lowercase: dict[int, int] = {}
    first: int | None = None
    for row in _lines("UnicodeData"):
        cp, name, cat = int(row[0], 16), row[1], row[2]
        if name.endswith(", First>"):
            first = cp
            continue
        if name.endswith(", Last>"):
            assert first is not None
            for c in range(first, cp + 1):
                category[c] = cat
            first = None
            continue
        category[cp] = cat
        if row[13]:
            lowercase[cp] = int(row[13], 16)
        decomp = row[5]
        if decomp and not decomp.startswith("<"):
            decomposition[cp] = [int(x, 16) for x in decomp.split()]
    script: dict[int, str] = {}
    for row in _lines("Scripts"):
        for cp in _range(row[0]):
            script[cp] = row[1]
    ignorable: set[int] = set()
    for row in _lines("DerivedCoreProperties"):
        if row[1] == "Default_Ignorable_Code_Point":
            ignorable.update(_range(row[0]))
    folding: dict[int, str] = {}
    for row in _lines("CaseFolding"):
        cp, status, mapping = int(row[0], 16), row[1], row[2]
        if status in ("C", "F"):
            folding[cp] = "".join(chr(int(x, 16)) for x in mapping.split())
    return category, decomposition, script, ignorable, folding, lowercase


def build_tables(ucd: Ucd, constants: dict) -> tuple[list[tuple[int, int, int]], dict[int, str]]:
    category, script, ignorable, folding = ucd.category, ucd.script, ucd.ignorable, ucd.folding
    full_decomposition = ucd.full_decomposition
    tok = constants["tokenizer"]
    joiners = {ord(c) for c in tok["joiners"]}
    cjk_extra = set(tok["cjk_extra"])
    cjk_scripts = set(tok["cjk_scripts"])

    def strip(cp: int) -> str:
        parts = full_decomposition(cp)
        base, marks = parts[0], parts[1:]
        if (
            marks
            and any(lo <= base <= hi for lo, hi in STRIP_BASE_RANGES)
            and all(category.get(m) == "Mn" for m in marks)
        ):
            return chr(base)
        return chr(cp)

    def fold_once(cp: int) -> str:
        if cp in ignorable:
            return ""
        folded = FOLD_OVERRIDES.get(cp, folding.get(cp, chr(cp)))
        return "".join(strip(ord(c)) for c in folded)

    fold: dict[int, str] = {}
    for cp in range(MAX_CP + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        out = fold_once(cp)
        for _ in range(4):  # reach a fixpoint: folding a folded string changes nothing
            nxt = "".join(fold_once(ord(c)) for c in out)
            if nxt == out:
                break
            out = nxt
        else:
            raise SystemExit(f"case folding of U+{cp:04X} does not converge")
        if out != chr(cp):
            fold[cp] = out

    def char_class(cp: int) -> int:
        if cp in joiners:
            return JOIN
        cat = category.get(cp, "Cn")
        if cat[0] in "LNM":
            if cp in cjk_extra or script.get(cp) in cjk_scripts:
                return CJK
            return WORD
        return SEP

    ranges: list[tuple[int, int, int]] = []
    for cp in range(MAX_CP + 1):
        cls = char_class(cp)
        if cls == SEP:
            continue
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == cls:
            ranges[-1] = (ranges[-1][0], cp, cls)
        else:
            ranges.append((cp, cp, cls))
    return ranges, fold


# BERT's "Chinese character" blocks (isolated as words by the BERT pre-tokenizer).
BERT_CJK = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)
EMB_SPACE, EMB_DROP, EMB_PUNCT, EMB_CJK = 1, 2, 3, 4


def build_embed_tables(ucd: Ucd) -> tuple[list[tuple[int, int, int]], dict[int, str]]:
    """Tables of the static embedder's BERT-style (uncased) WordPiece pre-processing."""

    def cls(cp: int) -> int:
        cat = ucd.category.get(cp, "Cn")
        if cp in (0x09, 0x0A, 0x0D) or cat == "Zs":
            return EMB_SPACE
        if cp in (0, 0xFFFD) or cat in ("Cc", "Cf"):
            return EMB_DROP
        if (33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126) or cat[
            0
        ] == "P":
            return EMB_PUNCT
        if any(lo <= cp <= hi for lo, hi in BERT_CJK):
            return EMB_CJK
        return 0

    ranges: list[tuple[int, int, int]] = []
    fold: dict[int, str] = {}
    for cp in range(MAX_CP + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = cls(cp)
        if c:
            if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == c:
                ranges[-1] = (ranges[-1][0], cp, c)
            else:
                ranges.append((cp, cp, c))
        # Uncased BERT: lowercase, then decompose (NFD) and drop the non-spacing marks.
        lower = ucd.lowercase.get(cp, cp)
        out = "".join(chr(x) for x in ucd.full_decomposition(lower) if ucd.category.get(x) != "Mn")
        if out != chr(cp):
            fold[cp] = out
    return ranges, fold


HEADER = "generated by native/codegen.py from native/constants.toml and native/ucd/; do not edit"


def _py_str(s: str) -> str:
    out = []
    for ch in s:
        cp = ord(ch)
        if 0x20 <= cp < 0x7F and ch not in '\\"':
            out.append(ch)
        elif cp <= 0xFFFF:
            out.append(f"\\u{cp:04x}")
        else:
            out.append(f"\\U{cp:08x}")
    return '"' + "".join(out) + '"'


def _rs_str(s: str) -> str:
    out = []
    for ch in s:
        cp = ord(ch)
        if 0x20 <= cp < 0x7F and ch not in '\\"':
            out.append(ch)
        else:
            out.append(f"\\u{{{cp:x}}}")
    return '"' + "".join(out) + '"'


# The graph scalar types both kernels map to a usearch ScalarKind.
HNSW_SCALARS = ("f32", "f16", "bf16", "i8")


def _hnsw_scalar(dense: dict) -> str:
    scalar = dense["hnsw_scalar"]
    if scalar not in HNSW_SCALARS:
        raise SystemExit(f"dense.hnsw_scalar must be one of {HNSW_SCALARS}, got {scalar!r}")
    return str(scalar)


def _limits(c: dict) -> tuple[int, int]:
    """(max_ordinal, max_dim), checked: the kernels' types fix the one, sanity the other."""
    limits = c["limits"]
    max_ordinal, max_dim = limits["max_ordinal"], limits["max_dim"]
    if max_ordinal != 2**32 - 1:
        raise SystemExit(
            "limits.max_ordinal must be 4294967295: ordinals are u32 in both kernels and in "
            f"the snapshot's roaring bitmaps, got {max_ordinal!r}"
        )
    if isinstance(max_dim, bool) or not isinstance(max_dim, int) or max_dim < 1:
        raise SystemExit(f"limits.max_dim must be a positive integer, got {max_dim!r}")
    return max_ordinal, max_dim


def _rs_f64(x: float) -> str:
    text = repr(float(x))
    return text if ("." in text or "e" in text) else text + ".0"


def _python_scalars(c: dict) -> list[tuple[str, str]]:
    """(name, Python literal) of every scalar constant, in file order."""
    tok, fusion, dense, snap = c["tokenizer"], c["fusion"], c["dense"], c["snapshot"]
    max_ordinal, max_dim = _limits(c)
    return [
        ("CONTRACT_VERSION", str(c["contract"]["version"])),
        ("UNICODE_VERSION", _py_str(c["unicode"]["version"])),
        ("MAX_ORDINAL", str(max_ordinal)),
        ("MAX_DIM", str(max_dim)),
        ("TOKENIZER_VERSION", str(tok["version"])),
        ("MAX_TOKEN_CHARS", str(tok["max_token_chars"])),
        ("BM25_K1", repr(float(c["bm25"]["k1"]))),
        ("BM25_B", repr(float(c["bm25"]["b"]))),
        ("RRF_K", repr(float(fusion["rrf_k"]))),
        ("DEFAULT_WEIGHTS", f"({', '.join(repr(float(w)) for w in fusion['default_weights'])})"),
        ("DEFAULT_DEPTH", str(fusion["default_depth"])),
        ("CHARS_PER_TOKEN", str(c["budget"]["chars_per_token"])),
        ("TRUNCATION_MARKER", _py_str(c["budget"]["truncation_marker"])),
        ("PACK_CHARS", str(c["pack"]["chars"])),
        ("PACK_TERMS_CACHED", str(c["pack"]["terms_cached"])),
        ("PACK_TERMS_CACHED_WORDS", str(c["pack"]["terms_cached_words"])),
        ("DENSE_SCALE", str(dense["scale"])),
        ("DENSE_EXACT_MAX", str(dense["exact_max"])),
        ("DENSE_SIGN_CANDIDATES", str(dense["sign_candidates"])),
        ("DENSE_SIGN_RESCORED", str(dense["sign_rescored"])),
        ("DENSE_GRAPH_MIN", str(dense["graph_min"])),
        ("HNSW_OVERSAMPLE", str(dense["hnsw_oversample"])),
        ("HNSW_CONNECTIVITY", str(dense["hnsw_connectivity"])),
        ("HNSW_EXPANSION_ADD", str(dense["hnsw_expansion_add"])),
        ("HNSW_EXPANSION_SEARCH", str(dense["hnsw_expansion_search"])),
        ("HNSW_SCALAR", _py_str(_hnsw_scalar(dense))),
        ("SNAPSHOT_FORMAT", _py_str(snap["format"])),
        ("SNAPSHOT_VERSION", str(snap["version"])),
        ("EMBED_MAX_WORD_CHARS", str(c["embed"]["max_word_chars"])),
        ("EMBED_SUBWORD_PREFIX", _py_str(c["embed"]["subword_prefix"])),
        ("EMBED_UNK", _py_str(c["embed"]["unk"])),
    ]


def render_python_constants(c: dict) -> str:
    lines = [
        f"# {HEADER}",
        '"""The scalar constants of the kernel contract (docs/parity.md), without its tables."""',
        "",
        *[f"{name} = {value}" for name, value in _python_scalars(c)],
        "",
    ]
    return "\n".join(lines)


def render_python(
    c: dict,
    ranges: list[tuple[int, int, int]],
    fold: dict[int, str],
    emb_ranges: list[tuple[int, int, int]],
    emb_fold: dict[int, str],
) -> str:
    tok = c["tokenizer"]
    scalars = _python_scalars(c)
    lines = [
        f"# {HEADER}",
        '"""Constants and Unicode tables of the kernel contract (see docs/parity.md)."""',
        "",
        "from memwire._kernel.constants import (",
        *[f"    {name} as {name}," for name, _ in scalars],
        ")",
        "",
        f"JOINERS = {_py_str(tok['joiners'])}",
        "STOPWORDS = frozenset(",
        "    (",
        *[f"        {_py_str(w)}," for w in sorted(tok["stopwords"])],
        "    )",
        ")",
        "",
        "# Character classes: 0 separator (not listed), 1 word, 2 CJK, 3 joiner.",
        "# (first, last, class), inclusive, sorted, non-overlapping.",
        "CLASS_RANGES: tuple[tuple[int, int, int], ...] = (",
        *[f"    (0x{lo:04X}, 0x{hi:04X}, {cls})," for lo, hi, cls in ranges],
        ")",
        "",
        "# Static embedder pre-processing: 1 whitespace, 2 dropped, 3 punctuation, 4 CJK",
        "# ideograph; absent code points are ordinary word characters.",
        "EMBED_CLASS_RANGES: tuple[tuple[int, int, int], ...] = (",
        *[f"    (0x{lo:04X}, 0x{hi:04X}, {cls})," for lo, hi, cls in emb_ranges],
        ")",
        "# Code point -> lowercased, decomposed, non-spacing marks removed (absent: unchanged).",
        "EMBED_FOLD: dict[int, str] = {",
        *[f"    0x{cp:04X}: {_py_str(t)}," for cp, t in sorted(emb_fold.items())],
        "}",
        "",
        "# Code point -> its folded form (full case folding, accents of Latin/Greek/Cyrillic",
        "# removed, default-ignorables deleted); code points that fold to themselves are absent.",
        "FOLD: dict[int, str] = {",
        *[f"    0x{cp:04X}: {_py_str(s)}," for cp, s in sorted(fold.items())],
        "}",
        "",
    ]
    return "\n".join(lines)


def render_rust(
    c: dict,
    ranges: list[tuple[int, int, int]],
    fold: dict[int, str],
    emb_ranges: list[tuple[int, int, int]],
    emb_fold: dict[int, str],
) -> str:
    tok, fusion, dense, snap = c["tokenizer"], c["fusion"], c["dense"], c["snapshot"]
    stop = sorted(tok["stopwords"])
    max_ordinal, max_dim = _limits(c)
    lines = [
        f"// {HEADER}",
        "//! Constants and Unicode tables of the kernel contract (see docs/parity.md).",
        "",
        f"pub const CONTRACT_VERSION: u32 = {c['contract']['version']};",
        f"pub const UNICODE_VERSION: &str = {_rs_str(c['unicode']['version'])};",
        "/// Ordinals are `0..=MAX_ORDINAL` (`u32::MAX`: codegen admits no other value).",
        f"pub const MAX_ORDINAL: u32 = {max_ordinal};",
        f"pub const MAX_DIM: usize = {max_dim};",
        f"pub const TOKENIZER_VERSION: u32 = {tok['version']};",
        f"pub const MAX_TOKEN_CHARS: usize = {tok['max_token_chars']};",
        f"pub const JOINERS: &str = {_rs_str(tok['joiners'])};",
        "/// Sorted by byte order, for binary search.",
        f"pub static STOPWORDS: [&str; {len(stop)}] = [",
        *[f"    {_rs_str(w)}," for w in sorted(stop, key=lambda w: w.encode())],
        "];",
        "/// Membership in STOPWORDS as one `match`: the compiler makes it a decision tree on",
        "/// length and bytes, several times faster than a binary search over strings.",
        "#[rustfmt::skip]",
        "pub fn is_stopword(token: &str) -> bool {",
        "    matches!(",
        "        token,",
        *[
            f"        {_rs_str(w)}{' |' if i + 1 < len(stop) else ''}"
            for i, w in enumerate(sorted(stop, key=lambda w: w.encode()))
        ],
        "    )",
        "}",
        f"pub const BM25_K1: f64 = {_rs_f64(c['bm25']['k1'])};",
        f"pub const BM25_B: f64 = {_rs_f64(c['bm25']['b'])};",
        f"pub const RRF_K: f64 = {_rs_f64(fusion['rrf_k'])};",
        "pub const DEFAULT_WEIGHTS: [f64; 3] = ["
        + ", ".join(_rs_f64(w) for w in fusion["default_weights"])
        + "];",
        f"pub const DEFAULT_DEPTH: usize = {fusion['default_depth']};",
        f"pub const CHARS_PER_TOKEN: usize = {c['budget']['chars_per_token']};",
        f"pub const TRUNCATION_MARKER: &str = {_rs_str(c['budget']['truncation_marker'])};",
        f"pub const PACK_CHARS: usize = {c['pack']['chars']};",
        f"pub const PACK_TERMS_CACHED: usize = {c['pack']['terms_cached']};",
        f"pub const PACK_TERMS_CACHED_WORDS: usize = {c['pack']['terms_cached_words']};",
        f"pub const DENSE_SCALE: i32 = {dense['scale']};",
        f"pub const DENSE_EXACT_MAX: usize = {dense['exact_max']};",
        f"pub const DENSE_SIGN_CANDIDATES: usize = {dense['sign_candidates']};",
        f"pub const DENSE_SIGN_RESCORED: usize = {dense['sign_rescored']};",
        f"pub const DENSE_GRAPH_MIN: usize = {dense['graph_min']};",
        f"pub const HNSW_OVERSAMPLE: usize = {dense['hnsw_oversample']};",
        f"pub const HNSW_CONNECTIVITY: usize = {dense['hnsw_connectivity']};",
        f"pub const HNSW_EXPANSION_ADD: usize = {dense['hnsw_expansion_add']};",
        f"pub const HNSW_EXPANSION_SEARCH: usize = {dense['hnsw_expansion_search']};",
        f"pub const HNSW_SCALAR: &str = {_rs_str(_hnsw_scalar(dense))};",
        f"pub const SNAPSHOT_FORMAT: &str = {_rs_str(snap['format'])};",
        f"pub const SNAPSHOT_VERSION: u32 = {snap['version']};",
        "",
        "pub const CLASS_SEP: u8 = 0;",
        "pub const CLASS_WORD: u8 = 1;",
        "pub const CLASS_CJK: u8 = 2;",
        "pub const CLASS_JOIN: u8 = 3;",
        "",
        "/// (first, last, class), inclusive, sorted, disjoint; absent code points are separators.",
        "#[rustfmt::skip]",
        "pub static CLASS_RANGES: &[(u32, u32, u8)] = &[",
        *[f"    (0x{lo:04X}, 0x{hi:04X}, {cls})," for lo, hi, cls in ranges],
        "];",
        "",
        "/// Static embedder classes: 1 whitespace, 2 dropped, 3 punctuation, 4 CJK ideograph.",
        "#[rustfmt::skip]",
        "pub static EMBED_CLASS_RANGES: &[(u32, u32, u8)] = &[",
        *[f"    (0x{lo:04X}, 0x{hi:04X}, {cls})," for lo, hi, cls in emb_ranges],
        "];",
        f"pub const EMBED_MAX_WORD_CHARS: usize = {c['embed']['max_word_chars']};",
        f"pub const EMBED_SUBWORD_PREFIX: &str = {_rs_str(c['embed']['subword_prefix'])};",
        f"pub const EMBED_UNK: &str = {_rs_str(c['embed']['unk'])};",
        "/// Code point -> lowercased, decomposed, marks (Mn) removed; sorted; absent: unchanged.",
        "#[rustfmt::skip]",
        "pub static EMBED_FOLD: &[(u32, &str)] = &[",
        *[f"    (0x{cp:04X}, {_rs_str(t)})," for cp, t in sorted(emb_fold.items())],
        "];",
        "",
        "/// Code point -> folded form, sorted; code points that fold to themselves are absent.",
        "#[rustfmt::skip]",
        "pub static FOLD: &[(u32, &str)] = &[",
        *[f"    (0x{cp:04X}, {_rs_str(s)})," for cp, s in sorted(fold.items())],
        "];",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    args = parser.parse_args(argv)
    constants = tomllib.loads((ROOT / "native" / "constants.toml").read_text(encoding="utf-8"))
    ucd = Ucd()
    ranges, fold = build_tables(ucd, constants)
    emb_ranges, emb_fold = build_embed_tables(ucd)
    outputs = {
        PY_OUT: render_python(constants, ranges, fold, emb_ranges, emb_fold),
        PY_CONSTANTS_OUT: render_python_constants(constants),
        RUST_OUT: render_rust(constants, ranges, fold, emb_ranges, emb_fold),
    }
    stale = []
    for path, text in outputs.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(path.relative_to(ROOT))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale generated files (run `python native/codegen.py`):", *stale, sep="\n  ")
        return 1
    if args.check:
        print("generated tables are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
