"""The `memwire` command line: output, --json, and exit codes scripts can trust."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from memwire.__main__ import main
from memwire.memory import Memory


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_every_command_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in [
        "serve",
        "mcp",
        "retain",
        "recall",
        "reflect",
        "get",
        "forget",
        "memories",
        "stats",
        "banks",
        "config",
        "export",
        "import",
        "import-from",
        "sweep",
        "doctor",
        "daemon",
    ]:
        assert f"    {command}" in out
        sub_code, sub_out, _ = run(capsys, command, "--help")
        assert sub_code == 0 and "usage: memwire" in sub_out
    assert "exit codes" in out and "3    not found" in out


def test_no_command_and_bad_usage_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys)[0] == 2
    assert run(capsys, "recall")[0] == 2  # missing QUERY
    assert run(capsys, "nonsense")[0] == 2
    assert run(capsys, "recall", "x", "--limit", "many")[0] == 2


def test_retain_recall_reflect_get_forget(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "retain", "we ship on Fridays", "--db", db, "-t", "process")
    assert code == 0
    memory_id = out.strip()
    assert memory_id.startswith("mem_")

    code, out, _ = run(capsys, "recall", "when do we ship", "--db", db)
    assert code == 0 and memory_id in out and "we ship on Fridays" in out
    code, out, _ = run(capsys, "--db", db, "recall", "ship", "--json")
    hits = json.loads(out)
    assert hits[0]["id"] == memory_id and hits[0]["tags"] == ["process"]

    code, out, _ = run(capsys, "reflect", "when do we ship", "--db", db)
    assert code == 0 and memory_id in out
    code, out, _ = run(capsys, "get", memory_id, "--db", db, "--json")
    assert json.loads(out)["content"] == "we ship on Fridays"
    code, out, _ = run(capsys, "get", memory_id, "--db", db)
    assert "we ship on Fridays" in out and "process" in out

    assert run(capsys, "forget", memory_id, "--db", db)[0] == 0
    code, _, err = run(capsys, "forget", memory_id, "--db", db)
    assert code == 3 and "is not live (it is trashed)" in err
    code, out, _ = run(capsys, "get", memory_id, "--db", db)  # in the trash, restorable
    assert code == 0 and "status:      trashed" in out
    assert run(capsys, "get", "mem_nope", "--db", db)[0] == 3


def test_retain_from_stdin(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(sys, "stdin", io.StringIO("from a pipe\n"))
    code, out, _ = run(capsys, "retain", "-", "--db", db, "--json")
    assert code == 0
    memory_id = json.loads(out)["id"]
    with Memory(db) as memory:
        assert memory.get(memory_id).content.strip() == "from a pipe"


def test_invalid_input_exits_2_and_says_why(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "retain", "  ", "--db", db)
    assert code == 2 and out == "" and "content must not be blank" in err
    code, _, err = run(capsys, "recall", "x", "--limit", "0", "--db", db)
    assert code == 2 and "limit" in err
    code, _, err = run(capsys, "retain", "x", "--created-at", "someday", "--db", db)
    assert code == 2 and "created_at" in err


def test_memories_stats_banks_config(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    for n in range(3):
        run(capsys, "retain", f"note {n}", "--bank", "work", "--db", db, "-t", "n")
    code, out, _ = run(capsys, "memories", "--bank", "work", "--db", db, "--json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = run(capsys, "memories", "--bank", "work", "--db", db, "--limit", "1")
    assert len(out.strip().splitlines()) == 1
    code, out, _ = run(capsys, "memories", "--bank", "empty", "--db", db, "--json")
    assert code == 0 and json.loads(out) == []

    code, out, _ = run(capsys, "stats", "--bank", "work", "--db", db, "--json")
    assert json.loads(out)["count"] == 3
    assert run(capsys, "stats", "--bank", "nope", "--db", db)[0] == 3

    code, out, _ = run(capsys, "banks", "--db", db, "--json")
    assert json.loads(out) == ["work"]

    code, out, _ = run(
        capsys,
        "config",
        "--bank",
        "work",
        "--db",
        db,
        "--set",
        "recall_max_tokens=300",
        "--set",
        "ttl_days=30",
        "--json",
    )
    assert code == 0 and json.loads(out) == {"recall_max_tokens": 300, "ttl_days": 30}
    code, out, _ = run(capsys, "config", "--bank", "work", "--db", db, "--unset", "ttl_days")
    assert "recall_max_tokens = 300" in out and "ttl_days" not in out
    code, _, err = run(capsys, "config", "--bank", "work", "--db", db, "--set", "note=hello")
    assert code == 2 and "unknown config key 'note'" in err
    code, _, err = run(capsys, "config", "--bank", "work", "--db", db, "--set", "ttl_days=-1")
    assert code == 2 and "ttl_days" in err
    assert run(capsys, "config", "--bank", "nope", "--db", db)[0] == 3
    assert run(capsys, "config", "--db", db, "--set", "novalue")[0] == 2

    assert run(capsys, "banks", "delete", "work", "--db", db)[0] == 2  # needs --yes
    assert run(capsys, "banks", "delete", "work", "--yes", "--db", db)[0] == 0
    assert run(capsys, "banks", "delete", "work", "--yes", "--db", db)[0] == 3


def test_sweep(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "retain", "ancient", "--created-at", "2001-01-01", "--db", db)
    run(capsys, "retain", "fresh", "--db", db)
    run(capsys, "config", "--set", "ttl_days=30", "--db", db)
    code, out, _ = run(capsys, "sweep", "--dry-run", "--db", db, "--json")
    assert code == 0 and len(json.loads(out)["ids"]) == 1
    code, out, _ = run(capsys, "sweep", "--db", db)
    assert "deleted 1 expired memory" in out
    code, out, _ = run(capsys, "memories", "--db", db, "--json")
    assert [m["content"] for m in json.loads(out)] == ["fresh"]


def test_export_import_roundtrip(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for n in range(5):
        run(capsys, "retain", f"exported {n}", "--bank", "src", "--db", db)
    with Memory(db) as memory:  # a history and a trash go along
        first, second = (r.id for r in memory.memories(bank="src", limit=2))
        newer = memory.update(first, content="exported 0, corrected", bank="src")
        memory.forget(second, bank="src")
        versions, trash = memory.history(newer), memory.trash(bank="src")
    dump = tmp_path / "dump.jsonl"
    code, out, _ = run(capsys, "export", str(dump), "--db", db)
    assert code == 0 and "exported 6" in out
    other = str(tmp_path / "other.db")
    code, out, _ = run(capsys, "import", str(dump), "--db", other, "--json")
    assert code == 0 and json.loads(out) == {"imported": 6, "skipped": 0, "skipped_as": []}
    code, out, _ = run(capsys, "memories", "--bank", "src", "--db", other, "--json")
    assert len(json.loads(out)) == 4
    with Memory(other) as memory:
        assert memory.history(newer) == versions and len(versions) == 2
        assert memory.trash(bank="src") == trash and len(trash) == 1
    code, out, _ = run(capsys, "import", str(dump), "--db", other, "--json")
    assert code == 0 and json.loads(out) == {
        "imported": 0,
        "skipped": 6,
        "skipped_as": [
            {"reason": "same id", "bank": "src", "status": status, "count": count}
            for status, count in (("live", 4), ("superseded", 1), ("trashed", 1))
        ],
    }
    code, _, err = run(capsys, "import", str(tmp_path / "missing.jsonl"), "--db", other)
    assert code == 2 and "cannot open" in err
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    code, _, err = run(capsys, "import", str(bad), "--db", other)
    assert code == 2 and "line 1" in err


def test_import_says_why_it_skipped(
    db: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Into another bank of the store that exported it, an import writes nothing (ids are
    unique in a store) and says so; a memory whose content the bank holds is skipped too."""
    for n in range(3):
        run(capsys, "retain", f"kept {n}", "--bank", "src", "--db", db)
    dump = tmp_path / "dump.jsonl"
    assert run(capsys, "export", str(dump), "--db", db)[0] == 0
    code, out, _ = run(capsys, "import", str(dump), "--db", db, "--bank", "copy")
    assert code == 0
    assert out.strip() == (
        "imported 0 memories; skipped 3 already in this store: 3 live in bank 'src' (same id); "
        "ids are unique in a store, so memories it already holds are not copied"
    )
    with Memory(db) as memory:
        assert "copy" not in memory.banks() or memory.memories(bank="copy") == []
    other = str(tmp_path / "other.db")
    run(capsys, "retain", "kept 1", "--bank", "src", "--db", other)  # same content, new id
    code, out, _ = run(capsys, "import", str(dump), "--db", other, "--json")
    assert code == 0 and json.loads(out) == {
        "imported": 2,
        "skipped": 1,
        "skipped_as": [{"reason": "same content", "bank": "src", "status": "live", "count": 1}],
    }
    code, out, _ = run(capsys, "import", str(dump), "--db", other)
    assert out.strip().startswith("imported 0 memories; skipped 3 already in this store: ")
    assert "1 with the same content as a memory of bank 'src'" in out


def test_import_progress_line_on_a_terminal(tmp_path: Path) -> None:
    import io

    from memwire._progress import Progress

    stream = io.StringIO()
    progress = Progress(1000, "importing", stream=stream, enabled=True)
    progress.advance(500)
    progress.finish()
    assert "importing [" in stream.getvalue() and "50.0%" in stream.getvalue()
    quiet = io.StringIO()
    progress = Progress(1000, "importing", stream=quiet)  # StringIO is not a TTY
    progress.advance(1000)
    progress.finish()
    assert quiet.getvalue() == ""


def test_doctor(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, "retain", "x", "--db", db)
    code, out, _ = run(capsys, "doctor", "--db", db, "--json", "--port", "1")
    report = json.loads(out)
    assert code == 0 and report["ok"] is True
    names = {c["name"]: c for c in report["checks"]}
    assert set(names) == {
        "backend",
        "store setting",
        "store path",
        "store health",
        "store loss",
        "integrity",
        "server",
        "hooks",
    }
    assert names["store setting"]["source"] == "argument"
    assert names["store loss"]["status"] == "ok"
    assert names["hooks"]["status"] == "ok" and "spool 0 waiting" in names["hooks"]["detail"]
    assert names["integrity"]["status"] == "ok"
    assert names["store health"]["memories"] == 1
    assert names["server"]["status"] == "warn"  # nothing listens on port 1


def test_doctor_flags_a_corrupt_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a sqlite database" * 100)
    code, out, _ = run(capsys, "doctor", "--db", str(broken), "--port", "1")
    assert code == 5 and "FAIL" in out


def test_entry_point_as_a_process(db: str) -> None:
    env = dict(os.environ)
    ok = subprocess.run(
        [sys.executable, "-m", "memwire", "retain", "hello", "--db", db],
        capture_output=True,
        text=True,
        env=env,
    )
    assert ok.returncode == 0 and ok.stdout.startswith("mem_")
    missing = subprocess.run(
        [sys.executable, "-m", "memwire", "get", "mem_x", "--db", db],
        capture_output=True,
        text=True,
        env=env,
    )
    assert missing.returncode == 3 and missing.stdout == ""


def test_plain_commands_do_not_import_the_web_or_mcp_stack(db: str) -> None:
    code = (
        "import sys\n"
        "from memwire.__main__ import main\n"
        f"main(['retain', 'x', '--db', {db!r}])\n"
        f"main(['recall', 'x', '--db', {db!r}])\n"
        "print(sorted(m for m in ('mcp', 'starlette', 'uvicorn') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_nothing_relevant_finds_nothing_by_default(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, "retain", "the staging database runs on port 5433", "--db", db)
    run(capsys, "retain", "deploys go out every tuesday after standup", "--db", db)
    query = "what is the capital of France"
    code, out, _ = run(capsys, "recall", query, "--db", db)
    assert code == 0 and "no memories in bank 'default' match" in out
    code, out, _ = run(capsys, "recall", query, "--min-score", "0", "--db", db, "--json")
    assert code == 0 and json.loads(out)
    code, out, _ = run(capsys, "reflect", query, "--db", db)
    assert code == 0 and out.startswith("No memories")


def test_min_score_on_recall_and_reflect(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    _, strong, _ = run(capsys, "retain", "red apples grow in the orchard by the river", "--db", db)
    _, weak, _ = run(capsys, "retain", "apples are sold at the market", "--db", db)
    strong, weak = strong.strip(), weak.strip()
    query = "red apples orchard river"
    code, out, _ = run(capsys, "recall", query, "--min-score", "0", "--db", db, "--json")
    scores = [h["score"] for h in json.loads(out)]
    assert len(scores) == 2 and scores[0] > scores[1]
    floor = str((scores[0] + scores[1]) / 2)
    code, out, _ = run(capsys, "recall", query, "--min-score", floor, "--db", db, "--json")
    assert code == 0 and [h["id"] for h in json.loads(out)] == [strong]
    code, out, _ = run(capsys, "recall", query, "--min-score", "1", "--db", db)
    assert code == 0 and "no memories in bank 'default' match" in out
    code, out, _ = run(capsys, "reflect", query, "--min-score", floor, "--db", db)
    assert code == 0 and strong in out and weak not in out
    code, out, err = run(capsys, "recall", query, "--min-score", "-1", "--db", db)
    assert code == 2 and out == ""
    assert "min_score must be a finite number >= 0, got -1" in err
    code, _, err = run(capsys, "reflect", query, "--min-score", "nan", "--db", db)
    assert code == 2 and "min_score must be a finite number" in err
    assert run(capsys, "recall", query, "--min-score", "high", "--db", db)[0] == 2


def test_conflict_exits_6_with_the_message(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, first, _ = run(capsys, "retain", "revision one", "--document-id", "spec", "--db", db)
    assert code == 0
    code, out, err = run(
        capsys,
        "retain",
        "revision two",
        "--document-id",
        "spec",
        "--update-mode",
        "append",
        "--db",
        db,
    )
    assert code == 6 and out == ""
    assert err.strip() == (
        "memwire: document 'spec' already has a memory in bank 'default'; "
        "use update_mode='replace' to replace it"
    )
    code, out, _ = run(capsys, "memories", "--db", db, "--json")
    assert [m["id"] for m in json.loads(out)] == [first.strip()]


def test_reembed_conflict_exits_6(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from memwire.errors import ConflictError

    run(capsys, "retain", "a memory to re-encode", "--db", db)

    def conflicting(self: Memory, *args: object, **kwargs: object) -> int:
        raise ConflictError("the reembed was finished or discarded by another process")

    monkeypatch.setattr(Memory, "reembed", conflicting)
    code, out, err = run(capsys, "reembed", "--db", db, "--no-progress")
    assert code == 6 and out == ""
    assert err.strip() == "memwire: the reembed was finished or discarded by another process"


def test_invalid_update_mode_exits_2(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "retain", "x", "--update-mode", "merge", "--db", db)
    assert code == 2 and "invalid choice: 'merge'" in err and "'replace', 'append'" in err
