"""Every file memwire creates is private to its user whatever the umask: the store, its WAL and
SHM, the hook spool and rejected log, session state, logs, failures and audit files are 0600 in
0700 directories."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from memwire.memory import Memory


@pytest.mark.skipif(os.name == "nt", reason="POSIX modes")
def test_every_file_is_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "a" / "home"
    for key in list(os.environ):
        if key.startswith("MEMWIRE_") and key != "MEMWIRE_BACKEND":
            monkeypatch.delenv(key)
    monkeypatch.setenv("MEMWIRE_HOME", str(home))
    monkeypatch.setenv("MEMWIRE_URL", "off")
    from memwire.hooks import _log, spool
    from memwire.hooks.events import run_hook, spool_rejected

    monkeypatch.setattr(_log, "_configured", False)
    old = os.umask(0o022)  # the usual umask: without care every file would be 0644
    try:
        db = home / "memory.db"
        with Memory(db) as memory:
            memory.retain("the deploy runs on Fridays")
            data = {"session_id": "s1", "cwd": str(tmp_path), "prompt": "how do we deploy?"}
            run_hook("prompt", json.dumps(data), host="claude", db=str(db), budget=60)
            spool.append("default", [{"content": "later"}], reason="down")
            spool_rejected("default", [{"content": "bad"}], "refused")
            _log.failure("stop", "a failure", "detail")
            _log.audit("s1", {"ids": []})
            seen = {p.relative_to(home).as_posix() for p in home.rglob("*")}
            assert {"memory.db-wal", "memory.db-shm", "memory.db-ledger"} <= seen
            assert "spool/rejected.jsonl" in seen
            assert {"hooks/hooks.log", "hooks/failures.jsonl", "hooks/sessions/s1.json"} <= seen
            assert "hooks/audit/s1.jsonl" in seen
            for path in [home.parent, home, *home.rglob("*")]:
                mode = stat.S_IMODE(path.stat().st_mode)
                want = 0o700 if path.is_dir() else 0o600
                assert mode == want, f"{path.relative_to(tmp_path)} is {oct(mode)}"
    finally:
        os.umask(old)
