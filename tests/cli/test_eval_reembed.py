"""`memwire eval` and `memwire reembed` through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memwire.__main__ import main
from memwire.memory import Memory


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "home"))
    return str(tmp_path / "memory.db")


def test_eval_bank_markdown_json_and_out(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with Memory(db) as memory:
        target = memory.retain("the staging database lives on port 5433", bank="ops")
        memory.retain("standup is at ten", bank="ops")
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"query": "staging database port", "relevant": [target]}))
    out_file = tmp_path / "report.json"
    args = ["eval", "bank", "--queries", str(queries), "--bank", "ops", "--db", db]
    assert main([*args, "--out", str(out_file)]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("# memwire eval bank ops") and "| all | 1 | 1.0000" in out
    assert "report written" in err
    saved = json.loads(out_file.read_text())
    assert saved["results"]["labelled"]["metrics"]["all"]["recall_any@1"] == 1.0
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["benchmark"] == "bank ops"


def test_eval_errors_exit_2(db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "locomo", "--data", str(tmp_path / "missing.json")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["eval"]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": 3}\n')
    assert main(["eval", "bank", "--queries", str(bad), "--db", db]) == 2


def test_reembed(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    with Memory(db) as memory:
        memory.retain_many([f"note {i} about the deploy pipeline" for i in range(25)], bank="b")
    assert main(["reembed", "--bank", "b", "--batch", "10", "--db", db, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"bank": "b", "encoded": 25}
    assert main(["reembed", "--bank", "nobody", "--db", db]) == 3
