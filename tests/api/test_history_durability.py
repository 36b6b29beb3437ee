"""Issue 17 on disk: supersession is atomic under SIGKILL (never both versions live, never
neither), a purged secret leaves the SQLite files after vacuum, and stores of the previous
schema open with their memories."""

from __future__ import annotations

import random
import sqlite3
import textwrap
from pathlib import Path

from api_support import run_and_kill
from memwire import Memory
from memwire.store.sqlite import SCHEMA_VERSION, SQLiteStore

CHAINS = 5

# Each acknowledged update prints "<n> <new id>"; a restart finds each chain's live version.
CHILD_SUPERSEDE_LOOP = textwrap.dedent(
    """
    import sys
    import memwire
    path, backend, chains = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with memwire.Memory(path, backend=backend, embedder="none") as m:
        live = {}
        for record in m.memories(bank="chains", limit=1000):
            live[int(record.content.split()[1])] = record.id
        for i in range(chains):
            if i not in live:
                live[i] = m.retain(f"chain {i} version 0", bank="chains")
        n = 0
        while True:
            for i in range(chains):
                n += 1
                live[i] = m.update(live[i], content=f"chain {i} version {n}")
                print(n, live[i], flush=True)
    """
)


def test_sigkill_never_leaves_a_chain_with_two_or_no_live_versions(
    db_path: Path, backend: str
) -> None:
    chosen = random.Random(17)
    acknowledged: dict[int, str] = {}
    for _ in range(4):  # killed at a different point each time, on the same file
        acknowledged.update(
            run_and_kill(
                CHILD_SUPERSEDE_LOOP,
                [str(db_path), backend, str(CHAINS)],
                at_least=chosen.randint(5, 60),
            )
        )
        with Memory(db_path, backend=backend, embedder="none") as m:
            live = m.memories(bank="chains", limit=1000)
            by_chain = sorted(int(r.content.split()[1]) for r in live)
            assert by_chain == list(range(CHAINS))  # exactly one live version per chain
            for record in live:
                history = m.history(record.id, bank="chains")
                assert [r.status for r in history][-1] == "live"
                assert all(r.status == "superseded" for r in history[:-1])
                assert {int(r.content.split()[1]) for r in history} == {
                    int(record.content.split()[1])
                }
            for mid in acknowledged.values():  # every acknowledged version is kept
                assert m.get(mid, bank="chains").content.startswith("chain ")


SECRET = "quibbleflontrax"  # a made-up word: redaction leaves it alone


def _files(db_path: Path) -> list[Path]:
    return [p for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")) if p.exists()]


def test_a_purged_secret_leaves_the_database_files(db_path: Path, backend: str) -> None:
    with Memory(db_path, backend=backend) as m:
        leaked = m.retain(f"the deploy key word is {SECRET} for the staging box")
        m.recall("deploy key")  # in the index, so its vocabulary is in the next snapshot
    with Memory(db_path, backend=backend) as m:
        fixed = m.update(leaked, content="the deploy key word was rotated for the staging box")
        assert [h.id for h in m.recall("deploy key")] == [fixed]
    assert any(SECRET.encode() in p.read_bytes() for p in _files(db_path))  # it was there
    with Memory(db_path, backend=backend) as m:
        # Builds differ (Debian's SQLite zeroes deleted cells by default, others do not):
        # with secure_delete off, only vacuum() can be what removes the bytes.
        m._store.conn.execute("PRAGMA secure_delete=OFF")  # type: ignore[attr-defined]
        assert m.purge(leaked)
        assert [h.id for h in m.recall("deploy key")] == [fixed]  # rebuilt without it
        m.vacuum()
    for path in _files(db_path):
        assert SECRET.encode() not in path.read_bytes(), path.name
    with Memory(db_path, backend=backend) as m:  # and the store still works
        assert [r.id for r in m.history(fixed)] == [fixed]
        assert [h.id for h in m.recall("deploy key")] == [fixed]


def test_a_store_of_the_previous_schema_opens_with_its_memories(
    db_path: Path, backend: str
) -> None:
    with Memory(db_path, backend=backend) as m:
        kept = m.retain("a memory from before history", tags=["old"])
    with sqlite3.connect(db_path) as conn:  # as the previous version left it
        conn.execute("DROP TABLE archive")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION - 1}")
    with Memory(db_path, backend=backend) as m:
        assert m.get(kept).tags == ("old",)
        assert [h.id for h in m.recall("memory before history")] == [kept]
        new = m.update(kept, content="a memory after history")
        assert [r.id for r in m.history(new)] == [kept, new]
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    SQLiteStore(db_path).close()  # opening again migrates nothing more
