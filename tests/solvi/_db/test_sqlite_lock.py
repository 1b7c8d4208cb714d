"""solvi._db.sqlite_lock: write transactions that wait for the lock in turn, and give up
with a clear error."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest
from threads import errors_in_threads

from solvi._db import sqlite_journal, sqlite_lock
from solvi._db.sqlite_journal import SQLiteJournal
from solvi._db.sqlite_lock import busy, unwritable, write_transaction
from solvi.journal import JournalError


def _connect(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    return conn


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "t.db"
    conn = _connect(path)
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.close()
    return path


def _rows(path: Path) -> list[int]:
    conn = _connect(path)
    try:
        return [row[0] for row in conn.execute("SELECT x FROM t ORDER BY x")]
    finally:
        conn.close()


def test_a_transaction_commits_on_return_and_rolls_back_otherwise(db: Path) -> None:
    """Returned: committed; raised: rolled back and raised again; commit=False: rolled back."""
    conn = _connect(db)
    with write_transaction(conn, str(db), 1.0):
        conn.execute("INSERT INTO t VALUES (1)")

    def fail() -> None:
        with write_transaction(conn, str(db), 1.0):
            conn.execute("INSERT INTO t VALUES (2)")
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fail()
    with write_transaction(conn, str(db), 1.0, commit=False):
        conn.execute("INSERT INTO t VALUES (3)")
    assert not conn.in_transaction
    assert _rows(db) == [1]
    # the connection's own busy timeout is what it was, for every other statement
    assert conn.execute("PRAGMA busy_timeout").fetchone() == (1000,)


def test_it_waits_for_another_connection_to_let_go(db: Path) -> None:
    """Another connection (another process, to SQLite) holds the lock; the transaction
    starts once it is released, and its write lands after the other's."""
    holder = _connect(db)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("INSERT INTO t VALUES (1)")
    waiting = threading.Event()

    def release() -> None:
        waiting.wait(5)
        holder.execute("COMMIT")

    thread = threading.Thread(target=release)
    thread.start()
    conn = _connect(db)
    waiting.set()
    with write_transaction(conn, str(db), 5.0):
        conn.execute("INSERT INTO t VALUES ((SELECT max(x) FROM t) + 1)")
    thread.join()
    assert _rows(db) == [1, 2]


def test_a_lock_held_past_the_timeout_is_reported_naming_the_file(db: Path) -> None:
    holder = _connect(db)
    holder.execute("BEGIN IMMEDIATE")
    conn = _connect(db)
    try:
        with pytest.raises(sqlite3.OperationalError) as exc, write_transaction(conn, str(db), 0.2):
            pytest.fail("the body ran without the lock")
        assert str(exc.value) == (
            f"database is locked: another connection held the write lock of {str(db)!r} "
            f"for more than 0.2 s"
        )
        assert busy(exc.value)
        assert not conn.in_transaction
        assert conn.execute("PRAGMA busy_timeout").fetchone() == (200,)
    finally:
        holder.execute("ROLLBACK")


def test_threads_of_one_process_wait_in_turn(db: Path) -> None:
    """While one thread of the process holds the database's write lock, another waits on
    the process's turn (not on SQLite), and says so when its timeout passes; then
    threads writing at once all get their turn."""
    inside, leave = threading.Event(), threading.Event()

    def hold() -> None:
        conn = _connect(db)
        with write_transaction(conn, str(db), 5.0):
            inside.set()
            leave.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(5)
    conn = _connect(db)
    with pytest.raises(sqlite3.OperationalError, match="another thread of this process"):
        with write_transaction(conn, str(db), 0.2):
            pytest.fail("two threads of one process held the write lock at once")
    leave.set()
    holder.join()

    def add(n: int) -> None:
        own = _connect(db)
        for k in range(20):
            with write_transaction(own, str(db), 30.0):
                own.execute("INSERT INTO t VALUES (?)", (n * 100 + k,))

    assert errors_in_threads(add, 8) == []
    assert len(_rows(db)) == 160


def test_any_other_error_is_raised_at_once(db: Path) -> None:
    conn = _connect(db)
    conn.execute("BEGIN")
    with pytest.raises(sqlite3.OperationalError, match="within a transaction") as exc:
        with write_transaction(conn, str(db), 30.0):
            pytest.fail("a transaction began inside another")
    assert not busy(exc.value)


def test_a_journal_locked_too_long_says_so_not_that_it_is_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal whose file another connection keeps locked past the timeout raises a
    JournalError that names the lock, not one that calls the file damaged."""
    path = tmp_path / "journal.db"
    journal = SQLiteJournal(path)
    monkeypatch.setattr(sqlite_journal, "BUSY_TIMEOUT", 0.2)
    holder = _connect(path)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(JournalError) as exc:
            journal.catch_up()
    finally:
        holder.execute("ROLLBACK")
        journal.close()
    assert str(exc.value) == (
        f"journal {str(path)!r} could not be written: database is locked: another "
        f"connection held the write lock of {str(path)!r} for more than 0.2 s; find the "
        f"process or tool keeping a transaction open on the file, and try again once it has "
        f"finished"
    )


def test_a_forked_child_does_not_wait_for_a_turn_its_parent_held(db: Path) -> None:
    """A thread of the parent holds the turn (not the database) when the process forks:
    the child's own write transaction goes ahead at once."""
    inside, leave = threading.Event(), threading.Event()
    turn = sqlite_lock._turn(str(db)).lock

    def hold() -> None:
        with turn:
            inside.set()
            leave.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(5)
    try:
        pid = os.fork()
        if pid == 0:  # the child: write, and say how it went by the exit status
            status = 1
            try:
                conn = _connect(db)
                with write_transaction(conn, str(db), 2.0):
                    conn.execute("INSERT INTO t VALUES (7)")
                status = 0
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
    finally:
        leave.set()
        holder.join()
    assert os.waitstatus_to_exitcode(status) == 0
    assert _rows(db) == [7]


class _BusyAtFirst:
    """A connection whose WAL switch finds the file busy `times` times, as SQLite answers
    the other connections while one of them switches a new file."""

    def __init__(self, times: int) -> None:
        self.left = times
        self.asked = 0

    def execute(self, sql: str) -> None:
        assert sql == "PRAGMA journal_mode=WAL"
        self.asked += 1
        if self.left:
            self.left -= 1
            exc = sqlite3.OperationalError("database is locked")
            exc.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise exc


def test_the_switch_to_wal_is_tried_again_while_the_file_is_busy() -> None:
    conn = _BusyAtFirst(times=3)
    sqlite_lock.use_wal(conn, "s.db", timeout=5)  # type: ignore[arg-type]
    assert conn.asked == 4
    with pytest.raises(sqlite3.OperationalError, match=r"held the write lock of 's.db'"):
        sqlite_lock.use_wal(_BusyAtFirst(times=10**9), "s.db", timeout=0.01)  # type: ignore[arg-type]


def test_many_connections_opening_one_new_store_all_open_it(tmp_path: Path) -> None:
    """Eight at once, twenty times: none is refused with "database is locked"."""
    from solvi.storage import SQLiteStore

    for trial in range(20):
        path, barrier = tmp_path / f"s{trial}.db", threading.Barrier(8)

        def open_it(_: int, path: Path = path, barrier: threading.Barrier = barrier) -> None:
            barrier.wait(timeout=10)
            SQLiteStore(path).close()

        assert errors_in_threads(open_it, 8) == []


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("SQLITE_READONLY", "may not write it"),
        ("SQLITE_READONLY_DBMOVED", "may not write it"),
        ("SQLITE_FULL", "the disk is full"),
        ("SQLITE_IOERR_WRITE", "free space"),
        ("SQLITE_CANTOPEN", "cannot be opened"),
        ("SQLITE_CORRUPT", None),
        ("SQLITE_NOTADB", None),
    ],
)
def test_unwritable_tells_room_and_rights_from_damage(name: str, says: str | None) -> None:
    """A write refused for want of room or rights gets advice; damage gets none (its
    caller says the file is damaged)."""
    exc = sqlite3.OperationalError("refused")
    exc.sqlite_errorname = name
    advice = unwritable(exc)
    assert (advice is None) if says is None else (advice is not None and says in advice)


def test_placed_notices_a_file_deleted_or_replaced(tmp_path: Path) -> None:
    """A path still naming the file opened (and held open, so that its inode is not
    reused) is fine; deleted, or another file put in its place, is said."""
    path = tmp_path / "f"
    path.write_text("a")
    with path.open() as handle:
        placed = sqlite_lock.Placed.of(path, handle.fileno())
        assert placed == sqlite_lock.Placed.of(path)
        assert placed.moved() is None
        path.unlink()
        assert placed.moved() == "was deleted"
        path.write_text("b")
        assert placed.moved() == "was replaced by another file"


def test_a_transaction_on_a_file_that_moved_is_refused(db: Path) -> None:
    """SQLite would write the unlinked file without a word: the transaction is refused
    before its body, and nothing is left open."""
    conn = _connect(db)
    placed = sqlite_lock.Placed.of(db)
    with write_transaction(conn, str(db), 5.0, placed=placed):
        conn.execute("INSERT INTO t VALUES (1)")
    os.rename(db, db.with_suffix(".old"))
    ran = []
    with pytest.raises(sqlite_lock.FileMoved) as caught:
        with write_transaction(conn, str(db), 5.0, placed=placed):
            ran.append(1)
    assert (caught.value.how, ran, conn.in_transaction) == ("was deleted", [], False)
    conn.close()


#: a process that takes the write lock again the moment it lets go, holding it for
#: 20 ms each time (as a journal's writer thread does when it is behind on its log)
_HOGGER = """
import sqlite3, sys, time
from solvi._db.sqlite_lock import write_transaction
path = sys.argv[1]
conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
conn.execute("PRAGMA busy_timeout = 0")
print("RUNNING", flush=True)
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    with write_transaction(conn, path, 30.0, polling=True):
        conn.execute("INSERT INTO t VALUES (0)")
        time.sleep(0.02)
"""


def test_a_process_writing_back_to_back_lets_a_waiting_process_in(db: Path) -> None:
    """Beside a process that begins its next transaction the moment it commits, the
    free moments are microseconds long: a waiter looking every millisecond missed them
    for seconds. A waiter now says it waits, and the other process gives way to it
    before its next transaction, so each of 30 writes gets in within a few of the
    other's transactions."""
    import subprocess
    import sys
    import time

    hogger = subprocess.Popen(
        [sys.executable, "-c", _HOGGER, str(db), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert hogger.stdout is not None
        assert hogger.stdout.readline().strip() == "RUNNING"
        time.sleep(0.2)
        conn = _connect(db)
        waits = []
        for k in range(30):
            started = time.monotonic()
            with write_transaction(conn, str(db), 30.0):
                waits.append(time.monotonic() - started)
                conn.execute("INSERT INTO t VALUES (?)", (k + 1,))
            time.sleep(0.05)  # the other process has the lock again by then
        conn.close()
    finally:
        hogger.kill()
        hogger.wait()
        hogger.stdout.close()
    assert max(waits) < 0.5, sorted(waits)[-5:]
    assert [x for x in _rows(db) if x] == list(range(1, 31))
