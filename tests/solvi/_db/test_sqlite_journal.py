"""The SQLite journal on its own: its options checked, its owner folder, request ids it
knows, files that are not journals refused, and a journal closed cleanly."""

from __future__ import annotations

import errno
import fcntl
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import System
from solvi._db.journal_base import JournalError
from solvi._db.sqlite_journal import SQLiteJournal


def test_synchronous_must_be_normal_or_full(tmp_path: Path) -> None:
    """Any other setting is refused before a file is touched."""
    with pytest.raises(ValueError, match=r'^synchronous must be "NORMAL" or "FULL", got \'OFF\'$'):
        SQLiteJournal(tmp_path / "j.db", synchronous="OFF")
    assert list(tmp_path.iterdir()) == []


def test_an_open_journal_holds_an_owner_lock_beside_the_file(tmp_path: Path) -> None:
    """A folder of owners next to the database, with this owner's lock in it."""
    journal = SQLiteJournal(tmp_path / "j.db")
    try:
        assert repr(journal) == f"SQLiteJournal({str(tmp_path / 'j.db')!r})"
        owners = tmp_path / "j.db.owners"
        assert [p.suffix for p in owners.iterdir() if p.suffix == ".lock"] == [".lock"]
        assert journal.logs_commits is True
    finally:
        journal.close()
    full = SQLiteJournal(tmp_path / "full.db", synchronous="FULL")
    assert full.logs_commits is False
    full.close()


def test_an_owner_lock_that_cannot_be_taken_is_a_journal_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without locks (or an owner folder this user cannot write) is a
    JournalError that names the folder and what to do, not an OSError; no lock
    file is left behind."""

    def no_locks(fd: object, operation: int) -> None:
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_locks)
    owners = tmp_path / "j.db.owners"
    expected = rf"owner folder .*j\.db\.owners \(\[Errno {errno.ENOLCK}\]"
    with pytest.raises(JournalError, match=expected) as caught:
        SQLiteJournal(tmp_path / "j.db")
    assert "let this process's user write there" in str(caught.value)
    assert list(owners.iterdir()) == []


def test_has_request_knows_the_ids_of_journaled_requests(tmp_path: Path) -> None:
    """An id a System journaled is known (also after reopening); another is not."""
    path = tmp_path / "j.db"
    system = System(claims_catalog(Calls()), ["approve"], journal=path)
    system.ask({"policy_id": "P", "claim": {}}, request_id="known")
    system.close()
    journal = SQLiteJournal(path, synchronous="FULL")
    try:
        assert journal.has_request("known") is True
        assert journal.has_request("unknown") is False
    finally:
        journal.close()


def test_a_file_that_is_not_a_journal_is_refused_naming_it(tmp_path: Path) -> None:
    """Text where a journal should be: a JournalError naming the file and the fix."""
    path = tmp_path / "j.db"
    path.write_bytes(b"this is not a database at all, only text " * 4)
    with pytest.raises(JournalError) as caught:
        SQLiteJournal(path)
    assert str(caught.value).startswith(f"{str(path)!r} is not a usable solvi journal (")
    assert str(caught.value).endswith(
        "); point journal= at another file, or move this one aside if it is damaged"
    )


FULL_DISK = """
import os, resource, signal, sys
from solvi._db.sqlite_journal import SQLiteJournal
from solvi._db.journal_base import JournalError
journal = SQLiteJournal(sys.argv[1], synchronous="FULL")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
size = os.path.getsize(sys.argv[1]) + 64 * 1024
resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
for i in range(200):
    open_ = journal.open_statement(
        f"r{i}", catalog="c", catalog_version="v", state_json='{"pad":"' + "x" * 4096 + '"}',
        plan=("a",), early_exit=True,
    )
    try:
        journal.commit((open_,))
    except JournalError as exc:
        print("JournalError", exc)
        break
    except Exception as exc:
        print("leaked", type(exc).__name__, exc)
        break
"""


def test_a_full_disk_is_not_called_a_damaged_journal(tmp_path: Path) -> None:
    """A commit the disk has no room for says so and what to do; it does not call the
    file damaged nor advise moving it aside (which would orphan its commit logs)."""
    path = tmp_path / "j.db"
    SQLiteJournal(path).close()
    done = subprocess.run(
        [sys.executable, "-c", FULL_DISK, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    kind, message = done.stdout.split(" ", 1)
    assert kind == "JournalError", done.stdout
    assert f"journal {str(path)!r} could not be written" in message
    assert "free space" in message
    assert "aside" not in message


_DETAILS: dict[str, Any] = {
    "catalog": "claims",
    "catalog_version": "v",
    "state_json": "{}",
    "plan": ("a",),
}


def test_a_process_whose_lock_file_is_deleted_writes_nothing_more(tmp_path: Path) -> None:
    """Others take an owner whose lock file is gone for dead and may claim its requests:
    the owner itself then refuses every further commit, naming the file, so no step can
    run in both processes; another journal on the file claims its open request."""
    path = tmp_path / "j.db"
    system = System(claims_catalog(Calls()), ["approve"], journal=path)
    assert system.ask({"policy_id": "P-1", "claim": {"amount": 5}})["approve"].status == "decided"
    journal = system.journal
    assert isinstance(journal, SQLiteJournal)
    journal.open("r-1", early_exit=True, **_DETAILS)
    (lock,) = (tmp_path / "j.db.owners").glob("*.lock")
    lock.unlink()
    with pytest.raises(JournalError, match=r"owner lock .* was deleted while it ran"):
        system.ask({"policy_id": "P-1", "claim": {"amount": 5}})
    assert not journal.owner_alive(journal.owner)
    other = SQLiteJournal(path)
    assert other.claim("r-1")
    other.close()
    system.close()  # closing writes nothing, so it has nothing to refuse


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_journal_file_deleted_or_replaced_is_refused(tmp_path: Path, how: str) -> None:
    """A journal whose file is no longer at its path writes nothing more (no other
    process would ever read it) and says what became of the file."""
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path, synchronous="FULL")
    journal.open("r-1", early_exit=True, **_DETAILS)
    path.unlink()
    if how == "replaced":
        SQLiteJournal(path).close()
    with pytest.raises(JournalError, match=f"journal '{path}' was {how}"):
        journal.open("r-2", early_exit=True, **_DETAILS)
    journal.close()


def _opening(journal: SQLiteJournal, name: int | str) -> tuple[Any, ...]:
    """The unit of one request's open entry (``r<n>`` for a number)."""
    request_id = name if isinstance(name, str) else f"r{name}"
    return (
        journal.open_statement(
            request_id, catalog="c", catalog_version="1", state_json="{}", plan=(), early_exit=False
        ),
    )


def test_a_backlog_is_applied_in_short_transactions_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the writer cannot apply the log (another connection holds the file), commits
    go on into the log until it holds BACKLOG records; the next one is durable but its
    ticket waits for the writer to catch up. Once the file is free, the writer applies
    the backlog in transactions of at most APPLY_MAX records, and every request lands."""
    import sqlite3
    import time

    from solvi._db import journal_log, sqlite_journal

    monkeypatch.setattr(sqlite_journal, "BACKLOG", 40)
    monkeypatch.setattr(sqlite_journal, "APPLY_MAX", 8)
    sizes: list[int] = []
    apply_records = journal_log.apply_records

    def counted(conn: Any, name: str, records: Any, applied: Any) -> None:
        sizes.append(len(records))
        apply_records(conn, name, records, applied)

    monkeypatch.setattr(journal_log, "apply_records", counted)
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)

    journal.catch_up()  # the writer's connection exists before the file is held
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        tickets = [journal.submit(_opening(journal, n)) for n in range(41)]
        assert all(t.done for t in tickets[:40])
        time.sleep(0.2)
        assert not tickets[40].done  # durable in the log; its caller waits for the writer
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    tickets[40].wait()
    journal.close()
    assert max(sizes) <= 8
    assert sum(sizes) == 41
    conn = sqlite3.connect(path)
    try:
        (count,) = conn.execute("SELECT count(*) FROM journal_requests").fetchone()
    finally:
        conn.close()
    assert count == 41


def test_a_writer_that_cannot_catch_up_stops_the_log_growing_until_it_can(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past BACKLOG records a commit is appended, then waits for the writer; once the
    writer has failed to apply the log (the file held past its timeout), further
    commits are refused with a JournalError naming the cause, and nothing of them is
    written, so the backlog stops growing. Once a try succeeds, commits are taken again,
    and every commit taken is applied."""
    import sqlite3
    import time

    from solvi._db import sqlite_journal

    monkeypatch.setattr(sqlite_journal, "BACKLOG", 5)
    monkeypatch.setattr(sqlite_journal, "BUSY_TIMEOUT", 0.2)
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)

    journal.catch_up()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        tickets = [journal.submit(_opening(journal, n)) for n in range(6)]
        tickets[5].wait()  # the writer tried, and failed: the record is durable all the same
        refused = journal.submit(_opening(journal, 6))
        with pytest.raises(JournalError, match=r"holds 6 commits in its log .*database is locked"):
            refused.wait()
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    deadline = time.monotonic() + 10
    while True:  # the refusal queued another try, which now succeeds
        taken = journal.submit(_opening(journal, 7))
        if taken.error is None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    taken.wait()
    journal.close()
    conn = sqlite3.connect(path)
    try:
        ids = sorted(row[0] for row in conn.execute("SELECT request_id FROM journal_requests"))
    finally:
        conn.close()
    assert ids == [f"r{n}" for n in (0, 1, 2, 3, 4, 5, 7)]


def test_a_connection_opened_read_only_is_opened_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite opens a file it may not write read-only, and the connection stays so once
    the file is writable: the commit that meets it fails naming the rights, and the
    next one, on a connection opened again, lands."""
    import sqlite3

    from solvi._db import sqlite_journal

    path = tmp_path / "j.db"
    SQLiteJournal(path).close()  # the file exists, migrated
    real_connect = sqlite3.connect
    read_only = [True]

    def connect(database: Any, **options: Any) -> sqlite3.Connection:
        if read_only[0]:
            read_only[0] = False
            return real_connect(f"file:{database}?mode=ro", uri=True, **options)
        return real_connect(database, **options)

    journal = SQLiteJournal(path, synchronous="FULL")
    monkeypatch.setattr(sqlite_journal.sqlite3, "connect", connect)

    with pytest.raises(JournalError, match=r"readonly database.*may not write it"):
        journal.commit(_opening(journal, 0))
    journal.commit(_opening(journal, 1))
    assert journal.has_request("r1") is True
    assert journal.has_request("r0") is False
    journal.close()


def test_closing_goes_on_past_log_files_it_cannot_cut_or_delete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An owner folder that no longer lets this process change its files: close still
    stops the writer and lets go of the owner lock, raising nothing (the files stay,
    every record in them applied)."""
    import fcntl

    from solvi._db import journal_log

    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.commit(_opening(journal, "r"))

    def refuse(*_: Any, **__: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(journal_log.LogWriter, "close", refuse)
    monkeypatch.setattr(Path, "unlink", refuse)
    owner = next((tmp_path / "j.db.owners").glob("*.lock"))
    journal.close()
    with owner.open("w") as handle:  # the lock is free: taking it does not block
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    monkeypatch.undo()
    later = SQLiteJournal(path)
    assert later.has_request("r") is True
    later.close()


def test_a_writer_that_cannot_write_tries_again_at_its_own_pace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the file cannot be written and commits are refused, the writer tries again
    within Writer.delay of a refusal, not once for every refused commit."""
    import sqlite3
    import time

    from solvi._db import sqlite_journal

    monkeypatch.setattr(sqlite_journal, "BACKLOG", 3)
    monkeypatch.setattr(sqlite_journal, "BUSY_TIMEOUT", 0.0)  # a try fails at once
    tries = []
    write = SQLiteJournal._write

    def counted(self: SQLiteJournal, units: list[Any]) -> None:
        tries.append(time.monotonic())
        write(self, units)

    monkeypatch.setattr(SQLiteJournal, "_write", counted)
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.catch_up()
    holder = sqlite3.connect(tmp_path / "j.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    refused = 0
    try:
        for n in range(4):
            journal.submit(_opening(journal, n)).wait()
        start, n = time.monotonic(), 4
        while time.monotonic() - start < 0.5:
            refused += journal.submit(_opening(journal, n)).error is not None
            n += 1
            time.sleep(0.001)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    journal.close()
    assert refused > 100
    assert len(tries) <= 0.5 / journal.writer.delay + 5


def test_a_read_refused_as_read_only_says_why_it_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read applies the commit logs not yet applied in a transaction it rolls back,
    so on a file this process may not write it can fail: the error says why a read
    writes (not that a commit failed), and the next read opens its connection again."""
    import sqlite3

    from solvi._db import journal_log

    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    apply_logs = journal_log.apply_logs
    refusals = [1]

    def read_only_once(*args: Any, **options: Any) -> Any:
        if refusals.pop() if refusals else 0:
            exc = sqlite3.OperationalError("attempt to write a readonly database")
            exc.sqlite_errorname = "SQLITE_READONLY"
            raise exc
        return apply_logs(*args, **options)

    monkeypatch.setattr(journal_log, "apply_logs", read_only_once)
    with pytest.raises(JournalError) as refused:
        journal.has_request("r")
    assert str(refused.value) == (
        f"journal {str(path)!r} could not be read (attempt to write a readonly database): "
        f"a read applies the commit logs in a transaction it rolls back, so it needs to "
        f"write the file; this process may not write it: let its user write the file, its "
        f"folder and the -wal and -shm files beside it"
    )
    assert journal.has_request("r") is False
    journal.close()
