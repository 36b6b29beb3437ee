"""``memwire import-from``: memory-wire databases, mem0 and agentmemory exports, into banks."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from memwire.cli import main
from memwire.errors import InvalidInputError
from memwire.importers import import_from
from memwire.memory import Memory
from memwire.records import Record
from mw_database import BANKS, Row, build, generate


def every_memory(memory: Memory, bank: str) -> list[Record]:
    out: list[Record] = []
    while page := memory.memories(bank=bank, limit=1000, offset=len(out)):
        out.extend(page)
    return out


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_a_memory_wire_database_of_10k_memories_is_imported_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = generate(10_000)
    source = tmp_path / "memory-wire.db"
    build(source, rows, {"work": {"recallMaxTokens": 2000, "retainTags": ["Imported"], "x": 1}})
    db = str(tmp_path / "memwire.db")
    code, summary = run_cli(capsys, "--db", db, "--json", "import-from", "memory-wire", str(source))
    assert code == 0
    assert summary["read"] == summary["imported"] == 10_000
    assert summary["merged"] == summary["skipped"] == 0
    assert summary["banks"] == {bank: sum(r.bank == bank for r in rows) for bank in BANKS}
    assert summary["configs"] == ["work"]
    with Memory(db) as memory:
        assert sorted(memory.banks()) == sorted(BANKS)
        for bank in BANKS:
            want = {r.content: r for r in rows if r.bank == bank}
            have = every_memory(memory, bank)
            assert len(have) == len(want)  # count
            for record in have:
                row = want.pop(record.content)  # content, byte for byte
                assert record.context == row.context
                assert record.tags == row.tags  # in memory-wire's order
                when = datetime.fromisoformat(row.created_at.replace("Z", "+00:00"))
                assert record.created_at == when
                assert record.document_id == row.document_id
            assert want == {}
        config = memory.get_config("work")  # applied after the memories: no tag was added
        assert config["recall_max_tokens"] == 2000 and config["retain_tags"] == ["imported"]
        assert config["memory_wire"] == {
            "recallMaxTokens": 2000,
            "retainTags": ["Imported"],
            "x": 1,
        }
    # a second run adds nothing
    code, again = run_cli(capsys, "--db", db, "--json", "import-from", "memory-wire", str(source))
    assert code == 0 and again["imported"] == 0 and again["merged"] == 10_000


def test_progress_is_reported_per_batch_and_into_one_bank(tmp_path: Path) -> None:
    rows = generate(2_500)
    source = tmp_path / "memory-wire.db"
    build(source, rows)
    seen: list[tuple[int, int]] = []
    with Memory(tmp_path / "memwire.db") as memory:
        summary = import_from(
            memory, "memory-wire", source, bank="all", progress=lambda d, t: seen.append((d, t))
        )
        assert memory.banks() == ["all"] and len(every_memory(memory, "all")) == 2_500
    assert summary.banks == {"all": 2_500} and summary.configs == []
    assert seen == [(1000, 2500), (2000, 2500), (2500, 2500)]


def test_records_memwire_refuses_are_skipped_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [
        Row("b", "a fine memory", None, ("ok",), "2024-01-01T00:00:00.000Z", None),
        Row("b", "   ", None, (), "2024-01-02T00:00:00.000Z", None),
        Row("b", "another", None, ("AKIAIOSFODNN7EXAMPLE",), "2024-01-03T00:00:00.000Z", None),
        Row("b", "bad time", None, (), "yesterday", None),
        Row("b", "deploy with AKIAIOSFODNN7EXAMPLE", None, (), "2024-01-04T00:00:00.000Z", None),
    ]
    source = tmp_path / "memory-wire.db"
    build(source, rows)
    db = str(tmp_path / "memwire.db")
    code, summary = run_cli(capsys, "--db", db, "--json", "import-from", "memory-wire", str(source))
    assert code == 0
    assert (summary["read"], summary["imported"], summary["skipped"]) == (5, 2, 3)
    reasons = summary["skipped_reasons"]
    assert isinstance(reasons, dict)
    assert reasons["content must not be blank"] == 1
    assert any("created_at 'yesterday'" in r for r in reasons)
    assert any(r.startswith("tag looks like it holds a secret") for r in reasons)
    assert summary["redacted"] == 1
    with Memory(db) as memory:
        contents = sorted(r.content for r in every_memory(memory, "b"))
    assert contents == ["a fine memory", "deploy with [REDACTED:aws_access_key]"]
    # the human summary says the same
    assert main(["--db", db, "import-from", "memory-wire", str(source)]) == 0
    text = capsys.readouterr().out
    assert "skipped 3" in text and "skipped 1: content must not be blank" in text


def test_what_is_not_a_memory_wire_database_is_refused_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "memwire.db"
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE memories (id TEXT)")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database at all" * 100)
    for path, message in (
        (tmp_path / "missing.db", "no memory-wire database at"),
        (other, "is not a memory-wire database: table 'banks' lacks config, id, name"),
        (garbage, "as a memory-wire database: file is not a database"),
    ):
        assert main(["--db", str(db), "import-from", "memory-wire", str(path)]) == 2
        assert message in capsys.readouterr().err
    with Memory(db) as memory:
        assert memory.banks() == []
    with Memory(db) as memory, pytest.raises(InvalidInputError):
        import_from(memory, "memory-wire", other)


def test_mem0_export(tmp_path: Path) -> None:
    records = [
        {
            "id": "3f1c",
            "memory": "Prefers morning meetings",
            "hash": "ab12",
            "metadata": {"type": "preference"},
            "categories": ["preferences", "work"],
            "created_at": "2024-07-20T08:00:00.123456-07:00",
            "updated_at": "2024-07-21T08:00:00-07:00",
            "user_id": "arjun",
        },
        {"id": "9e", "memory": "Leads the API redesign", "agent_id": "planner"},
        {"id": "x", "text": "no memory field"},
    ]
    path = tmp_path / "mem0.jsonl"
    lines = [json.dumps(r) for r in records] + ["{not json"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Memory(tmp_path / "memwire.db") as memory:
        summary = import_from(memory, "mem0", path, bank="me")
        assert (summary.read, summary.imported, len(summary.skipped)) == (4, 2, 2)
        assert sorted(s.reason for s in summary.skipped) == ["no 'memory' text", "not valid JSON"]
        by_content = {r.content: r for r in every_memory(memory, "me")}
        first = by_content["Prefers morning meetings"]
        assert first.tags == ("preferences", "work", "user:arjun")
        assert first.created_at == datetime.fromisoformat("2024-07-20T08:00:00.123456-07:00")
        assert first.document_id == "mem0:3f1c"
        assert by_content["Leads the API redesign"].tags == ("agent:planner",)
        # get_all's own document reads the same
        doc = tmp_path / "mem0.json"
        doc.write_text(json.dumps({"results": records[:2]}), encoding="utf-8")
        again = import_from(memory, "mem0", doc, bank="me")
        assert (again.read, again.imported, again.merged) == (2, 0, 2)


def test_agentmemory_export(tmp_path: Path) -> None:
    export = {
        "version": "0.9.29",
        "exportedAt": "2026-01-01T00:00:00Z",
        "sessions": [{"id": "s1", "project": "web"}],
        "memories": [
            {
                "id": "m1",
                "createdAt": "2025-05-01T10:00:00Z",
                "updatedAt": "2025-05-02T10:00:00Z",
                "type": "architecture",
                "title": "Auth",
                "content": "Sessions live in Redis",
                "concepts": ["auth", "redis"],
                "files": ["src/auth.ts"],
                "sessionIds": ["s1"],
                "strength": 1,
                "version": 2,
                "isLatest": True,
            },
            {"id": "m0", "createdAt": "2025-04-01T10:00:00Z", "content": "old", "isLatest": False},
        ],
        "observations": {
            "s1": [
                {
                    "id": "o1",
                    "sessionId": "s1",
                    "timestamp": "2025-05-01T09:00:00Z",
                    "type": "decision",
                    "title": "Picked Redis",
                    "subtitle": "over Postgres",
                    "facts": ["redis is already deployed"],
                    "narrative": "We chose Redis for sessions",
                    "concepts": ["redis"],
                    "files": [],
                    "importance": 7,
                },
                {
                    "id": "o2",
                    "sessionId": "s1",
                    "timestamp": "2025-05-01T09:01:00Z",
                    "narrative": "",
                    "facts": ["tests pass"],
                    "concepts": [],
                },
            ]
        },
        "summaries": [
            {
                "sessionId": "s1",
                "project": "web",
                "createdAt": "2025-05-01T11:00:00Z",
                "title": "Auth session",
                "narrative": "Moved sessions to Redis",
                "keyDecisions": [],
                "filesModified": [],
                "concepts": ["auth"],
                "observationCount": 2,
            }
        ],
    }
    path = tmp_path / "agentmemory.json"
    path.write_text(json.dumps(export), encoding="utf-8")
    with Memory(tmp_path / "memwire.db") as memory:
        summary = import_from(memory, "agentmemory", path, bank="project")
        assert (summary.read, summary.imported) == (5, 4)
        assert [s.reason for s in summary.skipped] == [
            "superseded by a later version (isLatest is false)"
        ]
        by_content = {r.content: r for r in every_memory(memory, "project")}
        mem = by_content["Sessions live in Redis"]
        assert mem.tags == ("memory", "architecture", "auth", "redis")
        assert mem.context == "Auth\nfiles: src/auth.ts"
        assert mem.document_id == "agentmemory:memory:m1"
        obs = by_content["We chose Redis for sessions"]
        assert obs.context == "Picked Redis - over Postgres"
        assert obs.tags == ("observation", "decision", "redis")
        assert obs.created_at == datetime.fromisoformat("2025-05-01T09:00:00+00:00")
        assert by_content["tests pass"].tags == ("observation",)
        assert by_content["Moved sessions to Redis"].tags == ("summary", "auth")
        # JSONL of the same records reads the same, and adds nothing new
        lines = tmp_path / "agentmemory.jsonl"
        flat = [*export["memories"], *export["observations"]["s1"], *export["summaries"]]  # type: ignore[call-overload]
        lines.write_text("\n".join(json.dumps(r) for r in flat), encoding="utf-8")
        again = import_from(memory, "agentmemory", lines, bank="project")
        assert (again.read, again.imported, again.merged) == (5, 0, 4)


def test_the_cli_draws_a_progress_bar_on_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from memwire._progress import Progress
    from memwire.cli import transfer

    drawn = io.StringIO()

    class Terminal(Progress):
        def __init__(self, total: int, label: str, *, enabled: bool | None = None) -> None:
            super().__init__(total, label, stream=drawn, enabled=enabled is not False)

    monkeypatch.setattr(transfer, "Progress", Terminal)
    monkeypatch.setattr("memwire._progress.time.monotonic", iter(range(0, 10**6, 10)).__next__)
    source = tmp_path / "memory-wire.db"
    build(source, generate(1_500))
    db = str(tmp_path / "memwire.db")
    assert main(["--db", db, "import-from", "memory-wire", str(source)]) == 0
    assert "importing [" in drawn.getvalue() and "100.0%" in drawn.getvalue()
    assert "imported 1500" in capsys.readouterr().out
    drawn.truncate(0)
    assert main(["--db", db, "import-from", "memory-wire", str(source), "--no-progress"]) == 0
    assert drawn.getvalue().strip("\x00") == ""
