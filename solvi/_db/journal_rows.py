"""The journal's rows and items: the statements that write a request's open,
entries and close, and the compact items a request's writer makes of them.

Both journals run the statements; a SQLite journal's commit log keeps the items as
they are (JSON already) and turns them back into statements when it applies them,
checking each, since a log file is read back from disk and may be damaged or planted.
Every entry row carries a CRC of its fields, so a torn entry is found and skipped.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "CLOSE_REQUEST",
    "ENTRY_COLUMNS",
    "INSERT_ENTRY",
    "OPEN_REQUEST",
    "EntryRows",
    "Item",
    "Statement",
    "checksum",
    "entry_row",
    "items_of",
    "request_ids_of",
    "rows_of",
    "statements_of",
]


def checksum(*fields: Any) -> str:
    # Detects a torn or damaged entry, not tampering (that is the audit log's job),
    # so a CRC is enough. Values are data whatever it says: nothing read is run.
    text = "\x1f".join("" if f is None else str(f) for f in fields)
    return format(zlib.crc32(text.encode()), "08x")


ENTRY_COLUMNS = "request_id, kind, step, part, outcome, value, message, exact, at, checksum"
INSERT_ENTRY = f"INSERT INTO journal_entries ({ENTRY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
OPEN_REQUEST = (
    "INSERT INTO journal_requests (request_id, owner, catalog, catalog_version, "
    "input_hash, input, plan, early_exit, opened_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
CLOSE_REQUEST = (
    "UPDATE journal_requests SET closed_at = ?, response_hash = ?, closed_as = ? "
    "WHERE request_id = ? AND closed_at IS NULL"
)


class EntryRows:
    """The entry rows of one request, as `entry_row` makes them, with the request's
    share of each checksum worked out once (a CRC can be continued)."""

    __slots__ = ("_crc", "request_id")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self._crc = zlib.crc32(f"{request_id}\x1f".encode())

    def started(self, step: int, part: str, at: float | None = None) -> tuple[Any, ...]:
        """The row of a started entry (`at`: when it was made, default now)."""
        crc = zlib.crc32(f"started\x1f{step}\x1f{part}\x1f\x1f\x1f\x1f".encode(), self._crc)
        return (
            self.request_id,
            "started",
            step,
            part,
            None,
            None,
            None,
            None,
            time.time() if at is None else at,
            f"{crc:08x}",
        )

    def settled(
        self,
        step: int,
        part: str,
        outcome: str,
        value: str | None,
        message: str | None,
        exact: str | None,
        at: float | None = None,
    ) -> tuple[Any, ...]:
        """The row of a settled entry (`at`: when it was made, default now)."""
        text = (
            f"settled\x1f{step}\x1f{part}\x1f{outcome}\x1f{'' if value is None else value}\x1f"
            f"{'' if message is None else message}\x1f{'' if exact is None else exact}"
        )
        crc = zlib.crc32(text.encode(), self._crc)
        row = (self.request_id, "settled", step, part, outcome, value, message, exact)
        return (*row, time.time() if at is None else at, f"{crc:08x}")


# -- items: a request's journal writes in the form its writer makes them --------------
#
# An item is a list: ``["o", *open parameters]``, ``["s", index, step, part, at]``
# (started), ``["v", index, step, part, outcome, value, message, exact, at]``
# (settled), ``["c", closed_at, response_hash, closed_as, request_id]`` or
# ``["e", *the ten parameters of any entry row]``; ``index`` is the request's place in
# the list of ids the items come with. A SQLite journal's log keeps items as they
# are (they are JSON already, with no checksum to work out on the committing
# thread); `rows_of` turns a request's own items into the statements of the tables,
# `statements_of` items read back from a log (checking each).

Item = list[Any]
Statement = tuple[str, tuple[Any, ...]]

_TAG_OF = {OPEN_REQUEST: "o", INSERT_ENTRY: "e", CLOSE_REQUEST: "c"}
_ARITY = {"o": 9, "c": 4, "e": 10, "s": 4, "v": 8}
#: the parameters each item needs (their columns are NOT NULL)
_REQUIRED = {
    "o": tuple(range(9)),
    "c": (3,),
    "e": (0, 1, 2, 3, 8, 9),
    "s": (0, 1, 2, 3),
    "v": (0, 1, 2, 7),
}
#: where an open, a close or an entry row names its request
_ID_AT = {"o": 0, "c": 3, "e": 0}
_SQL_OF_TAG = {tag: sql for sql, tag in _TAG_OF.items()}
_SCALARS = (str, int, float, type(None))


def items_of(statements: Iterable[Any]) -> tuple[list[str], list[Item]] | None:
    """Statements (opens, entry rows, closes) as ids and items; None when one is
    anything else (a store plan, another statement)."""
    ids: dict[str, None] = {}
    items: list[Item] = []
    for statement in statements:
        if type(statement) is not tuple:
            return None
        tag = _TAG_OF.get(statement[0])
        if tag is None:
            return None
        params = statement[1]
        ids[params[_ID_AT[tag]]] = None
        items.append([tag, *params])
    return list(ids), items


def request_ids_of(unit: Iterable[Any]) -> set[str]:
    """The requests a unit's opens, entry rows and closes name (a store plan comes
    with its request's close)."""
    tags = ((s, _TAG_OF.get(s[0])) for s in unit if type(s) is tuple)
    return {s[1][_ID_AT[tag]] for s, tag in tags if tag is not None}


def rows_of(request_id: str, items: Iterable[Sequence[Any]]) -> list[Statement]:
    """One request's items, as its `JournalWriter` makes them, as statements (with
    the entry checksums); nothing is checked: see `statements_of` for items read
    back from a log."""
    maker = EntryRows(request_id)
    out: list[Statement] = []
    for item in items:
        tag = item[0]
        if tag == "s":
            out.append((INSERT_ENTRY, maker.started(item[2], item[3], item[4])))
        elif tag == "v":
            out.append((INSERT_ENTRY, maker.settled(*item[2:])))
        else:
            out.append((_SQL_OF_TAG[tag], tuple(item[1:])))
    return out


def statements_of(ids: Sequence[Any], items: Sequence[Any]) -> list[Statement] | None:
    """Items as the statements they stand for, entry checksums worked out; None when
    one is not an item a journal writes (a damaged or planted record)."""
    if type(ids) is not list or type(items) is not list:
        return None
    rows: dict[int, EntryRows] = {}
    out: list[Statement] = []
    for item in items:
        if type(item) is not list or not item or item[0] not in _ARITY:
            return None
        tag, params = item[0], tuple(item[1:])
        if len(params) != _ARITY[tag]:
            return None
        for param in params:
            if type(param) not in _SCALARS:
                return None
        for required in _REQUIRED[tag]:
            if params[required] is None:
                return None
        if tag == "s" or tag == "v":
            at = params[0]
            if type(at) is not int or not 0 <= at < len(ids) or type(ids[at]) is not str:
                return None
            try:
                maker = rows.get(at)
                if maker is None:
                    maker = rows[at] = EntryRows(ids[at])
                if tag == "s":
                    out.append((INSERT_ENTRY, maker.started(*params[1:])))
                else:
                    out.append((INSERT_ENTRY, maker.settled(*params[1:])))
            except UnicodeEncodeError:  # a lone surrogate: no checksum, and no row either
                return None
            continue
        if type(params[_ID_AT[tag]]) is not str:
            return None
        out.append((_SQL_OF_TAG[tag], params))
    return out


def entry_row(
    request_id: str,
    kind: str,
    step: int,
    part: str,
    outcome: str | None,
    value: str | None,
    message: str | None,
    exact: str | None,
) -> tuple[Any, ...]:
    """The row of one entry, checksum included."""
    crc = checksum(request_id, kind, step, part, outcome, value, message, exact)
    return (request_id, kind, step, part, outcome, value, message, exact, time.time(), crc)
