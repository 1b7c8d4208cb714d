"""The SQLite journal's commit logs: what a dead process left in its log is read,
never lost, applied once, and a torn or damaged record is skipped, never fatal."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solvi import _journal_log
from solvi._journal_log import encode
from solvi.journal import (
    INSERT_ENTRY,
    SQLITE_VERSION,
    EntryRows,
    JournalError,
    SQLiteJournal,
)

ROOT = Path(__file__).resolve().parents[2]

#: a process that commits a request's open entry and three entries (each its own
#: record), never applies its log, and waits to be killed
WRITER = textwrap.dedent(
    """
    import sys, time
    sys.path.insert(0, {root!r})
    from solvi.journal import SQLiteJournal
    journal = SQLiteJournal(sys.argv[1])
    journal.apply_every = 3600
    journal.open("req", catalog="c", catalog_version="v", state_json='{{"x":1}}',
                 plan=("a", "b"), early_exit=True)
    journal.started("req", 0, "a")
    journal.settled("req", 0, "a", "ok", "2", None)
    journal.started("req", 1, "b")
    print("READY", flush=True)
    time.sleep(60)
    """
)


@pytest.fixture
def killed(tmp_path: Path) -> Iterator[Path]:
    """A journal whose writer was killed with SIGKILL before applying its log."""
    path = tmp_path / "j.db"
    script = WRITER.format(root=str(ROOT))
    with subprocess.Popen(
        [sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "READY"
        child.send_signal(signal.SIGKILL)
        assert child.wait(timeout=30) == -signal.SIGKILL
    return path


def in_file(path: Path, sql: str) -> list[tuple[object, ...]]:
    """Rows of the database file itself, read without the journal."""
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        return list(conn.execute(sql).fetchall())


def logs(path: Path) -> list[Path]:
    return sorted(Path(f"{path}.owners").glob("*.log"))


def test_a_dead_writers_log_is_read_without_being_written(killed: Path) -> None:
    assert in_file(killed, "SELECT count(*) FROM journal_requests") == [(0,)]
    assert len(logs(killed)) == 1
    reader = SQLiteJournal(killed)
    try:
        found = reader.load("req")
        assert [(e.kind, e.part) for e in found.entries] == [
            ("started", "a"),
            ("settled", "a"),
            ("started", "b"),
        ]
        assert not found.owner_alive
        assert [s.state for s in found.steps()] == ["settled", "interrupted during execution"]
        assert [rj.request_id for rj in reader.unfinished()] == ["req"]
        # Reading applied the log in a transaction it rolled back.
        assert in_file(killed, "SELECT count(*) FROM journal_requests") == [(0,)]
        assert len(logs(killed)) == 1
        assert reader.claim("req")
        assert in_file(killed, "SELECT count(*) FROM journal_entries") == [(3,)]
        assert logs(killed) == []  # applied for good, and the dead writer's file deleted
        assert [e.kind for e in reader.load("req").entries] == ["started", "settled", "started"]
    finally:
        reader.close()


def test_a_torn_last_record_is_skipped_and_counted(killed: Path) -> None:
    (log,) = logs(killed)
    size = log.stat().st_size
    os.truncate(log, size - 5)  # the last record (b started) cut short
    reader = SQLiteJournal(killed)
    try:
        found = reader.load("req")
        assert [(e.kind, e.part) for e in found.entries] == [("started", "a"), ("settled", "a")]
        assert found.skipped_torn == 1
        assert [s.state for s in found.steps()] == ["settled", "interrupted before start"]
        assert reader.claim("req")  # applies what is whole, keeps the torn tail
        assert in_file(killed, "SELECT count(*) FROM journal_entries") == [(2,)]
        assert reader.load("req").skipped_torn == 1
    finally:
        reader.close()


def test_a_record_with_a_class_in_it_is_damaged_not_loaded(killed: Path) -> None:
    """A log is read by every inspector, so a record is only ever plain values."""
    (log,) = logs(killed)
    payload = b"\3\0\0\0req" + pickle.dumps([(0, (JournalError("x"),))], protocol=5)
    record = _journal_log._HEADER.pack(len(payload), _journal_log.zlib.crc32(payload)) + payload
    with open(log, "ab") as handle:
        handle.write(record)
    reader = SQLiteJournal(killed)
    try:
        found = reader.load("req")
        assert len(found.entries) == 3
        assert found.skipped_torn == 1
    finally:
        reader.close()


def test_a_live_writers_unfinished_record_is_not_torn(tmp_path: Path) -> None:
    """A record still being written by a live process is left for later, not counted."""
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.apply_every = 3600
    try:
        journal.open(
            "req", catalog="c", catalog_version="v", state_json="{}", plan=("a",),
            early_exit=True,
        )  # fmt: skip
        journal.started("req", 0, "a")
        record = encode([(0, EntryRows("req").settled(0, "a", "ok", "1", None, None))], ["req"])
        (log,) = logs(tmp_path / "j.db")
        with open(log, "ab") as handle:
            handle.write(record[: len(record) // 2])
        other = SQLiteJournal(tmp_path / "j.db")
        try:
            found = other.load("req")
            assert [e.kind for e in found.entries] == ["started"]
            assert found.skipped_torn == 0
            assert [s.state for s in found.steps()] == ["running"]
        finally:
            other.close()
    finally:
        journal._log.size = (tmp_path / "j.db.owners" / log.name).stat().st_size
        journal.close()


def test_logs_rotate_and_applied_files_go(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_journal_log, "ROTATE_BYTES", 600)
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.apply_every = 3600
    rows = EntryRows("req")
    journal.open(
        "req", catalog="c", catalog_version="v", state_json="{}", plan=("a",), early_exit=True
    )
    for i in range(30):
        journal.write_statements([(INSERT_ENTRY, rows.started(i, f"p{i}"))])
    assert journal._log.generation > 3
    assert len(logs(path)) == journal._log.generation
    other = SQLiteJournal(path)
    try:
        assert [e.step for e in other.load("req").entries] == list(range(30))
        other.catch_up()  # for good: every file but the one still written is spent
        assert logs(path) == [journal._log.path(journal._log.generation)]
        assert in_file(path, "SELECT count(*) FROM journal_entries") == [(30,)]
        journal.write_statements([(INSERT_ENTRY, rows.started(30, "last"))])
        assert len(other.load("req").entries) == 31  # applied once, from where it stopped
    finally:
        other.close()
    journal.close()
    assert logs(path) == []
    assert in_file(path, "SELECT count(*) FROM journal_entries") == [(31,)]


def test_the_journals_thread_applies_the_log(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    journal = SQLiteJournal(path)
    journal.apply_every = 0.01
    try:
        journal.open(
            "req", catalog="c", catalog_version="v", state_json="{}", plan=("a",),
            early_exit=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not in_file(path, "SELECT request_id FROM journal_requests"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        journal.close()


def test_full_syncs_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(fd), real(fd))[1])
    journal = SQLiteJournal(tmp_path / "j.db", synchronous="FULL")
    journal.open(
        "req", catalog="c", catalog_version="v", state_json="{}", plan=("a",), early_exit=True
    )
    journal.started("req", 0, "a")
    assert len(synced) == 2
    journal.close()
    assert in_file(tmp_path / "j.db", "SELECT count(*) FROM journal_entries") == [(1,)]


def test_an_older_journal_is_upgraded_and_a_newer_one_refused(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    with sqlite3.connect(old) as conn:
        conn.execute("CREATE TABLE journal_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO journal_version VALUES (1)")
    SQLiteJournal(old).close()
    assert in_file(old, "SELECT version FROM journal_version") == [(SQLITE_VERSION,)]
    new = tmp_path / "new.db"
    with sqlite3.connect(new) as conn:
        conn.execute("CREATE TABLE journal_version (version INTEGER NOT NULL)")
        conn.execute("INSERT INTO journal_version VALUES (?)", (SQLITE_VERSION + 1,))
    with pytest.raises(JournalError, match="newer than this solvi understands"):
        SQLiteJournal(new)


def test_a_request_id_already_in_the_journal_is_refused(tmp_path: Path) -> None:
    from solvi import Catalog, System

    cat = Catalog("ids")

    @cat.rule
    def double(x: int) -> int:
        return 2 * x

    system = System(cat, journal=tmp_path / "j.db")
    try:
        system.ask({"x": 1}, request_id="once")
        with pytest.raises(ValueError, match="'once' is already in the journal"):
            system.ask({"x": 2}, request_id="once")
    finally:
        system.close()


def test_a_record_of_unknown_statements_is_damaged(killed: Path) -> None:
    (log,) = logs(killed)
    with open(log, "ab") as handle:
        handle.write(encode([(9, ("req",))], ["req"]))
    reader = SQLiteJournal(killed)
    try:
        assert reader.load("req").skipped_torn == 1
    finally:
        reader.close()


def test_two_writers_of_one_request_id_get_a_clear_error(tmp_path: Path) -> None:
    """Two processes journaling requests under one id (only explicit ids can clash)
    leave logs the database refuses to merge: readers say so."""
    first, second = SQLiteJournal(tmp_path / "j.db"), SQLiteJournal(tmp_path / "j.db")
    for journal in (first, second):
        journal.apply_every = 3600
        journal.open(
            "dup", catalog="c", catalog_version="v", state_json="{}", plan=("a",),
            early_exit=True,
        )  # fmt: skip
    try:
        with pytest.raises(JournalError, match="two processes journaled requests under one id"):
            first.load("dup")
    finally:
        second._apply_stop.set()
        second._log.close()
        second._owner_file.close()  # dies without applying its log
        first.close()  # applies its own log: the database has no "dup" yet
    assert in_file(tmp_path / "j.db", "SELECT owner FROM journal_requests") == [(first.owner,)]


def test_any_request_id_survives_the_log(tmp_path: Path) -> None:
    journal = SQLiteJournal(tmp_path / "j.db")
    journal.apply_every = 3600
    odd = "line\nbreak\x1fand unit separator é"
    try:
        journal.open(
            odd, catalog="c", catalog_version="v", state_json="{}", plan=("a",), early_exit=True
        )
        journal.started(odd, 0, "a")
        assert [e.kind for e in journal.load(odd).entries] == ["started"]
    finally:
        journal.close()


def test_a_live_writers_thread_applies_what_a_dead_one_left(killed: Path) -> None:
    """A dead process's log is applied for good by any live writer's thread, so
    readers stop re-reading it, even if none of its requests is ever claimed."""
    writer = SQLiteJournal(killed)
    writer.apply_every = 0.01
    try:
        writer.open(
            "mine", catalog="c", catalog_version="v", state_json="{}", plan=("a",),
            early_exit=True,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while in_file(killed, "SELECT count(*) FROM journal_requests") != [(2,)]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert in_file(killed, "SELECT count(*) FROM journal_entries") == [(3,)]
        while len(logs(killed)) != 1:  # the dead writer's file goes after the commit
            assert time.monotonic() < deadline
            time.sleep(0.01)
    finally:
        writer.close()
    assert logs(killed) == []


WRITERS = 3

_operations = st.lists(
    st.one_of(
        st.tuples(st.just("open"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("entry"), st.integers(0, 50)),
        st.tuples(st.just("entry"), st.integers(0, 50)),
        st.tuples(st.just("read"), st.just(0)),
        st.tuples(st.just("apply"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("rotate"), st.integers(0, WRITERS - 1)),
        st.tuples(st.just("kill"), st.integers(0, WRITERS - 1)),
    ),
    max_size=40,
)


def _writer(path: Path) -> SQLiteJournal:
    journal = SQLiteJournal(path)
    journal.apply_every = 3600  # applied only when the operations say so
    return journal


def _die(journal: SQLiteJournal) -> None:
    """What SIGKILL does to a journal: nothing more is applied, the lock goes."""
    journal._apply_stop.set()
    journal._apply_wake.set()
    journal._log.close()
    journal._owner_file.close()


@settings(max_examples=40, deadline=None)
@given(_operations)
def test_every_commit_is_applied_exactly_once_whatever_happens(
    operations: list[tuple[str, int]],
) -> None:
    """Writers commit, rotate their logs, apply, and die in any order, and a dead
    writer's request goes on only once another has claimed it (as a resume does);
    readers see every commit made so far, and in the end the database holds each
    one exactly once, in each request's order, and no log file is left."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "j.db"
        writers = [_writer(path) for _ in range(WRITERS)]
        reader = SQLiteJournal(path)
        expected: dict[str, list[int]] = {}
        owner_of: dict[str, SQLiteJournal] = {}
        try:
            for op, arg in operations:
                if op == "open":
                    rid = f"r{len(expected)}"
                    writers[arg].open(
                        rid, catalog="c", catalog_version="v", state_json="{}",
                        plan=("a",), early_exit=True,
                    )  # fmt: skip
                    expected[rid], owner_of[rid] = [], writers[arg]
                elif op == "entry" and expected:
                    rid = sorted(expected)[arg % len(expected)]
                    owner = owner_of[rid]
                    if owner not in writers:  # dead: the writer in its place claims it
                        owner = writers[arg % WRITERS]
                        assert owner.claim(rid)
                        owner_of[rid] = owner
                    step = len(expected[rid])
                    owner.started(rid, step, f"p{step}")
                    expected[rid].append(step)
                elif op == "read":
                    for rid, steps in expected.items():
                        assert [e.step for e in reader.load(rid).entries] == steps
                elif op == "apply":
                    writers[arg].catch_up()
                elif op == "rotate":
                    writers[arg]._log.size = _journal_log.ROTATE_BYTES
                elif op == "kill":
                    _die(writers[arg])
                    writers[arg] = _writer(path)  # a new process takes its place
        finally:
            for writer in writers:
                writer.close()
            reader.close()
        last = SQLiteJournal(path)
        last.catch_up()
        last.close()
        for rid, steps in expected.items():
            rows = in_file(
                path, f"SELECT step FROM journal_entries WHERE request_id = '{rid}' ORDER BY seq"
            )
            assert [row[0] for row in rows] == steps
        assert in_file(path, "SELECT count(*) FROM journal_requests") == [(len(expected),)]
        assert logs(path) == []
