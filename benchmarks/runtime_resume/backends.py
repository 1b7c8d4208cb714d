"""Where a scenario's journal lives: a SQLite file, or a PostgreSQL schema of its own.

The orchestrator gives each scenario (and each control run) a fresh journal and
hands its spec (a path or a ``postgresql://`` DSN) to every process it starts.
It also reads the journal directly, to prove a reader wrote nothing, and edits
it, to tear the last entry.

On PostgreSQL each journal is a schema ``rr_<random>`` reached through
``options=-c search_path=<schema>`` in the DSN. An owner is alive while a
session of its process holds its advisory lock; after a SIGKILL the server
ends those sessions once it sees their sockets closed. `settle` waits for that
by polling ``pg_stat_activity`` (the child's sessions carry an
``application_name`` of their own) and ``pg_try_advisory_lock`` on the dead
owner's key, in a bounded loop, and says how long it took.
"""

from __future__ import annotations

import abc
import hashlib
import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from solvi._db.postgres_journal import _owner_key
from solvi._db.sqlite_journal import SQLiteJournal

#: how long the server may take to end a killed child's sessions
SETTLE_LIMIT = 10.0
SETTLE_POLL = 0.005
TABLES = ("journal_requests", "journal_entries")


class Backend(abc.ABC):
    """One journal backend, as the orchestrator sees it."""

    name: str
    title: str

    @abc.abstractmethod
    def fresh(self, work: Path) -> str:
        """A new, empty journal's spec (`work` is the scenario's own directory)."""

    def child_spec(self, spec: str) -> str:
        """The spec the child opens (PostgreSQL: its sessions named, to watch them end)."""
        return spec

    def settle(self, spec: str, prefix: str | None = None) -> str:
        """Wait until the killed child's owner lock is gone; what it took, for the report.

        `prefix`: the killed child's request ids start with it, and other children may
        still run (their sessions and owner locks are theirs, and not waited for)."""
        return ""

    @abc.abstractmethod
    def rows(self, spec: str, table: str, order: str) -> list[tuple[Any, ...]]:
        """Every row of one journal table ([] when it does not exist)."""

    @abc.abstractmethod
    def tear_last(self, spec: str) -> str:
        """Cut the last entry's checksum (and value, if any) in half; return its part."""

    def drop(self) -> None:
        """Remove every journal this backend made (files go with the temp dir)."""
        return None

    def digest(self, spec: str) -> str:
        """A hash of every row of the journal (to prove a reader wrote nothing)."""
        h = hashlib.sha256()
        for table in TABLES:
            h.update(repr(self.rows(spec, table, "1")).encode())
        return h.hexdigest()


class SQLiteBackend(Backend):
    """A journal file per scenario. A torn tail is made by a direct edit of the last
    entry's row, once the dead child's commit log has been applied to the database;
    the digest covers the commit logs too (a reader must leave them as they are)."""

    name = "sqlite"
    title = "SQLite"

    def fresh(self, work: Path) -> str:
        return str(work / "journal.db")

    def digest(self, spec: str) -> str:
        h = hashlib.sha256(super().digest(spec).encode())
        for log in sorted(Path(f"{spec}.owners").glob("*.jlog")):
            h.update(log.name.encode() + b"\0" + log.read_bytes())
        return h.hexdigest()

    def rows(self, spec: str, table: str, order: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{spec}?mode=ro", uri=True)
        try:
            return list(conn.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall())
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()

    def tear_last(self, spec: str) -> str:
        applier = SQLiteJournal(spec)  # a process of its own would do the same
        applier.catch_up()
        applier.close()
        conn = sqlite3.connect(spec)
        try:
            seq, part, value, checksum = conn.execute(
                "SELECT seq, part, value, checksum FROM journal_entries ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            conn.execute(
                "UPDATE journal_entries SET value = ?, checksum = ? WHERE seq = ?",
                (None if value is None else value[: len(value) // 2], checksum[:8], seq),
            )
            conn.commit()
            return str(part)
        finally:
            conn.close()


def with_params(dsn: str, **params: str) -> str:
    """`dsn` (a URL) with query parameters added or replaced."""
    parts = urlsplit(dsn)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) | params
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


class PostgresBackend(Backend):
    """A schema per scenario on one server; torn entries are made by SQL through psycopg."""

    name = "postgres"
    title = "PostgreSQL"

    def __init__(self, dsn: str) -> None:
        import psycopg

        self.dsn = dsn
        self.schemas: list[str] = []
        with psycopg.connect(dsn, autocommit=True) as conn:  # fail early on a bad DSN
            conn.execute("SELECT 1")

    def _connect(self, spec: str) -> Any:
        import psycopg

        return psycopg.connect(spec, autocommit=True)

    def fresh(self, work: Path) -> str:
        schema = f"rr_{uuid.uuid4().hex[:12]}"
        with self._connect(self.dsn) as conn:
            conn.execute(f"CREATE SCHEMA {schema}".encode())
        self.schemas.append(schema)
        return with_params(self.dsn, options=f"-c search_path={schema}")

    @staticmethod
    def _app(spec: str) -> str:
        options = dict(parse_qsl(urlsplit(spec).query))["options"]
        return options.rsplit("=", 1)[1] + "_child"

    def child_spec(self, spec: str) -> str:
        return with_params(spec, application_name=self._app(spec))

    def settle(self, spec: str, prefix: str | None = None) -> str:
        app = self._app(spec)
        # Owners of requests the child opened (none if it died before its open entry;
        # its sessions are watched all the same, unless other children share their name).
        rows = self.rows(spec, "journal_requests", "1")
        owners = sorted(
            {str(row[1]) for row in rows if prefix is None or str(row[0]).startswith(prefix)}
        )
        with self._connect(spec) as conn:
            start = time.perf_counter()
            polls = 0
            while True:
                polls += 1
                (sessions,) = (
                    (0,)
                    if prefix is not None
                    else conn.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (app,)
                    ).fetchone()
                )
                held = 0
                for owner in owners:
                    key = _owner_key(owner)
                    (got,) = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
                    if got:
                        conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                    else:
                        held += 1
                waited = (time.perf_counter() - start) * 1000
                if sessions == 0 and held == 0:
                    when = (
                        "already at the first poll"
                        if polls == 1
                        else f"after {polls} polls over {waited:.0f} ms"
                    )
                    return (
                        f"the dead child's sessions were gone and its owner lock free {when} "
                        f"(polling pg_stat_activity and pg_try_advisory_lock)"
                    )
                if waited > SETTLE_LIMIT * 1000:
                    return (
                        f"after {waited:.0f} ms the server still shows {sessions} session(s) "
                        f"of the dead child, {held} owner lock(s) held"
                    )
                time.sleep(SETTLE_POLL)

    def rows(self, spec: str, table: str, order: str) -> list[tuple[Any, ...]]:
        import psycopg

        with self._connect(spec) as conn:
            try:
                return list(conn.execute(f"SELECT * FROM {table} ORDER BY {order}".encode()))
            except psycopg.errors.UndefinedTable:
                return []

    def tear_last(self, spec: str) -> str:
        with self._connect(spec) as conn:
            seq, part, value, checksum = conn.execute(
                "SELECT seq, part, value, checksum FROM journal_entries ORDER BY seq DESC LIMIT 1"
            ).fetchone()
            conn.execute(
                "UPDATE journal_entries SET value = %s, checksum = %s WHERE seq = %s",
                (None if value is None else value[: len(value) // 2], checksum[:8], seq),
            )
            return str(part)

    def drop(self) -> None:
        with self._connect(self.dsn) as conn:
            for schema in self.schemas:
                conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())
        self.schemas.clear()
