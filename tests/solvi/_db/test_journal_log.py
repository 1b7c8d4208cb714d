"""The SQLite journal's commit logs: a commit is one append of a JSON record, applied to
the database later; readers see every commit and write nothing; a killed owner's log
is read back and applied by a recovery; a record cut short by a death, a damaged
record and a record the database refuses are each counted, never lost silently."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from flows import crashy
from hypothesis import given
from hypothesis import strategies as st

from solvi import ResumeRefused
from solvi._db import journal_log
from solvi._db.journal_rows import EntryRows, statements_of
from solvi.journal import INSERT_ENTRY, JournalError, SQLiteJournal

HERE = Path(__file__).resolve().parents[1]  # tests/solvi, where the flows live
#: what the killed child settled before it died inside `points`
SETTLED = ("policy", "policy_in_force", "fraud_score", "documents")


def _rows(path: Path, table: str) -> list[tuple[Any, ...]]:
    """A table's rows, read with sqlite3 itself (no log applied)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.execute(f"SELECT * FROM {table} ORDER BY 1"))
    finally:
        conn.close()


def _logs(path: Path) -> list[Path]:
    return sorted(Path(f"{path}.owners").glob("*.jlog"))


@pytest.fixture
def killed(tmp_path: Path) -> tuple[Path, Path]:
    """A journal whose owner was SIGKILLed inside `points`, its log never applied
    (the child's writer thread waits a minute before it applies anything)."""
    path = tmp_path / "j.db"
    calls = tmp_path / "calls.log"
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(HERE)!r})
        from flows import crashy
        crashy.CRASH_AT["points"] = "kill"
        system = crashy.build({str(path)!r})
        system.journal.writer.delay = 60.0
        # Unchecked, the id is opened in the log like a made one (a checked caller's id
        # is opened in the database itself), so the whole request is in the log.
        system.journal.has_request = lambda request_id: False
        system.ask(crashy.STATE, request_id="killed")
        """
    )
    env = {**os.environ, "SOLVI_CALL_LOG": str(calls)}
    done = subprocess.run([sys.executable, "-c", script], env=env, timeout=60, check=False)
    assert done.returncode == -9
    assert _rows(path, "journal_entries") == []  # all in the log
    return path, calls


def _records(log: Path) -> list[bytes]:
    """A log's records (a killed owner's mapped file ends in zeros, not cut off)."""
    return log.read_bytes().rstrip(b"\0").splitlines(keepends=True)


def test_a_killed_owners_log_is_read_back_then_applied_by_recover(
    killed: tuple[Path, Path],
) -> None:
    """The dead owner's commits are only in its log: a reader sees them and writes
    nothing; recover() applies them for good, deletes the log, and resume goes on."""
    path, calls = killed
    (log,) = _logs(path)
    before = log.read_bytes()
    system = crashy.build(path)
    try:
        (status,) = system.journal_status()
        assert status.settled == SETTLED
        assert status.interrupted_during_execution == ("points",)
        assert status.interrupted_before_start == ("approve",)
        assert _rows(path, "journal_entries") == []
        assert log.read_bytes() == before
        assert [r.request_id for r in system.recover()] == ["killed"]
        assert len(_rows(path, "journal_entries")) == 2 * len(SETTLED) + 1
        assert not log.exists()
        crashy.CALL_LOG.clear()
        response = system.resume("killed")
    finally:
        system.close()
    assert response["approve"].guard == "interrupted"
    assert calls.read_text().split() == [*SETTLED, "points"]
    assert crashy.CALL_LOG == []  # points is not idempotent: approve waits for it


def test_a_record_cut_short_by_the_death_costs_only_itself(killed: tuple[Path, Path]) -> None:
    """A last record cut short (the owner died writing it) is counted as torn; what it
    guarded never began, so the step it would have started runs on resume."""
    path, calls = killed
    (log,) = _logs(path)
    *kept, last = _records(log)
    assert b'"points"' in last
    log.write_bytes(b"".join(kept) + last[: len(last) // 2])
    system = crashy.build(path)
    try:
        (status,) = system.journal_status()
        assert status.skipped_torn == 1
        assert status.settled == SETTLED
        assert status.interrupted_during_execution == ()
        assert status.interrupted_before_start == ("points", "approve")
        crashy.CALL_LOG.clear()
        response = system.resume("killed")
    finally:
        system.close()
    assert response["approve"].value is True
    assert calls.read_text().split() == [*SETTLED, "points"]
    assert crashy.CALL_LOG == ["points", "approve"]


def test_a_damaged_record_leaves_no_step_of_its_request_to_run_twice(
    killed: tuple[Path, Path],
) -> None:
    """A record damaged before the end of the log may have held any entry of its
    request: every step not settled counts as started, so none that is not
    idempotent runs again, and the questions that need one abstain."""
    path, _ = killed
    (log,) = _logs(path)
    records = _records(log)
    (k,) = [i for i, r in enumerate(records) if b'"v"' in r and b'"documents"' in r]
    records[k] = records[k].replace(b'"documents"', b'"documentz"')  # the digest no longer fits
    log.write_bytes(b"".join(records))
    system = crashy.build(path)
    try:
        (status,) = system.journal_status()
        assert status.skipped_torn == 1
        assert status.settled == SETTLED[:-1]
        assert status.interrupted_during_execution == ("documents", "points", "approve")
        crashy.CALL_LOG.clear()
        response = system.resume("killed")
    finally:
        system.close()
    assert response["approve"].guard == "interrupted"
    assert crashy.CALL_LOG == ["documents"]  # idempotent: it may run again


def test_a_record_cut_short_inside_the_log_loses_only_itself(
    killed: tuple[Path, Path],
) -> None:
    """A record whose second half and newline are gone runs into the next record: that
    one is still read and applied, and only the cut one counts as damaged."""
    path, _ = killed
    (log,) = _logs(path)
    records = _records(log)
    (k,) = [i for i, r in enumerate(records) if b'"v"' in r and b'"documents"' in r]
    follows = records[k + 1]
    assert b'"points"' in follows  # the start of the step the owner died in
    records[k] = records[k][: len(records[k]) // 2]
    log.write_bytes(b"".join(records))
    system = crashy.build(path)
    try:
        (status,) = system.journal_status()
        assert status.skipped_torn == 1
        assert status.settled == SETTLED[:-1]
        assert [r.request_id for r in system.recover()] == ["killed"]
    finally:
        system.close()
    entries = _rows(path, "journal_entries")
    assert len(entries) == 2 * len(SETTLED) + 1 - 1  # only the cut record's entry is gone
    assert any("points" in map(str, row) for row in entries)


def test_a_hostile_line_costs_a_bounded_time_to_read() -> None:
    """A damaged line full of record starts is tried at a bounded number of them."""
    line = b'[["' * 200_000 + b"\t" + b"0" * 32 + b"\n"
    started = time.process_time()
    records, rest = journal_log.parse(line)
    assert time.process_time() - started < 5.0
    assert rest == b""
    assert [r.statements for r in records] == [None]


def test_a_damaged_first_record_still_counts_its_request(killed: tuple[Path, Path]) -> None:
    """A dead owner's log whose first record (the open entry) is damaged: its request
    is counted as damaged, and resume refuses it clearly."""
    path, _ = killed
    (log,) = _logs(path)
    records = _records(log)
    assert b'"o"' in records[0]
    records[0] = records[0].replace(b"P1", b"P2", 1)
    log.write_bytes(b"".join(records))
    system = crashy.build(path)
    try:
        assert system.journal_status() == []
        assert system.journal is not None
        assert system.journal.damaged == {"killed"}
        with pytest.raises(ResumeRefused, match="has no request 'killed'"):
            system.resume("killed")
    finally:
        system.close()


def test_a_log_from_another_journals_folder_is_never_applied(
    killed: tuple[Path, Path], tmp_path: Path
) -> None:
    """A dead owner's log copied into another journal's owner folder (a restore that
    mixed the folders up) is left as it is: that journal neither lists nor recovers
    its request, so nothing of it runs twice; its own journal still does."""
    path, _ = killed
    (log,) = _logs(path)
    other = tmp_path / "other.db"
    SQLiteJournal(other).close()
    stray = Path(f"{other}.owners") / log.name
    stray.write_bytes(log.read_bytes())
    elsewhere = crashy.build(other)
    try:
        assert elsewhere.journal_status() == []
        assert elsewhere.recover() == []
    finally:
        elsewhere.close()
    assert stray.read_bytes() == log.read_bytes()
    assert _rows(other, "journal_requests") == []
    home = crashy.build(path)
    try:
        assert [r.request_id for r in home.journal_status()] == ["killed"]
    finally:
        home.close()


def test_opening_a_journal_of_version_4_keeps_its_unregistered_logs(
    killed: tuple[Path, Path],
) -> None:
    """Before version 5 no owner registered its log: a journal of version 4 opened by
    this solvi takes the logs it finds for its own, so a request a dead owner left
    only in its log is still listed and recovered."""
    path, _ = killed
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("DELETE FROM journal_logs")
        conn.execute("UPDATE solvi_migrations SET version = 4 WHERE component = 'journal'")
    conn.close()
    system = crashy.build(path)
    try:
        assert [r.request_id for r in system.journal_status()] == ["killed"]
        assert [r.request_id for r in system.recover()] == ["killed"]
    finally:
        system.close()
    assert ("journal", 5) in _rows(path, "solvi_migrations")


def _open(journal: SQLiteJournal, request_id: str) -> Any:
    return journal.open_statement(
        request_id,
        catalog="c",
        catalog_version="v",
        state_json='{"x":1}',
        plan=("a", "b"),
        early_exit=True,
    )


def test_a_live_owners_commits_are_seen_by_another_reader_who_writes_nothing(
    tmp_path: Path,
) -> None:
    """Another journal on the same file sees a live owner's logged commits (its step
    running) without applying them: the database and the log stay as they were."""
    path = tmp_path / "j.db"
    owner = SQLiteJournal(path)
    owner.writer.delay = 60.0
    rows = EntryRows("r")
    owner.commit((_open(owner, "r"),))
    owner.commit(((INSERT_ENTRY, rows.started(0, "a")),))
    (log,) = _logs(path)
    before = log.read_bytes()
    reader = SQLiteJournal(path)
    try:
        (found,) = list(reader.unfinished())
        assert [(s.part, s.state) for s in found.steps()] == [
            ("a", "running"),
            ("b", "not started"),
        ]
        assert _rows(path, "journal_requests") == []
        assert log.read_bytes() == before
    finally:
        reader.close()
        owner.close()
    assert [row[0] for row in _rows(path, "journal_requests")] == ["r"]
    assert _logs(path) == []


def test_the_writer_applies_the_log_behind_the_committing_thread(tmp_path: Path) -> None:
    """A commit is in the log when it returns, and in the database once the writer's
    delay has passed."""
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.writer.delay = 0.2
    began = time.monotonic()
    journal.commit((_open(journal, "r"),))
    assert _rows(path, "journal_requests") == []
    while not _rows(path, "journal_requests"):
        assert time.monotonic() - began < 10
        time.sleep(0.01)
    assert time.monotonic() - began >= 0.2
    journal.close()


def test_logs_rotate_and_applied_generations_are_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ROTATE_BYTES a log goes on in a new file; files wholly applied go, every
    commit reaches the database in order, and closing leaves no log behind."""
    monkeypatch.setattr(journal_log, "ROTATE_BYTES", 2048)
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.writer.delay = 60.0
    rows = EntryRows("r")
    journal.commit((_open(journal, "r"),))
    for step in range(60):
        journal.commit(((INSERT_ENTRY, rows.started(step, f"p{step}")),))
    assert len(_logs(path)) > 3
    assert [e.step for e in journal.load("r").entries] == list(range(60))
    journal.close()
    entries = _rows(path, "journal_entries")
    assert [row[3] for row in entries] == list(range(60))
    assert _logs(path) == []


def test_a_mapped_log_ends_where_its_records_end(tmp_path: Path) -> None:
    """A log file is allocated ahead and mapped: zeros follow its records until the
    file is closed, readers stop at them, and closing cuts them off."""
    writer = journal_log.LogWriter(tmp_path, "owner")
    record = journal_log.encode(["r"], [["s", 0, 1, "a", 1.5]])
    assert writer.append(record) == (1, 0, len(record))
    path = writer.path(1)
    assert path.stat().st_size == journal_log.ROTATE_BYTES
    assert journal_log.read_from(path, 0) == record
    writer.close()
    assert path.read_bytes() == record


ZEROS = journal_log._ZEROS_AT_END


@pytest.mark.parametrize(
    ("content", "records"),
    [
        (b"ab\n", b"ab\n"),
        (b"ab\n" + bytes(10), b"ab\n"),
        (b"ab\n" + bytes(3 * ZEROS), b"ab\n"),
        (b"a\0b\n" + bytes(3 * ZEROS), b"a\0b\n"),
        (b"a" + bytes(ZEROS - 1) + b"b\n", b"a" + bytes(ZEROS - 1) + b"b\n"),
        (b"a" + bytes(ZEROS) + b"b\n", b"a"),
        (b"x" * (ZEROS - 1) + bytes(ZEROS + 5), b"x" * (ZEROS - 1)),
    ],
)
def test_a_log_is_read_up_to_the_zeros_after_its_records(
    tmp_path: Path, content: bytes, records: bytes
) -> None:
    """Reading stops at the zeros that end a mapped file's records (a long run, or one
    up to the end of the file); zeros inside the records are read past, as damage."""
    path = tmp_path / "log"
    path.write_bytes(content)
    assert journal_log.read_from(path, 0) == records
    assert journal_log.read_from(path, 1) == records[1:]


def test_appends_are_plain_writes_where_a_file_cannot_be_allocated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a file system that cannot allocate ahead, each append is a write: the log
    holds just its records, and the journal works as before."""

    def cannot(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.EOPNOTSUPP, "not supported")

    monkeypatch.setattr(os, "posix_fallocate", cannot)
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.writer.delay = 60.0
    journal.commit((_open(journal, "r"),))
    (log,) = _logs(path)
    assert log.read_bytes().count(b"\n") == 1
    assert not log.read_bytes().endswith(b"\0")
    assert [rj.request_id for rj in journal.unfinished()] == ["r"]
    journal.close()
    assert [row[0] for row in _rows(path, "journal_requests")] == ["r"]


def test_a_forked_child_cannot_write_its_parents_log(tmp_path: Path) -> None:
    """A child forked with the journal open may not append to its parent's log (they
    would share one mapping): its commit fails, naming why; the parent goes on."""
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.writer.delay = 60.0
    journal.commit((_open(journal, "before"),))
    pid = os.fork()
    if pid == 0:  # pragma: no cover  # the child reports through its exit status
        try:
            journal.log("x", [["s", 0, 0, "a", 1.0]]).wait()
        except JournalError as exc:
            os._exit(3 if "not to this forked one" in str(exc) else 4)
        os._exit(5)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 3
    journal.commit((_open(journal, "after"),))
    assert sorted(rj.request_id for rj in journal.unfinished()) == ["after", "before"]
    journal.close()


@pytest.mark.parametrize("kind", ["directory", "pipe", "link"])
def test_what_is_not_a_regular_file_of_a_logs_name_is_left_alone(tmp_path: Path, kind: str) -> None:
    """A directory, a pipe or a link named like a log holds none of the journal's
    commits: neither a reader nor the writer opens it (a pipe would block them) or
    deletes it, and the journal goes on."""
    path = tmp_path / "j.db"
    SQLiteJournal(path).close()
    odd = Path(f"{path}.owners") / "gone_1_abc.000001.jlog"
    target = tmp_path / "elsewhere.txt"
    target.write_text("root:x:0:0\n")
    if kind == "directory":
        odd.mkdir()
    elif kind == "pipe":
        os.mkfifo(odd)
    else:
        odd.symlink_to(target)
    journal = SQLiteJournal(path)
    try:
        journal.commit((_open(journal, "r"),))
        assert [rj.request_id for rj in journal.unfinished()] == ["r"]
    finally:
        journal.close()  # its writer applies the logs
    assert [row[0] for row in _rows(path, "journal_requests")] == ["r"]
    assert os.path.lexists(odd)
    assert target.read_text() == "root:x:0:0\n"
    assert _rows(path, "journal_damaged") == []


def test_a_caller_chosen_id_is_opened_in_the_database_itself(tmp_path: Path) -> None:
    """An id `has_request` found new is opened by a transaction, not the log, so two
    owners opening it at once are told apart by the database's key."""
    path = tmp_path / "j.db"
    first, second = SQLiteJournal(path), SQLiteJournal(path)
    try:
        assert not first.has_request("mine")
        assert not second.has_request("mine")
        first.commit((_open(first, "mine"),))
        assert [row[0] for row in _rows(path, "journal_requests")] == ["mine"]
        with pytest.raises(sqlite3.IntegrityError, match="UNIQUE"):
            second.commit((_open(second, "mine"),))
    finally:
        first.close()
        second.close()


def test_a_record_that_cannot_be_kept_is_skipped_alone(tmp_path: Path) -> None:
    """A record holding what no journal can keep (a lone surrogate, which has no
    checksum; a step number SQLite refuses) is counted as damaged against its
    request; the records around it are applied."""
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.writer.delay = 60.0
    journal.commit(tuple(_open(journal, r) for r in ("text", "number", "good")))
    journal.log("text", [["v", 0, 0, "a", "error", None, "broken \udc80", None, 1.0]])
    journal.log("number", [["s", 0, 2**70, "a", 1.0]])
    journal.log("good", [["s", 0, 0, "a", 2.0]])
    assert [e.part for e in journal.load("good").entries] == ["a"]
    for request_id in ("text", "number"):
        found = journal.load(request_id)
        assert (found.entries, found.skipped_torn) == ((), 1)
    journal.close()
    assert [row[1] for row in _rows(path, "journal_entries")] == ["good"]
    assert sorted(row[0] for row in _rows(path, "journal_damaged")) == ["number", "text"]


_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
_items = st.lists(
    st.one_of(
        st.builds(
            lambda s, p, at: ["s", 0, s, p, at], st.integers(0, 99), _text, st.floats(0, 2e9)
        ),
        st.builds(
            lambda s, p, o, v, m, at: ["v", 0, s, p, o, v, m, None, at],
            st.integers(0, 99),
            _text,
            _text,
            st.none() | _text,
            st.none() | _text,
            st.floats(0, 2e9),
        ),
        st.builds(lambda h: ["c", 1.0, h, "answered", "r"], st.none() | _text),
    ),
    max_size=6,
)


@given(_items)
def test_records_read_back_as_the_statements_they_were(items: list[Any]) -> None:
    """Every record reads back as the statements its items stand for, and a record
    cut anywhere after its ids still names its request."""
    record = journal_log.encode(["r"], items)
    (found,), rest = journal_log.parse(record)
    assert rest == b""
    assert found.ids == ("r",)
    assert list(found.statements or ()) == statements_of(["r"], items)
    if len(record) > 8:
        _, partial = journal_log.parse(record[: len(record) - 3])
        assert journal_log.parse(partial + b"\n")[0][0].ids == ("r",)


def test_a_log_file_that_cannot_be_made_skips_no_generation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner folder refuses the next file for a while: each append fails, the log
    stays in its full file, and once the folder takes files again the log goes on in the
    next generation, not one past it (which the journal would take for a log changed
    behind its back)."""
    monkeypatch.setattr(journal_log, "ROTATE_BYTES", 64)
    writer = journal_log.LogWriter(tmp_path, "owner")
    record = journal_log.encode(["r"], [["s", 0, 1, "a", 1.5]])
    assert writer.append(record)[0] == 1
    real_open = os.open
    refusing = [True]

    def guarded(path: Any, flags: int, *args: Any) -> int:
        if refusing[0] and str(path).endswith(".000002.jlog"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", guarded)
    for _ in range(3):
        with pytest.raises(PermissionError):
            writer.append(record)
    assert writer.end == (1, len(record))
    refusing[0] = False
    assert writer.append(record) == (2, 0, len(record))
    writer.close()
    assert journal_log.read_from(writer.path(1), 0) == record
