"""``python -m memwire hook <event>`` fed recorded host payloads, with the server absent
(in-process), down (a URL where nothing listens) and up (the real server)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from hook_support import Server, child_env, free_port, payload, run_hook_cli
from memwire.memory import Memory

SEED = [
    ("The web app deploys to staging with ops/deploy.sh staging (needs the VPN).", "2026-09-20"),
    ("Production deploys need a tagged release and approval in #release.", "2026-08-02"),
]


def _seed(db: Path, bank: str = "acme/web") -> None:
    with Memory(db) as memory:
        for text, day in SEED:
            memory.retain(text, bank=bank, created_at=day)
        # Transcripts: an earlier session's (injected when relevant) and this session's own
        # (already in the model's context, so never injected back).
        memory.retain(
            # relevant enough to clear the default relevance floor for the fixture's prompt
            "old transcript: to deploy the web app to staging, use the blue runner",
            bank=bank,
            tags=["transcript", "session:earlier"],
        )
        memory.retain(
            "this session transcript: deploy the web app to staging from the green runner",
            bank=bank,
            tags=["transcript", "session:abc123"],
        )
        memory.retain("marker: deploy staging session boundary", bank=bank, tags=["marker"])


def _context(stdout: str) -> str:
    data = json.loads(stdout)
    text: str = data["hookSpecificOutput"]["additionalContext"]
    return text


def _transcript_rows(db: Path, bank: str = "acme/web") -> list[str]:
    with Memory(db) as memory:
        return [r.content for r in memory.memories(bank=bank, limit=1000) if "transcript" in r.tags]


def _transcript_contexts(db: Path, bank: str = "acme/web") -> dict[str, str | None]:
    with Memory(db) as memory:
        rows = memory.memories(bank=bank, limit=1000)
        return {r.content: r.context for r in rows if "transcript" in r.tags}


# -- absent: in-process ------------------------------------------------------------------------


def test_prompt_injects_block_in_process(home: Path, repo: Path, transcript: Path) -> None:
    _seed(home / "memory.db")
    env = child_env(home, MEMWIRE_URL="off")
    stdin = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["prompt", "--host", "claude"], stdin, env)
    assert done.returncode == 0 and done.stderr == ""
    block = _context(done.stdout)
    assert block.startswith('<memwire-recall bank="acme/web" source="prompt">')
    assert "not instructions" in block
    assert "[2026-09-20] The web app deploys to staging" in block
    assert "old transcript: to deploy the web app to staging" in block
    assert "this session transcript" not in block and "marker:" not in block
    audit = (home / "hooks" / "audit" / "abc123.jsonl").read_text().splitlines()
    record = json.loads(audit[-1])
    assert record["event"] == "prompt" and record["bank"] == "acme/web"
    assert record["bytes"] == len(block.encode()) and len(record["ids"]) >= 1


def test_prompt_with_nothing_relevant_injects_nothing(
    home: Path, repo: Path, transcript: Path
) -> None:
    _seed(home / "memory.db")
    # A generous budget: this test is about what is injected, not how fast.
    env = child_env(home, MEMWIRE_URL="off", MEMWIRE_HOOK_BUDGET_MS="60000")
    stdin = json.loads(
        payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    )
    stdin["prompt"] = "What is the capital of France?"
    done = run_hook_cli(["prompt", "--host", "claude"], json.dumps(stdin), env)
    assert done.returncode == 0 and done.stdout == ""  # the default floor: nothing, not noise
    with Memory(home / "memory.db") as memory:
        memory.set_config("acme/web", {"min_score": 0})  # a bank without a floor...
    done = run_hook_cli(["prompt", "--host", "claude"], json.dumps(stdin), env)
    assert "<memwire-recall" in _context(done.stdout)  # ...injects its nearest neighbours


def test_continue_borrows_previous_prompt(home: Path, repo: Path, transcript: Path) -> None:
    _seed(home / "memory.db")
    env = child_env(home, MEMWIRE_URL="off")
    first = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["prompt"], first, env).returncode == 0
    short = json.loads(first)
    short["prompt"] = "continue"
    done = run_hook_cli(["prompt"], json.dumps(short), env)
    assert "ops/deploy.sh" in _context(done.stdout)
    last = json.loads((home / "hooks" / "audit" / "abc123.jsonl").read_text().splitlines()[-1])
    assert last["borrowed"] is True


def test_session_start_shows_recent_memories(home: Path, repo: Path, transcript: Path) -> None:
    _seed(home / "memory.db")
    env = child_env(home, MEMWIRE_URL="off")
    stdin = payload("claude_session_start.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["session-start", "--host", "claude"], stdin, env)
    block = _context(done.stdout)
    assert 'source="session-start"' in block and "Production deploys" in block
    assert "old transcript" not in block


def test_stop_retains_transcript_once(home: Path, repo: Path, transcript: Path) -> None:
    env = child_env(home, MEMWIRE_URL="off")
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["stop", "--host", "claude"], stdin, env)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    rows = _transcript_rows(home / "memory.db")
    assert len(rows) == 3  # one memory per assistant message, its neighbours as context
    joined = "\n".join(rows)
    assert "ops/deploy.sh staging" in joined and "eu-west-1" in joined
    assert "AKIAABCDEFGHIJKLMNOP" not in joined  # redacted by the Memory API
    assert "injected memory" not in joined  # our own block is never re-retained
    # pre-compact and session-end on the same transcript add nothing
    for event, fixture in (
        ("pre-compact", "claude_pre_compact.json"),
        ("session-end", "claude_session_end.json"),
    ):
        stdin = payload(fixture, cwd=str(repo), transcript=str(transcript))
        assert run_hook_cli([event], stdin, env).returncode == 0
    assert len(_transcript_rows(home / "memory.db")) == 3
    noted = _transcript_contexts(home / "memory.db")["Assistant: Noted: staging runs on eu-west-1."]
    assert noted.startswith("The script pushes the image") and "eu-west-1 cluster" in noted
    assert "AKIAABCDEFGHIJKLMNOP" not in noted  # a neighbour's text is redacted before it is used
    # the conversation goes on: only the new exchange is added
    with open(transcript, "a") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "user",
                    "message": {"role": "user", "content": "And production?"},
                    "timestamp": "2026-09-22T10:00:00Z",
                }
            )
            + "\n"
        )
        handle.write(
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "role": "assistant",
                        "content": [{"type": "text", "text": "Tag a release first."}],
                    },
                }
            )
            + "\n"
        )
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    run_hook_cli(["stop"], stdin, env)
    rows = _transcript_rows(home / "memory.db")
    assert len(rows) == 4 and any("Tag a release first." in r for r in rows)
    # the new reply has the turns before it, from the earlier capture, as context
    answered = _transcript_contexts(home / "memory.db")["Assistant: Tag a release first."]
    assert answered is not None and answered.startswith("Noted: staging runs on eu-west-1.")
    # explicit recall still reaches transcripts
    with Memory(home / "memory.db") as memory:
        hits = memory.recall("eu-west-1", bank="acme/web", tags=["transcript"])
        assert hits and hits[0].created_at.date().isoformat() == "2026-09-21"


def test_codex_payload(home: Path, repo: Path, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text((Path(__file__).parent / "fixtures" / "codex_rollout.jsonl").read_text())
    env = child_env(home, MEMWIRE_URL="off")
    stdin = payload("codex_stop.json", cwd=str(repo), transcript=str(rollout))
    assert run_hook_cli(["stop"], stdin, env).returncode == 0  # host guessed from turn_id
    rows = _transcript_rows(home / "memory.db")
    assert len(rows) == 1 and "invoicing" in "\n".join(rows)
    stdin = payload("codex_user_prompt_submit.json", cwd=str(repo), transcript=str(rollout))
    done = run_hook_cli(["prompt", "--host", "codex"], stdin, env)
    assert done.returncode == 0 and done.stderr == ""
    # transcripts are never injected; with nothing else in the bank there is nothing to say
    assert done.stdout == ""


def test_cursor_and_gemini_output_shapes(home: Path, repo: Path, transcript: Path) -> None:
    _seed(home / "memory.db")
    env = child_env(home, MEMWIRE_URL="off")
    stdin = payload("cursor_before_submit_prompt.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["prompt"], stdin, env)
    assert json.loads(done.stdout) == {"continue": True}
    stdin = payload("cursor_stop.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["stop"], stdin, env)
    assert json.loads(done.stdout) == {}
    assert len(_transcript_rows(home / "memory.db")) == 5  # the two seeded and three replies
    stdin = payload("gemini_before_agent.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["prompt"], stdin, env)
    data = json.loads(done.stdout)
    assert data["hookSpecificOutput"]["hookEventName"] == "BeforeAgent"
    assert "ops/deploy.sh" in data["hookSpecificOutput"]["additionalContext"]


def test_garbage_never_reaches_the_model(home: Path) -> None:
    env = child_env(home, MEMWIRE_URL="off")
    for stdin in ("", "not json", "[1, 2]", '{"prompt": 5, "cwd": 7}'):
        for event in ("prompt", "session-start", "stop"):
            done = run_hook_cli([event, "--host", "claude"], stdin, env)
            assert done.returncode == 0 and done.stderr == ""
            assert done.stdout in ("",) or "memwire-recall" in done.stdout


# -- down: a URL where nothing listens ---------------------------------------------------------


def test_server_down_spools_then_drains(home: Path, repo: Path, transcript: Path) -> None:
    down = f"http://127.0.0.1:{free_port()}"
    env = child_env(home, MEMWIRE_URL=down)
    stdin = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["prompt"], stdin, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["stop"], stdin, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (home / "memory.db").exists()
    spooled = list((home / "spool").glob("*.jsonl"))
    assert spooled and "AKIAABCDEFGHIJKLMNOP" not in spooled[0].read_text()
    status = run_hook_cli(["status", "--json"], "", env)
    health = json.loads(status.stdout)
    assert status.returncode == 5 and health["spool"]["items"] == 3
    assert any("spooled" in f["error"] for f in health["last_failures"])
    # the next run that reaches a store drains the spool (here: in-process)
    local = child_env(home, MEMWIRE_URL="off")
    stdin = payload("claude_session_start.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["session-start"], stdin, local).returncode == 0
    assert len(_transcript_rows(home / "memory.db")) == 3
    assert json.loads(run_hook_cli(["status", "--json"], "", local).stdout)["spool"]["items"] == 0
    for path in spooled:
        assert not path.exists()
    # the same writes again (as after a crash between delivery and deletion) add nothing
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    (home / "hooks" / "sessions" / "abc123.json").unlink()  # forget the cursor: full re-read
    assert run_hook_cli(["stop"], stdin, local).returncode == 0
    assert len(_transcript_rows(home / "memory.db")) == 3


def test_hung_server_is_abandoned_within_budget(home: Path, repo: Path, transcript: Path) -> None:
    """A server that accepts connections but never answers: the prompt hook gives up at its
    budget, prints nothing and records why."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        url = f"http://127.0.0.1:{hung.getsockname()[1]}"
        # 1 ms against the client's 1 s socket timeout: the budget always fires first.
        env = child_env(home, MEMWIRE_URL=url, MEMWIRE_HOOK_BUDGET_MS="1")
        stdin = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
        done = run_hook_cli(["prompt"], stdin, env)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    failures = (home / "hooks" / "failures.jsonl").read_text()
    assert "time budget" in failures


# -- up: the real server -----------------------------------------------------------------------


def test_server_up(home: Path, repo: Path, transcript: Path, server: Server) -> None:
    env = child_env(home, MEMWIRE_URL=server.url, MEMWIRE_BANK="acme-web")
    for text, day in SEED:
        server.post("/banks/acme-web/retain", {"content": text, "created_at": day})
    stdin = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["prompt"], stdin, env)
    assert done.returncode == 0 and done.stderr == ""
    assert "[2026-09-20] The web app deploys" in _context(done.stdout)
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["stop"], stdin, env).returncode == 0
    rows = server.get("/banks/acme-web/memories?limit=100")
    transcripts = [r for r in rows if "transcript" in r["tags"]]
    assert len(transcripts) == 3
    assert not list((home / "spool").glob("*.jsonl")) if (home / "spool").exists() else True
    assert not (home / "memory.db").exists()  # everything went through the server
    # a second stop with the cursor forgotten: no duplicates on the server either
    (home / "hooks" / "sessions" / "abc123.json").unlink()
    assert run_hook_cli(["stop"], stdin, env).returncode == 0
    rows = server.get("/banks/acme-web/memories?limit=100")
    assert len([r for r in rows if "transcript" in r["tags"]]) == 3


def test_server_comes_back_and_drains(
    home: Path, repo: Path, transcript: Path, server: Server
) -> None:
    down = child_env(home, MEMWIRE_URL=f"http://127.0.0.1:{free_port()}", MEMWIRE_BANK="acme-web")
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["stop"], stdin, down).returncode == 0
    up = child_env(home, MEMWIRE_URL=server.url, MEMWIRE_BANK="acme-web")
    done = run_hook_cli(["drain", "--json"], "", up)
    assert done.returncode == 0 and json.loads(done.stdout)["delivered"] == 3
    rows = server.get("/banks/acme-web/memories?limit=100")
    assert len([r for r in rows if "transcript" in r["tags"]]) == 3


def test_slashed_bank_through_server_is_never_lost(
    home: Path, repo: Path, transcript: Path, server: Server
) -> None:
    """``owner/repo`` banks through HTTP: delivered if the server routes them, else spooled."""
    env = child_env(home, MEMWIRE_URL=server.url)
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["stop"], stdin, env).returncode == 0
    try:
        rows = server.get("/banks/acme%2Fweb/memories?limit=100")
    except OSError:
        rows = []
    delivered = len([r for r in rows if "transcript" in r.get("tags", [])])
    health = json.loads(run_hook_cli(["status", "--json"], "", env).stdout)
    assert delivered + health["spool"]["items"] == 3


def test_hooks_open_the_configured_store(
    home: Path, repo: Path, transcript: Path, tmp_path: Path
) -> None:
    """The store setting (memwire.toml in $MEMWIRE_HOME, then $MEMWIRE_STORE) is the hooks'
    too: what they retain lands there, not in the home's memory.db (docs/scaling.md)."""
    configured = tmp_path / "configured.db"
    (home / "memwire.toml").write_text(f'store = "sqlite:{configured}"\n', encoding="utf-8")
    env = child_env(home, MEMWIRE_URL="off")
    env.pop("MEMWIRE_STORE", None)
    stdin = payload("claude_stop.json", cwd=str(repo), transcript=str(transcript))
    done = run_hook_cli(["stop", "--host", "claude"], stdin, env)
    assert done.returncode == 0 and done.stderr == ""
    assert len(_transcript_rows(configured)) == 3
    assert not (home / "memory.db").exists()
    elsewhere = tmp_path / "from-env.db"
    env["MEMWIRE_STORE"] = str(elsewhere)  # the environment wins over the file
    stdin = payload("claude_user_prompt_submit.json", cwd=str(repo), transcript=str(transcript))
    assert run_hook_cli(["prompt", "--host", "claude"], stdin, env).returncode == 0
    assert elsewhere.exists() and not (home / "memory.db").exists()
