"""Write the golden vectors that `cargo test` and pytest both check, from the pure kernel.

    python tests/golden/generate.py          # rewrite tests/golden/*.jsonl
    python tests/golden/generate.py --check  # exit 1 if they differ from the oracle's output

Golden files are reviewed like code. Never regenerate them to make a failing test pass: a
changed ranking is a contract change (docs/parity.md, bump the contract version).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "python"))

from memwire._kernel import pure as kernel  # noqa: E402
from memwire._kernel.vectors import quantize  # noqa: E402

TOKENIZE_CASES = [
    "",
    "   ",
    "Hello, World!",
    "src/main.rs E0502 v1.2.3 snake_case localhost:8080",
    "error[E0502]: cannot borrow `x` as mutable",
    "https://github.com/owner/repo.git#readme",
    "user.name@example.com wrote on 2026-09-20",
    "Caroline's dog isn’t here",
    "a..b c- -d _x_ --flag=value",
    "İstanbul ISTANBUL istanbul ıstanbul",
    "Straße STRASSE strasse ẞ",
    "ΣΊΣΥΦΟΣ σίσυφος ς",
    "café cafe\u0301 CAFÉ naïve Ångström",
    "東京都に行きました。",
    "中文搜索引擎 中",
    "한국어 텍스트 검색",
    "カタカナのコーヒー",
    "日本語とEnglishの混在 rust言語",
    "👍🏽 emoji 👨‍👩‍👧 family 🎉",
    "ZW\u200dJ zw\u200cnj soft\u00adhyphen \ufeffbom",
    "٣٤٥ ۱۲۳ १२३ ๑๒๓ numbers",
    "Привет МИР Ёлка",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "สวัสดีชาวโลก",
    "\U00011f04\U00011f05 kawi",
    "x" * 64 + " " + "y" * 65,
    "a" * 40 + "/" + "b" * 40,
    "The WHAT is it that you were doing",
    "C++ C# F# .NET node.js",
    "ＡＢＣ fullwidth",
    "tab\tnew\nline\rreturn",
    "CamelCaseIdentifier getHTTPResponse",
    "port 8080 and 127.0.0.1:443",
    "running runs ran runner organizations organized generously agreed",
    "RUNNING Running's snake_running x1running",
]

SCRIPTS = [
    "abcdefghijklmnopqrstuvwxyz",
    "ÄÖÜäöüßéèêëçñ",
    "αβγδεζηθικλμνξοπρστυφχψωΣς",
    "абвгдеёжзийклмнопрстуфхцчшщ",
    "的一是不了人我在有他这中大来上国个到说们",
    "あいうえおかきくけこアイウエオカキクケコー",
    "가나다라마바사아자차카타파하",
    "0123456789٠١٢٣",
    "_-./:@'’+# ,;!?()[]",
]


def _hex(x: float) -> str:
    return float(x).hex()


def _scored(rows: list[tuple[int, float]]) -> list[list[Any]]:
    return [[o, _hex(s)] for o, s in rows]


def random_text(rng: random.Random, vocab: list[str] | None, length: int) -> str:
    if vocab is not None:
        return " ".join(rng.choice(vocab) for _ in range(length))
    out = []
    for _ in range(length):
        alphabet = rng.choice(SCRIPTS)
        out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
    return " ".join(out)


def random_vector(rng: random.Random, dim: int) -> bytes:
    while True:
        vec = [rng.choice([-1.0, 0.0, 0.5, 1.0, 2.0]) for _ in range(dim)]
        if any(vec):
            return quantize(vec)


def search_case(
    name: str, seed: int, n_docs: int, vocab: list[str] | None, dim: int
) -> dict[str, Any]:
    rng = random.Random(seed)
    index = kernel.BankIndex(dim)
    docs = []
    ordinals = rng.sample(range(n_docs * 3), n_docs)
    for o in ordinals:
        text = random_text(rng, vocab, rng.randint(0, 12))
        vec = random_vector(rng, dim) if dim and rng.random() < 0.8 else None
        index.add(o, text, vec)
        docs.append([o, text, vec.hex() if vec is not None else None])
    removed = rng.sample(ordinals, n_docs // 10)
    for o in removed:
        index.remove(o)
    live = [o for o in ordinals if o not in set(removed)]
    queries = []
    for _ in range(12):
        query = random_text(rng, vocab, rng.randint(1, 4))
        k = rng.choice([1, 3, 10, 50])
        allow = sorted(rng.sample(live, len(live) // 2)) if rng.random() < 0.3 else None
        vec = random_vector(rng, dim) if dim else None
        weights = rng.choice([[1.0, 0.5, 1.0], [1.0, 0.0, 0.0], [0.3, 1.0, 2.0], [1.0, 1.0, 1.0]])
        depth = rng.choice([5, 20, 100])
        queries.append(
            {
                "query": query,
                "k": k,
                "allow": allow,
                "vector": vec.hex() if vec is not None else None,
                "weights": weights,
                "depth": depth,
                "bm25": _scored(index.search_bm25(query, k, allow)),
                "overlap": _scored(index.search_overlap(query, k, allow)),
                "dense": _scored(index.search_dense(vec, k, allow)) if vec is not None else [],
                "recall": [
                    [o, _hex(s), r1, r2, r3]
                    for o, s, r1, r2, r3 in index.recall(query, k, weights, depth, allow, vec)
                ],
            }
        )
    return {"name": name, "dim": dim, "docs": docs, "removed": removed, "queries": queries}


def build() -> dict[str, list[dict[str, Any]]]:
    rng = random.Random(20261130)
    tokenize = [{"text": t, "tokens": kernel.tokenize(t)} for t in TOKENIZE_CASES]
    for _ in range(60):
        text = random_text(rng, None, rng.randint(1, 10))
        tokenize.append({"text": text, "tokens": kernel.tokenize(text)})

    rrf = []
    for _ in range(30):
        streams = [rng.sample(range(40), rng.randint(0, 25)) for _ in range(rng.randint(1, 3))]
        weights = [rng.choice([0.0, 0.5, 1.0, 1.7, 3.0]) for _ in streams]
        rrf.append(
            {"streams": streams, "weights": weights, "fused": _scored(kernel.rrf(streams, weights))}
        )

    budget = []
    for _ in range(30):
        texts = [random_text(rng, None, rng.randint(0, 8)) for _ in range(rng.randint(1, 6))]
        n = rng.choice([1, 2, 3, 5, 8, 20, 100])
        budget.append(
            {
                "texts": texts,
                "budget": n,
                "kept": [list(r) for r in kernel.trim_to_budget(texts, n)],
            }
        )

    tiny = ["alpha", "beta", "gamma", "delta"]
    words = [
        "memory",
        "agent",
        "rust",
        "python",
        "src/main.rs",
        "E0502",
        "port",
        "8080",
        "bank",
        "recall",
        "retain",
        "東京都",
        "Straße",
        "café",
        "v1.2.3",
        "snake_case",
        "the",
        "is",
    ]
    inflected = [
        "running",
        "runs",
        "runner",
        "ran",
        "organization",
        "organized",
        "organ",
        "connect",
        "connected",
        "connection",
        "memories",
        "memory",
        "agents",
        "agent",
        "generously",
        "generous",
        "Caroline's",
        "caroline",
    ]
    search = [
        search_case("tiny-vocab-ties", 1, 60, tiny, 0),
        search_case("identifiers", 2, 200, words, 0),
        search_case("unicode-heavy", 3, 300, None, 0),
        search_case("dense-small", 4, 120, words, 8),
        search_case("dense-ties", 5, 80, tiny, 3),
        search_case("larger", 6, 2000, words + tiny, 16),
        search_case("stemming", 7, 150, inflected, 0),
    ]
    from memwire.embed.static import LEGACY_ID, _read, _table, _vocab

    # The previous bundled table, which still ships and which rust/memwire-core/tests/golden.rs
    # reads: the cases pin tokenising and integer summing, whatever the default table.
    table, _, dim = _table(_read("model.safetensors", LEGACY_ID))
    embedder = kernel.StaticEmbedder(_vocab(_read("tokenizer.json", LEGACY_ID)), table, dim)
    embed = []
    for text in TOKENIZE_CASES + [random_text(rng, None, rng.randint(1, 10)) for _ in range(60)]:
        total = embedder.sums([text])[0]
        embed.append(
            {
                "text": text,
                "ids": embedder.token_ids(text),
                "sum": list(np.frombuffer(total, dtype="<i4").tolist()) if total else None,
            }
        )
    return {"tokenize": tokenize, "rrf": rrf, "budget": budget, "search": search, "embed": embed}


def render(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    np.seterr(all="raise")
    stale = []
    for name, rows in build().items():
        path = HERE / f"{name}.jsonl"
        text = render(rows)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        if args.check:
            stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.name}")
    if stale:
        print("golden files differ from the oracle:", *stale)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
