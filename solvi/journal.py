"""The journal: each request's progress, written ahead, so a crash loses nothing silently.

Per request, an *open* entry is committed before the first step is dispatched,
a *started* entry before each call, a *settled* entry with the value or error
before anything reads it, and a *closed* entry once the response exists (or the
caller cancelled the request). After a crash, `System.recover` and
`System.resume` read it back. Every commit runs on the journal's writer thread,
never on an event loop, and values are kept as data (exact tagged JSON), never
as code. `SQLiteJournal` suits one machine, `PostgresJournal` several.
"""

from __future__ import annotations

from solvi._db.journal_base import (
    CANCELLED,
    Journal,
    JournalEntry,
    JournalError,
    RequestJournal,
    StepState,
    input_hash,
)
from solvi._db.journal_rows import (
    CLOSE_REQUEST,
    INSERT_ENTRY,
    OPEN_REQUEST,
    EntryRows,
    entry_row,
)
from solvi._db.postgres_journal import PostgresJournal
from solvi._db.sqlite_journal import SQLiteJournal
from solvi._db.urls import locate

__all__ = [
    "CANCELLED",
    "CLOSE_REQUEST",
    "INSERT_ENTRY",
    "OPEN_REQUEST",
    "EntryRows",
    "Journal",
    "JournalEntry",
    "JournalError",
    "PostgresJournal",
    "RequestJournal",
    "SQLiteJournal",
    "StepState",
    "entry_row",
    "input_hash",
    "open_journal",
]


def open_journal(spec: object, store: object = None) -> Journal | None:
    """A journal from a path, ``sqlite:///path``, ``postgresql://...``, a journal
    object, or True (the journal in `store`'s own database); None for None or False.

    Raises:
        ValueError: the spec names no journal solvi can open.
        JournalError: the file is not a usable journal.
    """
    if spec is None or spec is False:
        return None
    if isinstance(spec, Journal):
        return spec
    if spec is True:
        where = getattr(store, "path", None) or getattr(store, "dsn", None)
        if where is None:
            msg = (
                "journal=True keeps the journal in the store, but there is no SQLite or "
                "PostgreSQL store; pass store=... as well, or a journal path"
            )
            raise ValueError(msg)
        spec = str(where)
    where = locate(spec, "journal=")
    if where.kind == "postgresql":
        return PostgresJournal(where.target)
    return SQLiteJournal(where.target)
