"""The SQLite store's checks at open (issue 19): a file that is not a store is refused rather
than opened as an empty one, and committed writes that vanished before the open (a WAL cut
short or with a flipped frame, a deleted database) are reported by ``Memory.health()`` and
failed by ``memwire doctor`` until cleared."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from memwire.__main__ import main
from memwire.errors import NotFoundError, StorageError
from memwire.memory import Memory
from memwire.store.sqlite import SQLiteStore
from memwire.store.sqlite.ledger import LEDGER_SUFFIX, Ledger, read_counters

WAL_HEADER = 32
FRAME_HEADER = 24


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMWIRE_HOME", str(tmp_path / "home"))


def _doctor(
    capsys: pytest.CaptureFixture[str], db: Path, *extra: str
) -> tuple[int, dict[str, dict[str, object]]]:
    code = main(["doctor", "--db", str(db), "--json", "--port", "1", *extra])
    out, _ = capsys.readouterr()
    return code, {c["name"]: c for c in json.loads(out)["checks"]}


def _count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    finally:
        conn.close()


def _has(memory: Memory, memory_id: str) -> bool:
    try:
        memory.get(memory_id)
    except NotFoundError:
        return False
    return True


def _copy_open_store(source: Path, target: Path) -> None:
    """The files of a store that is still open (its WAL not checkpointed into the database):
    what a crash leaves on disk."""
    for suffix in ("", "-wal", LEDGER_SUFFIX):
        shutil.copyfile(f"{source}{suffix}", f"{target}{suffix}")


def _twenty_in_the_wal(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store whose 20 retains (one commit each) are still in its WAL."""
    live = tmp_path / "live.db"
    crashed = tmp_path / "crashed.db"
    memory = Memory(live)
    try:
        ids = [memory.retain(f"memory {i} about tok{i}z") for i in range(20)]
        _copy_open_store(live, crashed)
    finally:
        memory.close()
    assert os.path.getsize(f"{crashed}-wal") > WAL_HEADER
    return crashed, ids


def _page_size(db: Path) -> int:
    with open(db, "rb") as handle:
        size = int.from_bytes(handle.read(18)[16:18], "big")
    return 65536 if size == 1 else size


def test_a_wal_cut_short_is_reported_at_open_and_by_doctor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, ids = _twenty_in_the_wal(tmp_path)
    wal = Path(f"{db}-wal")
    with open(wal, "r+b") as handle:
        handle.truncate(wal.stat().st_size // 2)

    with Memory(db) as memory:
        health = memory.health()
        loss = health.loss
        assert loss is not None and not health.ok
        kept = memory.stats()["count"]
        assert 0 < kept < 20  # SQLite dropped the commits past the cut, silently
        assert (loss.recorded_memories, loss.found_memories) == (20, kept)
        assert loss.missing_memories == 20 - kept
        assert loss.missing_commits >= 20 - kept
        assert [_has(memory, i) for i in ids] == [True] * kept + [False] * (20 - kept)

    code, checks = _doctor(capsys, db)
    assert code == 5
    assert checks["store loss"]["status"] == "fail"
    assert checks["store loss"]["recorded_memories"] == 20
    assert f"leaving {kept} memories where 20 were recorded" in str(checks["store loss"]["detail"])


def test_a_flipped_frame_is_reported(tmp_path: Path) -> None:
    db, _ = _twenty_in_the_wal(tmp_path)
    frame = FRAME_HEADER + _page_size(db)
    frames = (os.path.getsize(f"{db}-wal") - WAL_HEADER) // frame
    at = WAL_HEADER + (frames // 2) * frame + FRAME_HEADER + 100  # inside a middle frame's page
    with open(f"{db}-wal", "r+b") as handle:
        handle.seek(at)
        byte = handle.read(1)
        handle.seek(at)
        handle.write(bytes([byte[0] ^ 0x40]))

    with Memory(db) as memory:
        loss = memory.health().loss
        kept = memory.stats()["count"]
    assert kept < 20
    assert loss is not None and (loss.recorded_memories, loss.found_memories) == (20, kept)


def test_the_loss_is_kept_across_writes_and_opens_until_cleared(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, _ = _twenty_in_the_wal(tmp_path)
    os.unlink(f"{db}-wal")  # every commit since the last checkpoint gone
    with Memory(db) as memory:
        first = memory.health().loss
        assert first is not None and first.found_memories == _count(db)
        memory.retain("written after the loss was found")  # the ledger now agrees again
    with Memory(db) as memory:
        assert memory.health().loss == first  # kept in the store, not found again

    code, checks = _doctor(capsys, db, "--clear-loss")
    assert code == 0 and checks["store loss"]["status"] == "ok"
    assert "cleared the recorded loss" in str(checks["store loss"]["detail"])
    code, checks = _doctor(capsys, db)
    assert code == 0 and checks["store loss"]["detail"] == "no committed write missing at open"
    with Memory(db) as memory:
        assert memory.health().loss is None and memory.health().ok


def test_a_deleted_database_beside_its_ledger_is_a_loss(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(db) as memory:
        memory.retain_many([f"memory {i}" for i in range(5)])
    os.unlink(db)
    with Memory(db) as memory:
        loss = memory.health().loss
        assert memory.banks() == []
    assert loss is not None and (loss.recorded_memories, loss.found_memories) == (5, 0)


def test_clean_opens_crashes_and_two_writers_raise_no_alarm(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(db) as memory:
        memory.retain("one")
    one, two = SQLiteStore(db), SQLiteStore(db)  # two writers on one file, interleaved
    try:
        for _ in range(5):
            for store in (one, two):
                store.clear_loss()  # a write transaction each: counted, recorded
        assert one.loss() is None and two.loss() is None
    finally:
        one.close()
        two.close()
    # A writer killed with its WAL intact: SQLite replays it, nothing is missing.
    script = (
        "import os, sys\n"
        "from memwire.memory import Memory\n"
        "m = Memory(sys.argv[1])\n"
        "for i in range(10): m.retain(f'killed writer note {i}')\n"
        "os._exit(9)\n"
    )
    child = subprocess.run([sys.executable, "-c", script, str(db)], check=False, timeout=120)
    assert child.returncode == 9
    assert os.path.getsize(f"{db}-wal") > 0
    with Memory(db) as memory:
        assert memory.stats()["count"] == 11
        assert memory.health().loss is None and memory.health().ok


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"", "is empty (0 bytes)"),
        (b"name,content\nnot,a database\n" * 10, "is not an SQLite database"),
        (b"SQLite format 3\x00" + b"\x00" * 20, "is not an SQLite database"),
    ],
)
def test_a_file_that_is_no_database_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str
) -> None:
    db = tmp_path / "memory.db"
    db.write_bytes(content)
    with pytest.raises(StorageError, match="holds no memwire store") as caught:
        Memory(db)
    assert says in str(caught.value) and str(tmp_path) not in str(caught.value)
    assert db.read_bytes() == content  # not turned into an empty store
    assert not Path(f"{db}-wal").exists()
    code, checks = _doctor(capsys, db)
    assert code == 5 and checks["store health"]["status"] == "fail"
    assert says in str(checks["store health"]["detail"])


def test_a_truncated_database_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(db) as memory:
        memory.retain_many([f"memory {i} " + "word " * 200 for i in range(200)])
    assert not Path(f"{db}-wal").exists()  # checkpointed at close: the database file is whole
    whole = db.read_bytes()
    db.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(StorageError, match=r"is truncated \([\d,]+ of [\d,]+ bytes\)"):
        Memory(db)
    assert db.read_bytes() == whole[: len(whole) // 2]


def test_a_new_store_file_is_never_seen_empty(tmp_path: Path) -> None:
    """Stores opened at once on a path that does not exist yet all open the same store (the
    file is made whole under another name, then linked into place)."""
    db = tmp_path / "new" / "memory.db"
    errors: list[BaseException] = []
    stores: list[SQLiteStore] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def open_it() -> None:
        start.wait()
        try:
            store = SQLiteStore(db)
        except BaseException as exc:
            with lock:
                errors.append(exc)
            return
        with lock:
            stores.append(store)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == [] and len(stores) == 8
        assert [p.name for p in db.parent.iterdir() if p.name.startswith(".")] == []  # no temp
    finally:
        for store in stores:
            store.close()


def test_the_counters_follow_every_write_path(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    with Memory(db) as memory:
        memory.retain_many([f"memory {i}" for i in range(30)] + ["memory 3"])  # a duplicate
        memory.retain("a document", document_id="doc")
        memory.retain("the document, changed", document_id="doc")  # replaces the row
        first = memory.retain("to forget")
        memory.forget(first)
        memory.retain_many([f"other {i}" for i in range(4)], bank="other")
        memory.delete_bank("other")
        store = memory._store
        assert isinstance(store, SQLiteStore)
        conn = sqlite3.connect(db)
        try:
            commits, live = read_counters(conn)
        finally:
            conn.close()
        assert live == _count(db) == 31
        assert Ledger(db).read() == (commits, live)
