"""`PostgresJournal`: a journal in PostgreSQL, shared by processes on several machines.

The owner's liveness is a session advisory lock held by one connection of the
owning process for as long as the journal is open: when the process dies, its
connection closes and the lock goes with it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import select
import socket
import time
import uuid
from typing import Any

from solvi._db import migrations
from solvi._db.journal_base import (
    ADD_CLOSED_AS,
    SCHEMA,
    Journal,
    JournalError,
    Unit,
    drive_unit,
    newer_schema,
)
from solvi._db.journal_rows import (
    CLOSE_REQUEST,
    ENTRY_COLUMNS,
    INSERT_ENTRY,
    OPEN_REQUEST,
    request_ids_of,
)
from solvi._db.postgres_store import describe_dsn, pg_execute, reaching, run_pooled
from solvi._db.store_plans import POSTGRES, drive

__all__ = ["JOURNAL", "PG_VERSION", "PostgresJournal"]

# The same tables in PostgreSQL's types.
PG_SCHEMA = (
    SCHEMA.replace("seq INTEGER PRIMARY KEY", "seq BIGSERIAL PRIMARY KEY")
    .replace("REAL", "DOUBLE PRECISION")
    .replace(" WITHOUT ROWID", "")
)

#: A PostgreSQL journal's row in ``solvi_migrations``. Step 1: the requests and
#: their entries; 2: requests record how they closed (``closed_as``, added to a table
#: that lacks it: step 1 creates it already).
JOURNAL = migrations.Component(
    name="journal",
    steps=(
        lambda d: migrations.statements(*migrations.script(PG_SCHEMA)),
        lambda d: migrations.statements(
            (ADD_CLOSED_AS.replace("ADD COLUMN", "ADD COLUMN IF NOT EXISTS"), ())
        ),
    ),
    legacy_table="journal_version",
    error=JournalError,
    too_new=newer_schema,
)
PG_VERSION = JOURNAL.version

#: A group's entry rows as one INSERT, in order, from one parameter: the rows as a
#: JSON array of arrays. The statement is the same whatever the number of rows (so it
#: is prepared once), and json.dumps costs a fraction of psycopg adapting ten lists.
_PG_INSERT_ENTRIES = (
    f"INSERT INTO journal_entries ({ENTRY_COLUMNS}) SELECT r->>0, r->>1, (r->>2)::integer, "
    "r->>3, r->>4, r->>5, r->>6, r->>7, (r->>8)::double precision, r->>9 "
    "FROM json_array_elements(%s::json) WITH ORDINALITY AS e(r, n) ORDER BY n"
)

Statements = list[tuple[str, tuple[Any, ...]]]


def _one_statement(statements: Statements) -> tuple[str, list[Any]] | None:
    """A group's statements as one PostgreSQL statement (atomic by itself), or None.

    Opens and closes become data-modifying CTEs of the entries' INSERT. They all
    see the snapshot taken before the statement, so a close of a request opened in
    the same group, or any other statement, takes the multi-statement path.
    """
    rows: list[tuple[Any, ...]] = []
    ctes: list[str] = []
    params: list[Any] = []
    opened: set[Any] = set()
    closed: set[Any] = set()
    for sql, values in statements:
        if sql == INSERT_ENTRY:
            rows.append(values)
            continue
        if sql == OPEN_REQUEST:
            opened.add(values[0])
        elif sql == CLOSE_REQUEST and values[3] not in closed:
            closed.add(values[3])
        else:
            return None
        ctes.append(f"q{len(ctes)} AS ({sql.replace('?', '%s')})")
        params.extend(values)
    if opened & closed:
        return None
    if not rows:
        if len(ctes) == 1:
            return statements[0][0].replace("?", "%s"), params
        return f"WITH {', '.join(ctes)} SELECT 1", params
    params.append(json.dumps(rows, ensure_ascii=False))
    if not ctes:
        return _PG_INSERT_ENTRIES, params
    return f"WITH {', '.join(ctes)} {_PG_INSERT_ENTRIES}", params


def _session_alive(conn: Any) -> bool:
    """Whether `conn`'s session still runs, without a round trip while it is idle: the
    server sends a session it ends a last message, so a socket with something to read
    is asked."""
    if conn.closed or conn.broken:
        return False
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return False
    if not readable:
        return True
    try:
        conn.execute("SELECT 1")
    except Exception:
        return False
    return True


def _owner_key(owner: str) -> int:
    """A signed 64-bit advisory-lock key for an owner."""
    return int.from_bytes(hashlib.sha256(owner.encode()).digest()[:8], "big", signed=True)


class PostgresJournal(Journal):
    """A journal in PostgreSQL, shared by processes on several machines.

    After a server restart, reads and commits that meet a session ended while idle
    run on a new one instead, so none fails for it.

    Args:
        dsn: a ``postgresql://`` connection string (it may be a store's: then
            saving a response and closing its request are one transaction).
    """

    def __init__(self, dsn: str) -> None:
        try:
            import psycopg
            from psycopg_pool import ConnectionPool
        except ImportError as exc:
            msg = "a PostgreSQL journal needs psycopg: pip install 'solvi[postgres]'"
            raise ImportError(msg) from exc
        self.dsn = dsn
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.active: set[str] = set()
        self.damaged: set[str] = set()
        self._connect = functools.partial(psycopg.connect, dsn, autocommit=True)
        self._where = describe_dsn(dsn)
        with self._reaching():
            self._holder = self._connect()
            self._holder.execute("SELECT pg_advisory_lock(%s)", (_owner_key(self.owner),))
        #: requests running here that another process took over (see `_fence`)
        self._taken: set[str] = set()
        #: whether `_holder`'s session holds this owner's lock
        self._holds_lock = True
        #: the writer thread's own connection
        self._writer_conn: Any = None
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=8, kwargs={"autocommit": True}, open=True
        )
        # The migration takes the store's lock too: one schema writer at a time.
        plan = migrations.migrate_plan(JOURNAL, POSTGRES, describe_dsn(dsn))
        try:
            with self._reaching(), self._pool.connection() as conn, conn.transaction():
                drive(pg_execute(conn), plan)
        except BaseException:
            self._release()
            raise

    def __repr__(self) -> str:
        return "PostgresJournal(...)"

    def _reaching(self) -> contextlib.AbstractContextManager[None]:
        """The server went away or refused the session: a JournalError saying so."""
        return reaching("PostgreSQL journal", self._where, JournalError)

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _write(self, units: list[Unit]) -> None:
        with self._reaching():
            taken = self._fence()
            if taken:
                lost = sorted(set().union(*map(request_ids_of, units)) & taken)
                if lost:
                    msg = (
                        f"request {lost[0]!r} is no longer this process's: it lost its "
                        f"session with PostgreSQL journal {self._where}, and another process "
                        f"took the request over meanwhile (recover()); it is finished there"
                    )
                    raise JournalError(msg)
            self._write_units(units)

    def _fence(self) -> set[str]:
        """The requests of this process that others took over while its owner lock was
        lost (a server restarted, a session ended), after taking the lock again.

        The lock is the owner's session: once it ends, other processes see the owner
        dead and may claim its requests. Before each commit the writer looks whether
        the session has ended (a poll of its socket, no round trip); if so it takes
        the lock again in a new session and asks which of the requests running here
        now have another owner. Their commits are refused from then on, so none of
        their steps runs here after another process has resumed them.
        """
        if _session_alive(self._holder):
            if self._holds_lock:
                return self._taken
        else:
            with contextlib.suppress(Exception):
                self._holder.close()
            self._holder = self._connect()
            self._holds_lock = False
        row = self._holder.execute(
            "SELECT pg_try_advisory_lock(%s)", (_owner_key(self.owner),)
        ).fetchone()
        if not (row and row[0]):
            # The server still counts the ended session as holding the lock, so others
            # still see this owner alive; the lock is tried again before the next commit.
            return self._taken
        self._holds_lock = True
        running = sorted(self.active)
        if running:
            rows = self._holder.execute(
                "SELECT request_id FROM journal_requests WHERE request_id = ANY(%s) "
                "AND owner <> %s",
                (running, self.owner),
            ).fetchall()
            self._taken.update(str(row[0]) for row in rows)
        return self._taken

    def _write_units(self, units: list[Unit]) -> None:
        conn = self._writer_conn
        if conn is None or not _session_alive(conn):
            # Its session ended while idle (a server restart): nothing of these units
            # was sent on it, so they go on a new one.
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            conn = self._writer_conn = self._connect()
        statements: Statements = []
        plans = False
        for unit in units:
            for item in unit:
                if type(item) is tuple:
                    statements.append(item)
                else:
                    plans = True
        if not plans:
            single = _one_statement(statements)
            if single is not None:
                conn.execute(*single)  # one statement is one transaction, in one round trip
                return

        def execute(sql: str, params: tuple[Any, ...]) -> None:
            conn.execute(self._sql(sql), params)

        store_execute = pg_execute(conn)

        with conn.transaction():
            for unit in units:
                drive_unit(unit, execute, lambda plan: drive(store_execute, plan))

    def _writer_exit(self) -> None:
        conn, self._writer_conn = self._writer_conn, None
        if conn is not None and not conn.closed:
            conn.close()

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self._pool.closed:
            msg = f"{self!r} is closed; open a new journal to read it"
            raise JournalError(msg)

        def read(conn: Any) -> list[tuple[Any, ...]]:
            return list(conn.execute(self._sql(sql), params).fetchall())

        with self._reaching():
            return run_pooled(self._pool, read, transaction=False)

    def owner_alive(self, owner: str) -> bool:
        """Whether `owner`'s advisory lock is still held by a live session."""
        if owner == self.owner:
            # Alive while open: a lost lock is taken again before the next commit.
            return not self._pool.closed
        key = _owner_key(owner)

        def held(conn: Any) -> bool:
            # Run again on a fresh session when this one turns out ended: a lock taken
            # in a session that ended went with it.
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            got = bool(row and row[0])
            if got:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            return not got

        with self._reaching():
            return run_pooled(self._pool, held, transaction=False)

    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins."""

        def take(conn: Any) -> bool:
            row = conn.execute(
                "SELECT owner, closed_at FROM journal_requests WHERE request_id = %s FOR UPDATE",
                (request_id,),
            ).fetchone()
            if row is None or row[1] is not None:
                return False
            if row[0] != self.owner and self.owner_alive(row[0]):
                return False
            conn.execute(
                "UPDATE journal_requests SET owner = %s, claimed_at = %s WHERE request_id = %s",
                (self.owner, time.time(), request_id),
            )
            return True

        with self._reaching():
            return run_pooled(self._pool, take)

    def duplicate_key(self, exc: BaseException) -> bool:
        """A unique constraint failed: the one on the request id, for an open entry."""
        import psycopg  # present: this journal could not be made without it

        return isinstance(exc, psycopg.errors.UniqueViolation)

    def same_database(self, store: object) -> bool:
        """Whether `store` is a PostgreSQL store on this journal's connection string."""
        from solvi._db.postgres_store import PostgresStore

        return isinstance(store, PostgresStore) and store.dsn == self.dsn

    def _release(self) -> None:
        if not self._holder.closed:
            self._holder.close()
        if not self._pool.closed:
            self._pool.close()

    def __del__(self) -> None:
        # An abandoned journal releases its owner lock, as the process's death would.
        if getattr(self, "_pool", None) is not None and getattr(self, "_holder", None) is not None:
            self._release()
