"""Every number of the kernel contract has one source: native/constants.toml.

``native/codegen.py`` writes the constants into ``rust/memwire-core/src/generated.rs`` and
``python/memwire/_kernel/pure/_generated.py``; everything else imports them (Python outside the
kernel through ``memwire._kernel.contract``). This test reads the code of ``python/`` and
``rust/`` (not those two files, not ``target/``) and fails on a hand-written copy:

- a definition of a generated name (``MAX_DIM = 4096``, ``const RRF_K: f64 = 60.0``);
- a distinctive value, wherever it is written: in a number (``2**32 - 1`` counts, its value is
  computed), in a string (an error message's ``4096``), or as the default weights' sequence.

Values too common to be told apart from unrelated ones (depth 100, 4 chars per token, the HNSW
connectivity 16...) are covered by the name check only. Comments and docstrings may cite a value.
Tests may too: they state the contract independently on purpose (Python tests live outside
``python/``; Rust unit tests, from ``#[cfg(test)]`` on, are skipped). A legitimate equal value
goes in ``ALLOWED`` with the reason it is not the constant.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import tomllib

pytestmark = pytest.mark.backend_independent  # reads the source

ROOT = Path(__file__).resolve().parent.parent
GENERATED = (
    ROOT / "python" / "memwire" / "_kernel" / "constants.py",
    ROOT / "python" / "memwire" / "_kernel" / "pure" / "_generated.py",
    ROOT / "rust" / "memwire-core" / "src" / "generated.rs",
)
C = tomllib.loads((ROOT / "native" / "constants.toml").read_text(encoding="utf-8"))

# Distinctive numbers, by value (an int or a float literal equal to it).
NUMBERS: dict[float, str] = {
    C["limits"]["max_ordinal"]: "MAX_ORDINAL",
    C["limits"]["max_ordinal"] + 1: "MAX_ORDINAL (+1, the exclusive bound)",
    C["limits"]["max_dim"]: "MAX_DIM",
    C["dense"]["scale"]: "DENSE_SCALE",
    C["dense"]["exact_max"]: "DENSE_EXACT_MAX",
    C["dense"]["graph_min"]: "DENSE_GRAPH_MIN",
}
# Checked as float literals only: as integers they are everyday numbers (a 60 s timeout).
FLOATS: dict[float, str] = {
    float(C["fusion"]["rrf_k"]): "RRF_K",
    float(C["bm25"]["k1"]): "BM25_K1",
    float(C["bm25"]["b"]): "BM25_B",
}
WEIGHTS: tuple[float, ...] = tuple(float(w) for w in C["fusion"]["default_weights"])
# Text found inside any string literal, and text that is a whole string literal.
INSIDE: dict[str, str] = {
    C["budget"]["truncation_marker"]: "TRUNCATION_MARKER",
    C["snapshot"]["format"]: "SNAPSHOT_FORMAT",
    C["unicode"]["version"]: "UNICODE_VERSION",
    C["tokenizer"]["joiners"]: "JOINERS",
}
WHOLE: dict[str, str] = {
    C["embed"]["subword_prefix"]: "EMBED_SUBWORD_PREFIX",
    C["embed"]["unk"]: "EMBED_UNK",
    C["dense"]["hnsw_scalar"]: "HNSW_SCALAR",
}


def _number_text(x: float) -> str:
    """A regex for ``x`` as code or prose writes it: ``4096``, ``20_000``, ``1``/``1.0``."""
    if float(x).is_integer():
        digits = str(int(x))
        grouped = "_?".join(digits[max(0, i - 3) : i] for i in range(len(digits), 0, -3)[::-1])
        return grouped + r"(?:\.0+)?"
    return re.escape(repr(float(x))).replace(r"0\.", r"0?\.")


def _weights_text() -> str:
    return r"\s*,\s*".join(_number_text(w) for w in WEIGHTS)


# Numbers inside strings (messages): a value not part of a longer number.
NUMBER_IN_TEXT = [
    (re.compile(rf"(?<![\w.]){_number_text(v)}(?![\w]|\.\d)"), name) for v, name in NUMBERS.items()
] + [
    (re.compile(r"2\s*\*\*\s*32\b"), "MAX_ORDINAL (2**32)"),
    (re.compile(rf"(?<![\w.]){_weights_text()}(?![\w.])"), "DEFAULT_WEIGHTS"),
]
RUST_WEIGHTS = re.compile(r"\[\s*" + _weights_text() + r"\s*\]")


def _generated_names() -> frozenset[str]:
    names = set()
    for path in GENERATED[:2]:  # the two generated Python modules
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return frozenset(names)


NAMES = _generated_names()
RUST_DEFINITION = re.compile(rf"\b(?:const|static)\s+({'|'.join(sorted(NAMES))})\s*:")

# (file relative to the repository, text of the line, why this equal value is not the constant)
ALLOWED: list[tuple[str, str, str]] = [
    (
        "python/memwire/project.py",
        ", 4096)",
        "bytes read from a file of .git/, not a vector dimension",
    ),
    (
        "python/memwire/hooks/events.py",
        "PROMPT_BUDGET_S = 1.2",
        "seconds of a hook's budget, not BM25's k1",
    ),
    (
        "python/memwire/_text.py",
        "MAX_CONTEXT_CHARS = 20_000",
        "characters of a memory's context, not the dense exact threshold",
    ),
    (
        "python/memwire/server/app.py",
        "TRIM_EVERY_S = 60.0",
        "seconds between the server's heap trims, not RRF's k",
    ),
    (
        "rust/memwire-core/src/snapshot.rs",
        "const ARRAY_MAX: usize = 4096;",
        "the roaring format's array-container limit (native/format.md), not MAX_DIM",
    ),
    (
        "rust/memwire-core/src/dense.rs",
        "=> ScalarKind::I8,",
        "the table mapping every admissible HNSW_SCALAR name to usearch's kind",
    ),
]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    constant: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.constant} written by hand: {self.text.strip()}"


# -- Python ---------------------------------------------------------------------------------


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (module, class and function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0].value if node.body and isinstance(node.body[0], ast.Expr) else None
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                out.add(id(first))
    return out


_OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
}


def _fold(node: ast.AST) -> int | float | None:
    """The value of an expression made only of number literals and arithmetic, else None."""
    if isinstance(node, ast.Constant):
        return node.value if _is_number(node.value) else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _fold(node.operand)
        return None if value is None else (-value if isinstance(node.op, ast.USub) else value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _fold(node.left), _fold(node.right)
        if left is None or right is None:
            return None
        try:
            result: int | float = _OPERATORS[type(node.op)](left, right)
        except (ArithmeticError, ValueError):
            return None
        return result
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text_findings(text: str) -> Iterator[str]:
    for needle, name in INSIDE.items():
        if needle in text:
            yield name
    if text in WHOLE:
        yield WHOLE[text]
    for pattern, name in NUMBER_IN_TEXT:
        if pattern.search(text):
            yield name


def scan_python(source: str) -> Iterator[tuple[int, str]]:
    """(line, constant) of every hand-written copy in Python ``source``."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    inside_folded: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in inside_folded:
            continue
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            value = node.value
            literal = value is not None and all(
                not isinstance(n, (ast.Name, ast.Attribute, ast.Call)) for n in ast.walk(value)
            )
            for t in targets:
                if isinstance(t, ast.Name) and t.id in NAMES and literal:
                    yield line, t.id
        if isinstance(node, (ast.Tuple, ast.List)) and tuple(map(_fold, node.elts)) == WEIGHTS:
            yield line, "DEFAULT_WEIGHTS"
        if isinstance(node, (ast.BinOp, ast.UnaryOp)):
            value = _fold(node)
            if value is not None:
                inside_folded.update(id(n) for n in ast.walk(node))
                if value in NUMBERS:
                    yield line, NUMBERS[value]
                continue
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str) and id(node) not in docstrings:
                for name in _text_findings(node.value):
                    yield line, name
            elif _is_number(node.value):
                if node.value in NUMBERS:
                    yield line, NUMBERS[node.value]
                elif isinstance(node.value, float) and node.value in FLOATS:
                    yield line, FLOATS[node.value]


# -- Rust -----------------------------------------------------------------------------------

_RUST_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)", re.DOTALL)
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if e.startswith("u{"):
            return chr(int(e[2:-1], 16))
        if e.startswith("x"):
            return chr(int(e[1:], 16))
        return _SIMPLE.get(e, "")  # a line continuation (backslash, newline) vanishes

    return _RUST_ESCAPE.sub(one, body)


def lex_rust(source: str) -> tuple[str, list[tuple[int, str]]]:
    """(the code with comments and string contents blanked, [(line, string value)]).

    Enough of Rust's lexical grammar for this test: line and nested block comments, string,
    byte-string and raw-string literals, char literals and lifetimes."""
    code: list[str] = []
    strings: list[tuple[int, str]] = []
    i, n, line = 0, len(source), 1

    def blank(text: str) -> str:
        return re.sub(r"[^\n]", " ", text)

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            code.append(blank(source[i:end]))
            i = end
            continue
        if source.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if source.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif source.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            code.append(blank(source[i:j]))
            line += source.count("\n", i, j)
            i = j
            continue
        raw = re.match(r'b?r(#*)"', source[i:])
        if raw and (i == 0 or not (source[i - 1].isalnum() or source[i - 1] == "_")):
            close = '"' + raw.group(1)
            start = i + raw.end()
            end = source.find(close, start)
            end = n if end < 0 else end
            strings.append((line, source[start:end]))
            j = min(n, end + len(close))
            code.append(source[i:start] + blank(source[start:end]) + source[end:j])
            line += source.count("\n", i, j)
            i = j
            continue
        if c == '"' or (c == "b" and source.startswith('b"', i) and not _ident_before(source, i)):
            start = i + (2 if c == "b" else 1)
            j = start
            while j < n and source[j] != '"':
                j += 2 if source[j] == "\\" else 1
            strings.append((line, _unescape(source[start:j])))
            code.append(source[i:start] + blank(source[start:j]) + '"')
            line += source.count("\n", i, j + 1)
            i = j + 1
            continue
        if c == "'":
            # A char literal ('x', '\n', '\u{2019}') or a lifetime ('a, 'static).
            m = re.match(r"'(\\u\{[0-9a-fA-F]+\}|\\x[0-9a-fA-F]{2}|\\.|[^\\'])'", source[i:])
            if m:
                code.append("'" + " " * (m.end() - 2) + "'")
                i += m.end()
                continue
        code.append(c)
        if c == "\n":
            line += 1
        i += 1
    return "".join(code), strings


def _ident_before(source: str, i: int) -> bool:
    return i > 0 and (source[i - 1].isalnum() or source[i - 1] == "_")


_RUST_NUMBER = re.compile(
    r"(?<![\w.])(\d[\d_]*)(\.\d[\d_]*)?([eE][+-]?\d+)?(?:_?(?:[iu](?:8|16|32|64|128|size)|f32|f64))?(?![\w])"
)


def scan_rust(source: str) -> Iterator[tuple[int, str]]:
    """(line, constant) of every hand-written copy in Rust ``source`` (before its tests)."""
    test_module = re.search(r"^\s*#\[cfg\(test\)\]", source, re.MULTILINE)
    if test_module:
        source = source[: test_module.start()]
    code, strings = lex_rust(source)

    def line_of(offset: int) -> int:
        return code.count("\n", 0, offset) + 1

    for m in RUST_DEFINITION.finditer(code):
        yield line_of(m.start()), m.group(1)
    for m in RUST_WEIGHTS.finditer(code):
        yield line_of(m.start()), "DEFAULT_WEIGHTS"
    for m in _RUST_NUMBER.finditer(code):
        whole, frac, exp = m.group(1), m.group(2), m.group(3)
        text = (whole + (frac or "") + (exp or "")).replace("_", "")
        value = float(text) if (frac or exp) else int(text)
        if value in NUMBERS:
            yield line_of(m.start()), NUMBERS[value]
        elif (frac or exp) and value in FLOATS:
            yield line_of(m.start()), FLOATS[value]
    for line, text in strings:
        for name in _text_findings(text):
            yield line, name


# -- the scan -------------------------------------------------------------------------------


def _sources() -> Iterator[Path]:
    for path in sorted((ROOT / "python").rglob("*.py*")):
        if path.suffix in (".py", ".pyi") and path not in GENERATED:
            yield path
    for path in sorted((ROOT / "rust").rglob("*.rs")):
        rel = path.relative_to(ROOT / "rust").parts
        if "target" in rel or "tests" in rel or path in GENERATED:
            continue
        yield path


def scan(path: Path) -> list[Finding]:
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    scanner = scan_rust if path.suffix == ".rs" else scan_python
    found = {(line, name) for line, name in scanner(source)}
    rel = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    return [Finding(rel, line, name, lines[line - 1]) for line, name in sorted(found)]


def _allowed(finding: Finding) -> tuple[str, str, str] | None:
    for entry in ALLOWED:
        if entry[0] == finding.path and entry[1] in finding.text:
            return entry
    return None


def test_no_contract_constant_is_written_by_hand() -> None:
    findings = [f for path in _sources() for f in scan(path)]
    bad = [str(f) for f in findings if _allowed(f) is None]
    assert not bad, "import these from the generated constants instead:\n" + "\n".join(bad)
    used = {_allowed(f) for f in findings}
    stale = [entry[:2] for entry in ALLOWED if entry not in used]
    assert not stale, f"ALLOWED entries that match nothing any more: {stale}"


def test_the_scan_covers_both_languages() -> None:
    paths = [p.relative_to(ROOT).as_posix() for p in _sources()]
    assert "python/memwire/config.py" in paths and "rust/memwire-core/src/error.rs" in paths
    assert not any("generated" in p or "/target/" in p for p in paths)


@pytest.mark.parametrize("paths", [GENERATED[:2], GENERATED[2:]], ids=["python", "rust"])
def test_every_check_fires_on_the_generated_definitions(paths: tuple[Path, ...]) -> None:
    # The generated constants are the one place the values may be written: each check must
    # recognise its own constant there, in both languages (the Unicode tables are left out).
    lines = [line for p in paths for line in p.read_text(encoding="utf-8").splitlines()]
    head = "\n".join(line for line in lines if not re.match(r"\s*\(?0x", line))
    scan = scan_rust if paths[0].suffix == ".rs" else scan_python
    found = {name for _, name in scan(head)}
    expected = (
        set(NUMBERS.values()) - {"MAX_ORDINAL (+1, the exclusive bound)"}
        | set(FLOATS.values())
        | set(INSIDE.values())
        | set(WHOLE.values())
        | {"DEFAULT_WEIGHTS"}
    )
    assert expected <= found, sorted(expected - found)


PY_PROBE = '''"""Docstrings may cite 4096 and (1.1, 0.1, 0.5)."""
MAX_DIM = 4096
from memwire._kernel.contract import MAX_ORDINAL as LIMIT
OK = LIMIT
x = 2**32 - 1
y = 0 <= x < 2**32
WEIGHTS = (1.1, 0.1, 0.5)
msg = f"dim must be between 0 and {OK} or 4096, got {x}"
marker = "\u2026[truncated]"
k = 60.0  # a comment may say 20000
timeout = 60
ratio = 1.25
'''


def test_the_python_scan_finds_each_kind_of_copy() -> None:
    # The probe must be seen (else the test above could never fail), the exempt forms not.
    assert sorted(set(scan_python(PY_PROBE))) == [
        (2, "MAX_DIM"),
        (5, "MAX_ORDINAL"),
        (6, "MAX_ORDINAL (+1, the exclusive bound)"),
        (7, "DEFAULT_WEIGHTS"),
        (8, "MAX_DIM"),
        (9, "TRUNCATION_MARKER"),
        (10, "RRF_K"),
    ]


RS_PROBE = r"""//! A module comment citing 4096 and "memwire.index".
pub const MAX_DIM: usize = 4096;
fn f<'a>(x: &'a str) -> char {
    let q = '"';
    let s = "dim must be between 0 and 4096, got {n}";
    /* a /* nested */ comment: 32_767 */
    let w = [1.1, 0.1, 0.5];
    let r = r#"memwire.index"#;
    let big = 4_294_967_295u32;
    let e = "\u{2026}[truncated]";
    let ok = 40960 + 14096;
    '\''
}
#[cfg(test)]
mod tests {
    const SCALE: i32 = 32767;
}
"""


def test_the_rust_scan_finds_each_kind_of_copy() -> None:
    assert sorted(set(scan_rust(RS_PROBE))) == [
        (2, "MAX_DIM"),
        (5, "MAX_DIM"),
        (7, "DEFAULT_WEIGHTS"),
        (8, "SNAPSHOT_FORMAT"),
        (9, "MAX_ORDINAL"),
        (10, "TRUNCATION_MARKER"),
    ]


@pytest.mark.parametrize("language", ["python", "rust"])
def test_a_probe_file_fails_the_scan(tmp_path: Path, language: str) -> None:
    probe = tmp_path / ("probe.py" if language == "python" else "probe.rs")
    probe.write_text(PY_PROBE if language == "python" else RS_PROBE, encoding="utf-8")
    findings = scan(probe)
    assert findings and all(_allowed(f) is None for f in findings)
    assert str(findings[0]).startswith("probe.")
