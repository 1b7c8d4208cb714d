"""`SQLiteJournal`: a journal in one SQLite file (WAL), shared by the processes of a machine.

Owners prove they are alive by holding an exclusive lock on a file of their own
next to the database for as long as their journal is open; the lock vanishes
with the process, however it dies.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from solvi._db.journal_base import SCHEMA, Journal, JournalError, Unit, drive_unit, is_new_schema
from solvi._db.sqlite_store import SQLiteStore
from solvi._db.store_plans import drive

__all__ = ["SQLiteJournal"]

#: 3: requests record how they closed (``closed_as``), commits go straight to the
#: database from a writer thread (version 2 kept commit logs beside it)
SQLITE_VERSION = 3


def _safe(owner: str) -> str:
    return owner.replace(":", "_").replace("/", "_")


class SQLiteJournal(Journal):
    """A journal in a SQLite file (WAL), shared by the processes of one machine.

    Every commit runs on the journal's writer thread, which gathers what the
    process's requests submit meanwhile into one transaction. Readers use
    connections of their own and never wait for the writer.

    Args:
        path: the database file (it may be a store's file: then saving a response
            and closing its request are one transaction).
        synchronous: ``"NORMAL"`` (default) survives a killed process, not a
            power loss; ``"FULL"`` survives both, at an fsync per commit. A commit
            that saves a response always runs with ``FULL``, as the store does.

    Raises:
        JournalError: the file is not a usable journal (the message says why and
            what to do).
    """

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("NORMAL", "FULL"):
            msg = f'synchronous must be "NORMAL" or "FULL", got {synchronous!r}'
            raise ValueError(msg)
        self.path = Path(path)
        self.synchronous = synchronous
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self.active: set[str] = set()
        self.damaged: set[str] = set()
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._lock_dir = Path(f"{self.path}.owners")
        try:
            self._lock_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            msg = f"cannot make the journal's owner folder {self._lock_dir}: {exc}"
            raise JournalError(msg) from exc
        self._refuse_old_logs()
        self._owner_path = self._lock_dir / f"{_safe(self.owner)}.lock"
        self._owner_file = open(self._owner_path, "w")
        fcntl.flock(self._owner_file, fcntl.LOCK_EX)
        try:
            self._migrate()
        except BaseException:
            self._release()
            raise

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"

    def _damaged_file(self, exc: Exception) -> JournalError:
        msg = (
            f"{str(self.path)!r} is not a usable solvi journal ({exc}); point journal= at "
            f"another file, or move this one aside if it is damaged"
        )
        return JournalError(msg)

    def _refuse_old_logs(self) -> None:
        logs = sorted(p.name for p in self._lock_dir.glob("*.log"))
        if logs:
            msg = (
                f"journal {str(self.path)!r} has commit logs of an earlier solvi in "
                f"{self._lock_dir} ({', '.join(logs[:3])}); open it once with that version "
                f"to apply them, or delete them to give up the requests they hold"
            )
            raise JournalError(msg)

    def _migrate(self) -> None:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            columns = {row[1] for row in conn.execute("PRAGMA table_info(journal_requests)")}
            if "closed_as" not in columns:
                conn.execute("ALTER TABLE journal_requests ADD COLUMN closed_as TEXT")
            row = conn.execute("SELECT version FROM journal_version").fetchone()
            if is_new_schema(row, self.path, SQLITE_VERSION):
                conn.execute("INSERT INTO journal_version VALUES (?)", (SQLITE_VERSION,))
            elif row[0] < SQLITE_VERSION:
                conn.execute("UPDATE journal_version SET version = ?", (SQLITE_VERSION,))
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._damaged_file(exc) from exc
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (the writer thread has one too)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
            except sqlite3.DatabaseError as exc:
                raise self._damaged_file(exc) from exc
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    # -- writing (on the writer thread) ------------------------------------------

    def _write(self, units: list[Unit]) -> None:
        conn = self._conn()
        saves = self.synchronous != "FULL" and any(
            type(item) is not tuple for unit in units for item in unit
        )
        if saves:
            conn.execute("PRAGMA synchronous=FULL")

        def store_execute(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
            return conn.execute(sql.replace("%s", "?"), params).fetchall()

        def run_plan(plan: Any) -> None:
            drive(store_execute, plan)

        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for unit in units:
                    drive_unit(unit, conn.execute, run_plan)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise
            raise self._damaged_file(exc) from exc
        finally:
            if saves:
                conn.execute(f"PRAGMA synchronous={self.synchronous}")

    def _writer_exit(self) -> None:
        self._close_own_conn()

    def _close_own_conn(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            self._local.conn = None
            with self._conns_lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            conn.close()

    # -- reading -------------------------------------------------------------

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        try:
            return list(self._conn().execute(sql, params).fetchall())
        except sqlite3.DatabaseError as exc:
            raise self._damaged_file(exc) from exc

    # -- liveness and claims -------------------------------------------------

    def owner_alive(self, owner: str) -> bool:
        """Whether the process that owns `owner` still holds its lock."""
        if owner == self.owner:
            return not self._owner_file.closed
        try:
            handle = open(self._lock_dir / f"{_safe(owner)}.lock")
        except (FileNotFoundError, OSError):
            return False
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            handle.close()
        return False

    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT owner, closed_at FROM journal_requests WHERE request_id = ?",
                    (request_id,),
                ).fetchone()
                won = row is not None and row[1] is None
                won = won and (row[0] == self.owner or not self.owner_alive(row[0]))
                if won:
                    conn.execute(
                        "UPDATE journal_requests SET owner = ?, claimed_at = ? "
                        "WHERE request_id = ?",
                        (self.owner, time.time(), request_id),
                    )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        except sqlite3.DatabaseError as exc:
            raise self._damaged_file(exc) from exc
        return bool(won)

    def same_database(self, store: object) -> bool:
        """Whether `store` is a SQLite store in this journal's file."""
        if not isinstance(store, SQLiteStore):
            return False
        return os.path.realpath(store.path) == os.path.realpath(self.path)

    # -- closing -------------------------------------------------------------

    def _release(self) -> None:
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()
        owner_file = getattr(self, "_owner_file", None)
        if owner_file is not None and not owner_file.closed:
            fcntl.flock(owner_file, fcntl.LOCK_UN)
            owner_file.close()
            self._owner_path.unlink(missing_ok=True)

    def __del__(self) -> None:
        # An abandoned journal releases its owner lock, as the process's death would.
        owner_file = getattr(self, "_owner_file", None)
        if owner_file is not None and not owner_file.closed:
            with contextlib.suppress(Exception):
                self.close()
