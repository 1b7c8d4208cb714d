"""`SQLiteStore`: a store in one SQLite file."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio.to_thread

from solvi._db.store_plans import SQLITE, Plan, PlanStore, Row, T, drive, migrate_plan
from solvi.errors import StoreError

__all__ = ["SQLiteStore"]


class SQLiteStore(PlanStore):
    """A store in one SQLite file: WAL journal, synchronous FULL, one connection and a lock.

    Threads share the connection under a lock; several processes may open the
    same file, and writes (a response and its audit entries) take SQLite's
    write lock first (``BEGIN IMMEDIATE``), so the audit chain never forks.
    The ``a``-prefixed methods run in a worker thread.

    Args:
        path: the database file; created, with its tables, when missing.
        timeout: seconds to wait for another process's write lock.

    Raises:
        StoreError: the file cannot be opened as a database, or its schema is
            newer than this solvi.
    """

    _dialect = SQLITE

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            msg = (
                f"cannot open SQLite store {str(self.path)!r}: {exc}; check that its folder "
                f"exists and is writable"
            )
            raise StoreError(msg) from exc
        self._conn: sqlite3.Connection | None = conn
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            self.schema_version = self._run(migrate_plan(SQLITE, repr(str(self.path))), write=True)
        except sqlite3.DatabaseError as exc:
            conn.close()
            msg = f"{str(self.path)!r} is not a usable SQLite store: {exc}; give a new file name"
            raise StoreError(msg) from exc
        except BaseException:
            conn.close()
            raise

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def _run(self, plan: Plan[T], *, write: bool) -> T:
        with self._lock:
            conn = self._conn
            if conn is None:
                msg = f"SQLite store {str(self.path)!r} is closed; open a new one"
                raise StoreError(msg)

            def execute(sql: str, params: tuple[Any, ...]) -> list[Row]:
                return conn.execute(sql.replace("%s", "?"), params).fetchall()

            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                result = drive(execute, plan)
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return result

    async def _arun(self, plan: Plan[T], *, write: bool) -> T:
        def run() -> T:
            return self._run(plan, write=write)

        return await anyio.to_thread.run_sync(run)

    def close(self) -> None:
        """Close the connection (a second call does nothing)."""
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    async def aclose(self) -> None:
        """`close` for async code."""
        await anyio.to_thread.run_sync(self.close)

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
