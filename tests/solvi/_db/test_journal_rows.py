"""A journal's rows and items, without a database: entry rows and their checksums,
items and the statements they stand for, and planted items refused."""

from __future__ import annotations

from typing import Any

import pytest

from solvi._db.journal_rows import (
    CLOSE_REQUEST,
    INSERT_ENTRY,
    OPEN_REQUEST,
    EntryRows,
    entry_row,
    items_of,
    request_ids_of,
    rows_of,
    statements_of,
)


def test_entry_rows_made_incrementally_equal_entry_row() -> None:
    """EntryRows continues the request's CRC; its rows equal entry_row's but for the time."""
    rows = EntryRows("r1")
    started = rows.started(2, "score", at=5.0)
    assert started[:8] == entry_row("r1", "started", 2, "score", None, None, None, None)[:8]
    assert started[9] == entry_row("r1", "started", 2, "score", None, None, None, None)[9]
    assert started[8] == 5.0
    assert len(started[9]) == 8


def test_a_changed_field_changes_the_checksum() -> None:
    """The checksum covers every field but the time."""
    base = entry_row("r1", "settled", 1, "p", "ok", "3", None, None)
    other = entry_row("r1", "settled", 1, "p", "ok", "4", None, None)
    assert base[9] != other[9]


def test_items_and_statements_round_trip() -> None:
    """Statements a writer made become items and back, checksums worked out again."""
    entry = entry_row("r1", "started", 0, "p", None, None, None, None)
    opened = ("r1", "me", "cat", "v1", "h", "{}", "[]", 1, 1.0)
    closed = (2.0, "hash", "answered", "r1")
    statements = [(OPEN_REQUEST, opened), (INSERT_ENTRY, entry), (CLOSE_REQUEST, closed)]
    found = items_of(statements)
    assert found is not None
    ids, items = found
    assert ids == ["r1"]
    assert [item[0] for item in items] == ["o", "e", "c"]
    assert statements_of(ids, items) == statements


def test_items_of_refuses_what_a_journal_does_not_write() -> None:
    """Any other statement (or a store plan) gives None."""
    assert items_of([("DELETE FROM journal_entries", ())]) is None
    assert items_of([lambda: None]) is None


@pytest.mark.parametrize(
    ("ids", "items"),
    [
        ({"r1"}, []),
        ([], [["x", 1]]),
        ([], [["c", 1.0, "h", "answered"]]),  # a close needs four values
        ([], [["c", 1.0, "h", "answered", {"$pickle": "gASV"}]]),  # only scalars
        ([], ["c"]),
    ],
)
def test_planted_items_are_refused(ids: Any, items: Any) -> None:
    """An item of an unknown tag, the wrong arity or a non-scalar value gives None."""
    assert statements_of(ids, items) is None


def test_rows_of_makes_a_writers_items_into_statements() -> None:
    """Started and settled items become entry rows; opens and closes pass through."""
    closed = ["c", 2.0, "hash", "answered", "r1"]
    made = rows_of("r1", [["s", "r1", 0, "p", 1.0], closed])
    assert made[0] == (INSERT_ENTRY, EntryRows("r1").started(0, "p", 1.0))
    assert made[1] == (CLOSE_REQUEST, (2.0, "hash", "answered", "r1"))


def test_request_ids_of_names_the_requests_of_a_units_statements() -> None:
    """Opens, entry rows and closes name their requests; a store plan names none."""
    unit = (
        (OPEN_REQUEST, ("r1", "me", "c", "v", "h", "{}", "[]", 1, 1.0)),
        (INSERT_ENTRY, ("r2", "started", 0, "p", None, None, None, None, 1.5, "0")),
        (CLOSE_REQUEST, (2.0, "hash", "answered", "r3")),
        lambda: None,  # a store plan
    )
    assert request_ids_of(unit) == {"r1", "r2", "r3"}
