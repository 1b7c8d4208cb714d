"""`SQLiteStore`: a store in one SQLite file."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread

from solvi._db.migrations import migrate_plan
from solvi._db.sqlite_lock import FileMoved, Placed, busy, unwritable, use_wal, write_transaction
from solvi._db.store_plans import SQLITE, STORE, Plan, PlanStore, Row, T, drive, inspect_plan
from solvi.errors import StoreError

__all__ = ["SQLiteStore", "sqlite_execute"]

_FIX = "give the path of a store a System wrote (System(store=...))"


class SQLiteStore(PlanStore):
    """A store in one SQLite file: WAL journal, synchronous FULL, one connection and a lock.

    Threads share the connection under a lock; several processes may open the
    same file, and writes (a response and its audit entries) take SQLite's
    write lock first (``BEGIN IMMEDIATE``), so the audit chain never forks.
    The ``a``-prefixed methods run in a worker thread.

    Args:
        path: the database file; created, with its tables, when missing.
        timeout: seconds to wait for another process's write lock.
        read_only: open an existing store without writing to the file (SQLite's
            ``mode=ro``): no schema is created or migrated, and writes raise.

    Raises:
        StoreError: the file cannot be opened as a database, or its schema is
            newer than this solvi; read only, also when the file is missing, no
            regular file (a folder, a device), empty, not a SQLite database, or
            one without solvi's tables.
    """

    _dialect = SQLITE

    def __init__(
        self, path: str | os.PathLike[str], *, timeout: float = 30.0, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self._timeout = timeout
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        if read_only:
            self._conn = self._open_read_only(timeout)
            return
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
        self._conn = conn
        #: the file opened, so that a store deleted or replaced under this process is
        #: refused rather than written where no one will see it
        self._placed: Placed | None = None
        try:
            self._placed = Placed.of(self.path)
            use_wal(conn, str(self.path), timeout)
            conn.execute("PRAGMA synchronous=FULL")
            self.schema_version: int | None = self._run(
                migrate_plan(STORE, SQLITE, repr(str(self.path))), write=True
            )
        except sqlite3.DatabaseError as exc:
            conn.close()
            if isinstance(exc, sqlite3.OperationalError) and busy(exc):
                msg = (
                    f"cannot open SQLite store {str(self.path)!r}: {exc}; find the process "
                    f"or tool keeping a transaction open, or pass a longer timeout="
                )
            else:
                msg = (
                    f"{str(self.path)!r} is not a usable SQLite store: {exc}; give a new file name"
                )
            raise StoreError(msg) from exc
        except BaseException:
            conn.close()
            raise

    def _open_read_only(self, timeout: float) -> sqlite3.Connection:
        """Connect without write access, and check the file holds a solvi store."""
        where = repr(str(self.path))
        what = _not_a_file(self.path)
        if what is not None:
            msg = f"no SQLite store at {where}: {what}; {_FIX}"
            raise StoreError(msg)
        if self.path.stat().st_size == 0:
            msg = f"{where} is an empty file (0 bytes), not a solvi store; {_FIX}"
            raise StoreError(msg)
        uri = self.path.absolute().as_uri() + "?mode=ro"
        # Without a -wal file no connection has the database open in WAL mode, so it
        # can be looked at as immutable, which creates no side file: a file refused
        # as no store is left exactly as it was. The reading connection is plain
        # read only, safe beside a writer (on a WAL store SQLite may add its -shm).
        quiet = not Path(f"{self.path}-wal").exists()
        if quiet:
            first = self._connect(uri + "&immutable=1", timeout)
            try:
                self.schema_version = self._inspect(first)
            finally:
                first.close()
        conn = self._connect(uri, timeout)
        if not quiet:
            try:
                self.schema_version = self._inspect(conn)
            except BaseException:
                conn.close()
                raise
        return conn

    def _connect(self, uri: str, timeout: float) -> sqlite3.Connection:
        try:
            return sqlite3.connect(
                uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as exc:
            msg = f"cannot open SQLite store {str(self.path)!r} to read it: {exc}; {_FIX}"
            raise StoreError(msg) from exc

    def _inspect(self, conn: sqlite3.Connection) -> int | None:
        """Check, through `conn`, that the file holds a solvi store; its schema version."""
        where = repr(str(self.path))
        self._conn = conn
        try:
            return self._run(inspect_plan(SQLITE, where), write=False)
        except StoreError as exc:
            cause = exc.__cause__
            if getattr(cause, "sqlite_errorname", None) == "SQLITE_NOTADB":
                msg = f"{where} is not a SQLite database ({cause}), so not a solvi store; {_FIX}"
                raise StoreError(msg) from cause
            raise
        finally:
            self._conn = None

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"

    def _run(self, plan: Plan[T], *, write: bool) -> T:
        if write:
            self._check_writable()
        with self._lock:
            conn = self._conn
            if conn is None:
                msg = f"SQLite store {str(self.path)!r} is closed; open a new one"
                raise StoreError(msg)

            try:
                with self._transaction(conn, write=write):
                    result = drive(sqlite_execute(conn), plan)
            except FileMoved as exc:
                msg = (
                    f"SQLite store {str(self.path)!r} {exc.how} while this process had it "
                    f"open, so nothing more is written to it (no other process would see "
                    f"it); put the file back, or open the store again to start a new one"
                )
                raise StoreError(msg) from exc
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and busy(exc):
                    msg = (
                        f"SQLite store {str(self.path)!r} is locked: {exc}; find "
                        f"the process or tool keeping a transaction open, or pass a longer "
                        f"timeout="
                    )
                    raise StoreError(msg) from exc
                if write:
                    advice = unwritable(exc) or (
                        "if the file is damaged, restore it from a backup or give a new file name"
                    )
                    msg = f"SQLite store {str(self.path)!r} could not be written: {exc}; {advice}"
                    raise StoreError(msg) from exc
                # A read that the file's contents refuse (a table or column gone, not a
                # database at all): the store is damaged, which its caller reports.
                msg = f"SQLite store {str(self.path)!r} cannot be read: {exc}"
                raise StoreError(msg) from exc
            return result

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection, *, write: bool) -> Iterator[None]:
        """A write transaction that holds the lock from its start, or a plain read."""
        if write:
            with write_transaction(conn, str(self.path), self._timeout, placed=self._placed):
                yield
            return
        conn.execute("BEGIN")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

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


#: What a path that is no regular file is, by its file type (symbolic links followed).
_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}


def _not_a_file(path: Path) -> str | None:
    """What is at `path` when it is no regular file, from its metadata alone: a device
    such as /dev/zero is never opened, so never read without end."""
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "no such file"
    except OSError as exc:  # no permission, a loop of symbolic links
        return f"it cannot be looked at ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    kind = _KINDS.get(stat.S_IFMT(mode), "something other than a file")
    return f"{kind}, not a regular file"


def sqlite_execute(conn: sqlite3.Connection) -> Callable[[str, tuple[Any, ...]], list[Row]]:
    """How a plan's statement runs on a SQLite connection (its ``%s`` become ``?``),
    for the store and for the journal's plans alike."""

    def execute(sql: str, params: tuple[Any, ...]) -> list[Row]:
        return conn.execute(sql.replace("%s", "?"), params).fetchall()

    return execute
