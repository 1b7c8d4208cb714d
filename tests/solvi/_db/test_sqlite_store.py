"""The SQLite store on its own: a response kept and read back, read-only opens that refuse
what is not a store (leaving the file as it was), and a closed store said closed."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from stores import SAMPLE_RECORD as RECORD

from solvi._db.sqlite_store import SQLiteStore, sqlite_execute
from solvi.errors import StoreError

FIX = "give the path of a store a System wrote (System(store=...))"


def test_a_saved_response_is_read_back_and_counted_in_the_audit_head(tmp_path: Path) -> None:
    """save_response then get_record, and the head moved to the one decision entry."""
    store = SQLiteStore(tmp_path / "s.db")
    store.save_response(RECORD, request_id="r1")
    assert store.get_record("r1") == RECORD
    assert store.audit_head()[0] == 1
    assert repr(store) == f"SQLiteStore({str(tmp_path / 's.db')!r})"
    store.close()
    reader = SQLiteStore(tmp_path / "s.db", read_only=True)
    assert reader.schema_version == 1
    assert [rid for rid, _ in reader.iter_records()] == ["r1"]
    with pytest.raises(StoreError, match=r"was opened read only"):
        reader.save_response(RECORD, request_id="r2")
    reader.close()


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: None, "no SQLite store at {where}: no such file; " + FIX),
        (lambda p: p.mkdir(), "no SQLite store at {where}: a folder; " + FIX),
        (
            lambda p: p.write_bytes(b""),
            "{where} is an empty file (0 bytes), not a solvi store; " + FIX,
        ),
    ],
    ids=["missing", "folder", "empty"],
)
def test_a_read_only_open_refuses_what_is_not_a_store(
    tmp_path: Path, make: object, problem: str
) -> None:
    """Each refusal names the path and what is there instead."""
    path = tmp_path / "x.db"
    make(path)  # type: ignore[operator]
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path, read_only=True)
    assert str(caught.value) == problem.format(where=repr(str(path)))


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path: Path) -> None:
    """Text is not a database: refused as such, the file unchanged, no side file made."""
    path = tmp_path / "notes.db"
    path.write_bytes(b"not a database, just some text that is long enough" * 4)
    before = path.read_bytes()
    with pytest.raises(StoreError) as caught:
        SQLiteStore(path, read_only=True)
    assert str(caught.value).startswith(f"{str(path)!r} is not a SQLite database (")
    assert str(caught.value).endswith(f"), so not a solvi store; {FIX}")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_a_closed_store_says_so(tmp_path: Path) -> None:
    """Any call after close() names the store and asks for a new one."""
    store = SQLiteStore(tmp_path / "s.db")
    store.close()
    with pytest.raises(StoreError) as caught:
        store.get_record("r1")
    assert str(caught.value) == f"SQLite store {str(tmp_path / 's.db')!r} is closed; open a new one"


def test_sqlite_execute_turns_plan_placeholders_into_sqlites() -> None:
    """%s placeholders run as ? and the rows come back."""
    conn = sqlite3.connect(":memory:")
    execute = sqlite_execute(conn)
    execute("CREATE TABLE t (a, b)", ())
    execute("INSERT INTO t VALUES (%s, %s)", (1, "x"))
    assert execute("SELECT a, b FROM t WHERE a = %s", (1,)) == [(1, "x")]
    conn.close()


def test_a_store_locked_past_its_timeout_is_a_store_error(tmp_path: Path) -> None:
    """Another connection keeps the write lock: a save waits `timeout=`, then raises a
    StoreError (a SolviError) that says what to do, not sqlite3's own error."""
    store = SQLiteStore(tmp_path / "s.db", timeout=0.2)
    other = sqlite3.connect(tmp_path / "s.db", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StoreError, match=r"is locked: .*pass a longer timeout=$"):
            store.save_costs("c", {"p": (1, 1.0)})
    finally:
        other.execute("ROLLBACK")
        other.close()
    store.save_costs("c", {"p": (1, 1.0)})
    assert store.load_costs("c") == {"p": (1, 1.0)}
    store.close()


FULL_DISK = """
import json, os, resource, signal, sys
from solvi._db.sqlite_store import SQLiteStore
from solvi.errors import StoreError
store = SQLiteStore(sys.argv[1])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = os.path.getsize(sys.argv[1]) + 64 * 1024
resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
record = json.loads(sys.argv[2])
record["pad"] = "x" * 4096
for i in range(200):
    try:
        store.save_response(record, request_id=f"r{i}")
    except StoreError as exc:
        print("StoreError", i, exc)
        break
    except Exception as exc:
        print("leaked", type(exc).__name__, exc)
        break
"""


def test_a_full_disk_is_a_store_error_that_says_so(tmp_path: Path) -> None:
    """A save the disk has no room for (here a file size limit, which behaves alike) is a
    StoreError naming the file and the likely cause, not a raw sqlite3 error; what was
    saved before stays whole."""
    path = tmp_path / "s.db"
    SQLiteStore(path).close()
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path), json.dumps(RECORD)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    kind, saved, message = done.stdout.split(" ", 2)
    assert kind == "StoreError", done.stdout
    assert f"SQLite store {str(path)!r} could not be written" in message
    assert "free space" in message
    store = SQLiteStore(path)
    try:
        assert len(list(store.iter_records())) == int(saved)
    finally:
        store.close()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_store_file_deleted_or_replaced_under_it_is_refused(tmp_path: Path, how: str) -> None:
    """SQLite would go on writing the unlinked file, where no one will read what it
    keeps: the next save is refused with a StoreError saying what became of the file."""
    path = tmp_path / "s.db"
    store = SQLiteStore(path)
    store.save_response(RECORD, request_id="r-1")
    path.unlink()
    if how == "replaced":
        SQLiteStore(path).close()
    with pytest.raises(StoreError, match=f"SQLite store '{path}' was {how}"):
        store.save_response(RECORD, request_id="r-2")
    store.close()
