"""The PostgreSQL journal's own code that runs without a server: one commit's statements
folded into one statement, and owners' advisory-lock keys. Journals on a real server are
in test_journal_writes.py."""

from __future__ import annotations

import json
from typing import Any

from solvi._db.journal_base import CLOSE_REQUEST, INSERT_ENTRY, OPEN_REQUEST
from solvi._db.postgres_journal import _PG_INSERT_ENTRIES, _one_statement, _owner_key

OPEN = (OPEN_REQUEST, ("r1", "me", "c", "v", "h", "{}", "[]", 1, 1.0))
ENTRY = (INSERT_ENTRY, ("r1", "started", 0, "p", None, None, None, None, 1.5, "00000000"))
CLOSE_R0 = (CLOSE_REQUEST, (2.0, "hash", "answered", "r0"))
CLOSE_R1 = (CLOSE_REQUEST, (2.0, "hash", "answered", "r1"))


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
