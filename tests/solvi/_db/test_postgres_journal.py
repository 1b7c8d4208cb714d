"""The PostgreSQL journal's own code: one commit's statements folded into one statement,
owners' advisory-lock keys, and a server that restarts or goes away under it. Most
journals on a real server are in test_journal_writes.py."""

from __future__ import annotations

import contextlib
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from flows.claims_small import Calls, claims_catalog
from stores import backend, end_sessions, login_role, needs_postgres

from solvi import Question, System
from solvi._db.journal_base import JournalError
from solvi._db.journal_rows import CLOSE_REQUEST, INSERT_ENTRY, OPEN_REQUEST
from solvi._db.postgres_journal import (
    _PG_INSERT_ENTRIES,
    PostgresJournal,
    _one_statement,
    _owner_key,
)
from solvi.storage import open_store

OPEN = (OPEN_REQUEST, ("r1", "me", "c", "v", "h", "{}", "[]", 1, 1.0))
ENTRY = (INSERT_ENTRY, ("r1", "started", 0, "p", None, None, None, None, 1.5, "00000000"))
CLOSE_R0 = (CLOSE_REQUEST, (2.0, "hash", "answered", "r0"))
CLOSE_R1 = (CLOSE_REQUEST, (2.0, "hash", "answered", "r1"))
QUESTIONS = [Question("approve", forced=False), "fast_track"]
STATE = {"policy_id": "P1", "claim": {"amount": 120}}


def test_entries_alone_are_one_insert_of_a_json_array() -> None:
    """Only entries: one INSERT ... SELECT over their rows as a JSON array."""
    folded = _one_statement([ENTRY, ENTRY])
    assert folded is not None
    sql, params = folded
    assert sql == _PG_INSERT_ENTRIES
    assert json.loads(params[0]) == [list(ENTRY[1]), list(ENTRY[1])]


def test_opens_and_closes_become_ctes_of_the_insert() -> None:
    """An open and another request's close ride along as data-modifying CTEs."""
    folded = _one_statement([OPEN, ENTRY, CLOSE_R0])
    assert folded is not None
    sql, params = folded
    assert sql.startswith("WITH q0 AS (INSERT INTO journal_requests ")
    assert ", q1 AS (UPDATE journal_requests SET " in sql
    assert sql.endswith(_PG_INSERT_ENTRIES)
    assert "?" not in sql
    assert params[:9] == list(OPEN[1])
    assert params[9:13] == list(CLOSE_R0[1])


def test_a_single_close_is_itself() -> None:
    """One close and nothing else: the close, placeholders in PostgreSQL's style."""
    assert _one_statement([CLOSE_R0]) == (CLOSE_REQUEST.replace("?", "%s"), list(CLOSE_R0[1]))


def test_what_one_snapshot_cannot_do_takes_the_long_path() -> None:
    """Closing a request opened in the same group, or another statement: None."""
    assert _one_statement([OPEN, CLOSE_R1]) is None
    other: Any = ("DELETE FROM journal_entries", ())
    assert _one_statement([ENTRY, other]) is None


def test_an_owners_lock_key_is_a_stable_signed_64_bit_number() -> None:
    """The same owner always gets the same key, inside PostgreSQL's bigint range."""
    key = _owner_key("host-1:4242")
    assert key == _owner_key("host-1:4242")
    assert key != _owner_key("host-1:4243")
    assert -(2**63) <= key < 2**63


def _opened(journal: PostgresJournal, request_id: str) -> None:
    journal.open(
        request_id,
        catalog="c",
        catalog_version="v",
        state_json="{}",
        plan=("a", "b"),
        early_exit=True,
    )
    journal.running_here(request_id)


@needs_postgres
def test_a_restart_while_idle_fails_no_read_or_commit(tmp_path: Path) -> None:
    """Every session of the journal ended while idle (a server restart, sessions ended
    by an administrator) before each of its reads, commits and claims: each works, on
    new sessions, and its next commit takes its owner lock again."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        journal = PostgresJournal(f"{db.spec}&application_name={name}")
        other = PostgresJournal(db.spec)
        try:
            _opened(journal, "r1")
            calls = [
                lambda: [rj.request_id for rj in journal.unfinished()] == ["r1"],
                lambda: _opened(journal, "r2") is None,
                lambda: journal.started("r1", 0, "a") is None,
                lambda: journal.claim("r1"),  # its own: taken again at once
                lambda: journal.owner_alive(other.owner),
            ]
            for call in calls:
                end_sessions(db.spec, name)
                assert call()
            journal.started("r2", 0, "a")  # a commit takes the owner lock again
            assert other.owner_alive(journal.owner)
            assert sorted(rj.request_id for rj in other.unfinished()) == ["r1", "r2"]
        finally:
            for each in (journal, other):
                with contextlib.suppress(Exception):
                    each.close()


@needs_postgres
def test_a_system_on_a_restarted_server_fails_no_request(tmp_path: Path) -> None:
    """A System whose journal and store share the database: after every session ended
    while idle, asking, listing the journal and closing (which saves what was
    learned) all work."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        spec = f"{db.spec}&application_name={name}"
        system = System(claims_catalog(Calls()), QUESTIONS, journal=spec, store=spec)
        try:
            first = system.ask(STATE)
            end_sessions(db.spec, name)
            again = system.ask(STATE)
            assert again.answers["approve"].status == first.answers["approve"].status
            assert system.journal_status() == []
            end_sessions(db.spec, name)
        finally:
            system.close()
        store = open_store(db.spec)
        try:
            assert {rid for rid, _ in store.iter_records()} == {first.request_id, again.request_id}
        finally:
            store.close()


@needs_postgres
def test_a_server_that_stays_away_is_a_journal_error(tmp_path: Path) -> None:
    """Sessions ended and new ones refused (a server that is down): a commit raises a
    JournalError naming the database and what to do, not a raw psycopg error; once
    the server takes sessions again, the next commit works."""
    with backend("postgresql", tmp_path) as db, login_role(db) as role:
        journal = PostgresJournal(role.spec)
        try:
            _opened(journal, "r1")
            role.go_away()
            with pytest.raises(JournalError, match="could not be reached or written"):
                journal.started("r1", 0, "a")
            role.come_back()
            journal.started("r1", 0, "a")
            assert [rj.request_id for rj in journal.unfinished()] == ["r1"]
        finally:
            with contextlib.suppress(Exception):
                journal.close()


@needs_postgres
def test_an_owner_whose_lock_was_lost_writes_nothing_more_for_requests_taken_over(
    tmp_path: Path,
) -> None:
    """The owner's sessions end (a server restart): another process sees it dead and
    takes one of its running requests over. The first owner takes its lock again
    before its next commit, and refuses every further commit of the request taken,
    so none of its steps can start there twice; its other requests go on, and it is
    seen alive again."""
    with backend("postgresql", tmp_path) as db:
        name = f"cut_{uuid.uuid4().hex[:8]}"
        first = PostgresJournal(f"{db.spec}&application_name={name}")
        second = PostgresJournal(db.spec)
        try:
            _opened(first, "taken")
            _opened(first, "kept")
            first.started("taken", 0, "a")
            end_sessions(db.spec, name)
            assert not second.owner_alive(first.owner)
            assert second.claim("taken")
            first.started("kept", 0, "a")
            with pytest.raises(JournalError, match="'taken' is no longer this process's"):
                first.started("taken", 1, "b")
            first.started("kept", 1, "b")
            assert second.owner_alive(first.owner)
            assert not second.claim("kept")
            parts = [e.part for e in second.load("taken").entries if e.kind == "started"]
            assert parts == ["a"]
        finally:
            for journal in (first, second):
                with contextlib.suppress(Exception):
                    journal.close()
