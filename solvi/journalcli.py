"""The journal command of `solvi`: ``journal prune JOURNAL --older-than AGE``.

A journal keeps every closed request (so that `resume` can say how it ended and a
caller cannot reuse its id) until it is pruned; run this from a scheduled job to
keep it to a window. It exits 2, with one line on standard error, when the journal
or the age is wrong. `add_journal_commands` registers it on the `solvi` parser.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sqlite3
import sys
from pathlib import Path

from solvi._db.urls import locate
from solvi.journal import Journal, JournalError, open_journal

__all__ = ["add_journal_commands", "cmd_journal_prune", "seconds_of"]

_AGE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_UNIT = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_AGE_HELP = "a number of seconds, or with a unit: 90s, 30m, 12h, 7d"


def seconds_of(text: str) -> float:
    """An age as the command line writes it (``7d``, ``12h``, ``30m``, ``90s``, ``600``).

    Raises:
        ValueError: `text` is none of those forms; the message gives them.
    """
    found = _AGE.fullmatch(text.strip())
    if found is None:
        msg = f"--older-than {text!r} is not an age; write {_AGE_HELP}"
        raise ValueError(msg)
    return float(found[1]) * _UNIT[found[2]]


_FIX = "name the file a System's journal= writes"


def _open_existing(spec: str) -> Journal:
    """The journal at `spec`. A SQLite file that is not there, or holds no journal (a
    store of its own, say), is an error: opening it would make it one."""
    where = locate(spec, "journal")
    if where.kind == "sqlite":
        if not os.path.isfile(where.target):
            msg = f"no journal at {where.target}: {_FIX}"
            raise ValueError(msg)
        _holds_a_journal(where.target)
    journal = open_journal(spec)
    assert journal is not None
    return journal


def _holds_a_journal(path: str) -> None:
    """Refuse a file that is no SQLite database, or one without a journal's tables,
    reading it only (nothing is made beside it either)."""
    uri = f"{Path(path).absolute().as_uri()}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            found = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'journal_requests'"
            ).fetchone()
    except sqlite3.DatabaseError as exc:
        msg = f"{path} is not a SQLite database ({exc}): {_FIX}"
        raise ValueError(msg) from exc
    if found is None:
        msg = f"{path} holds no solvi journal (a store keeps one only with journal=True): {_FIX}"
        raise ValueError(msg)


def cmd_journal_prune(args: argparse.Namespace) -> int:
    """Forget the requests of JOURNAL closed before the age given: exit status 0, or
    2 when the journal or the age is wrong."""
    try:
        older_than = seconds_of(args.older_than)
        journal = _open_existing(args.journal)
        try:
            count = journal.prune(older_than)
        finally:
            journal.close()
    except (ValueError, JournalError) as exc:
        sys.stderr.write(f"solvi journal prune: {exc}\n")
        return 2
    plural = "" if count == 1 else "s"
    sys.stdout.write(
        f"{journal}: forgot {count} request{plural} closed before {args.older_than} ago\n"
    )
    return 0


def add_journal_commands(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> None:
    """Register ``journal prune`` on the `solvi` parser's subcommands."""
    journal = subparsers.add_parser(
        "journal",
        help="keep a journal to a window of time",
        description="Commands on a journal (System(..., journal=...)).",
    )
    actions = journal.add_subparsers(dest="journal_command", required=True, metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="forget requests closed before a given age",
        description=(
            "Delete the requests of JOURNAL closed at least --older-than ago, with their "
            "entries, a few hundred per transaction; requests still open (running, or "
            "waiting for recovery) are never touched. Safe beside running processes. "
            "Afterwards resume() no longer knows those ids, and without a store a "
            "caller may use one of them again. Exit status 0, or 2 when the journal or "
            "the age is wrong."
        ),
    )
    prune.add_argument(
        "journal",
        help="a SQLite journal file, sqlite:///path or postgresql://user@host:port/database",
    )
    prune.add_argument("--older-than", required=True, help=_AGE_HELP)
    prune.set_defaults(run=cmd_journal_prune)
