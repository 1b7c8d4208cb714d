"""`SQLiteJournal`: a journal in one SQLite file (WAL), shared by the processes of a machine.

Owners prove they are alive by holding an exclusive lock on a file of their own
next to the database for as long as their journal is open; the lock vanishes
with the process, however it dies. With ``synchronous="NORMAL"`` each owner's
commits are appends to a log of its own beside the lock (`solvi._db.journal_log`),
which its writer thread applies to the database in the background; readers, and
a recovering process, apply what is not applied yet for themselves.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
import time
import uuid
import warnings
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs

from solvi._db import journal_log, migrations
from solvi._db.journal_base import (
    ADD_CLOSED_AS,
    SCHEMA,
    Journal,
    JournalError,
    RequestJournal,
    Unit,
    drive_unit,
    newer_schema,
)
from solvi._db.journal_log import LOGS_SCHEMA, Applied, LogWriter, encode
from solvi._db.journal_rows import (
    Item,
    Statement,
    items_of,
    rows_of,
    statements_of,
)
from solvi._db.sqlite_lock import (
    FileMoved,
    Placed,
    busy,
    unwritable,
    use_wal,
    write_transaction,
)
from solvi._db.sqlite_owners import OwnerLock, holds, sweep
from solvi._db.sqlite_store import SQLiteStore, sqlite_execute
from solvi._db.store_plans import SQLITE, Dialect, Plan, drive
from solvi._db.writer import Ticket, WriterClosed, done_ticket

__all__ = ["JOURNAL", "SQLITE_VERSION", "SQLiteJournal"]


def _closed_as(d: Dialect) -> Plan[None]:
    columns = yield ("PRAGMA table_info(journal_requests)", ())
    if "closed_as" not in {row[1] for row in columns}:
        yield (ADD_CLOSED_AS, ())


#: A SQLite journal's row in ``solvi_migrations``. Step 1: the requests and their
#: entries; 2: commits were kept in pickled logs beside the file (``*.log``, refused
#: now), no table changed; 3: requests record how they closed (``closed_as``, added
#: to a table that lacks it: step 1 creates it already); 4: commits of a
#: NORMAL journal are appends to logs of JSON records (``*.jlog``), applied in the
#: background (``journal_logs``, ``journal_damaged``); 5: an owner registers its log
#: in ``journal_logs`` as it opens the journal, and a log nobody registered belongs
#: to another journal and is never applied (no table changed: opening a journal of
#: version 4 registers the logs it finds, which its own owners wrote).
JOURNAL = migrations.Component(
    name="journal",
    steps=(
        lambda d: migrations.statements(*migrations.script(SCHEMA)),
        lambda d: migrations.statements(),
        _closed_as,
        lambda d: migrations.statements(*migrations.script(LOGS_SCHEMA)),
        lambda d: migrations.statements(),
    ),
    legacy_table="journal_version",
    error=JournalError,
    too_new=newer_schema,
)
SQLITE_VERSION = JOURNAL.version
#: the version from which every owner registers its log
_REGISTERED_SINCE = 5
#: most caller ids remembered between `has_request` and the request's open
_CHECKED_MAX = 10_000
#: seconds a connection waits for another process's lock before "database is locked"
BUSY_TIMEOUT = 30.0
#: records the writer turns into rows between two moments it lets go of the GIL
_APPLY_RUN = 16
#: most records of the log one transaction of the writer applies beside units of its
#: own: a longer one keeps every other writer of the file waiting, and a process
#: behind on its log made ever longer ones (seconds each) while a prune waited 30 s
APPLY_MAX = 1024
#: records in the log not yet applied past which a commit waits for the writer to
#: catch up: the log's backlog, which readers and a recovering process apply for
#: themselves and which is all kept in memory, stays bounded under any load
BACKLOG = 4096

#: (generation, offset) in a log
Position = tuple[int, int]


class _Logged:
    """The writer unit standing for the commits in the log not yet applied: applying
    them is all that is left (one unit is queued for any number of them)."""

    __slots__ = ()


_LOGGED = _Logged()
#: the ticket of a commit that is durable once it is in the log
_DONE = done_ticket()
_NEXT_STEP = (  # when the writer cannot apply the log
    "fix what the error names; this process takes commits again once its writer has "
    "applied them, and the next process to open the journal applies what is left"
)


@attrs.frozen
class _Direct:
    """A writer unit committed in the database itself, after everything the log held
    when it was submitted (up to `end`)."""

    end: Position
    unit: Unit


def _own_statements(ids: Sequence[str], items: Sequence[Sequence[Any]]) -> list[Statement] | None:
    """The statements of a record this journal logged (kept as tuples): its items are
    as a request's writer makes them (converted unchecked), unless a caller of
    `SQLiteJournal.log` handed over others (then checked as a reader checks a log)."""
    if len(ids) == 1:
        # Items that are not a writer's make `rows_of` raise: they are then checked.
        with contextlib.suppress(Exception):
            return rows_of(ids[0], items)
    return statements_of(list(ids), [list(i) if type(i) is tuple else i for i in items])


def _safe(owner: str) -> str:
    return owner.replace(":", "_").replace("/", "_")


class SQLiteJournal(Journal):
    """A journal in a SQLite file (WAL), shared by the processes of one machine.

    With ``synchronous="NORMAL"`` a commit is one append of a record to this
    process's log, made on the committing thread (an event loop's too: a copy into
    a file mapped in memory, never a SQL statement, a system call or an fsync), and
    the journal's writer thread applies the log to the database a little later,
    many commits in one transaction. A commit that saves a response runs in the
    database itself, as one transaction with the store, after what the log held; so
    does the open entry of a request whose id its caller chose (see `has_request`).
    With ``"FULL"`` every commit is a transaction on the writer thread. Readers see
    every commit: they apply what the logs hold beyond the database in a
    transaction they roll back.

    Args:
        path: the database file (it may be a store's file: then saving a response
            and closing its request are one transaction).
        synchronous: ``"NORMAL"`` (default) survives a killed process, not a power
            loss; ``"FULL"`` survives both, at an fsync per commit. A commit that
            saves a response always runs with ``FULL``, as the store does.

    Raises:
        JournalError: the file is not a usable journal (the message says why and
            what to do).
    """

    # `prune` forgets the damaged log records that named a request with it, which would
    # otherwise count as a request lost with its open entry.
    _forget_from = (*Journal._forget_from, "journal_damaged")

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
        self._name = _safe(self.owner)
        #: the lock file held, and the database file (once opened): either deleted or
        #: replaced under this process ends its writing, see `_lost`
        self._owner = OwnerLock(self._lock_dir, self._name)
        try:
            self._refuse_old_logs()
            sweep(self._lock_dir)
        except BaseException:
            self._owner.release()
            raise
        self._placed: Placed | None = None
        #: why this process writes nothing more (None while it may)
        self._lost: JournalError | None = None
        self.logs_commits = synchronous == "NORMAL"
        self._log = LogWriter(self._lock_dir, self._name) if self.logs_commits else None
        #: appends and hand-overs to the writer, in one order
        self._log_lock = threading.Lock()
        #: records in the log not yet known to be applied: (generation, start, end,
        #: ids, items), in log order (appended under the lock, dropped by the writer)
        self._pending: deque[tuple[int, int, int, tuple[str, ...], tuple[Any, ...]]] = deque()
        #: caller-chosen ids `has_request` found new, whose open goes to the database
        self._checked: set[str] = set()
        #: done once the writer has caught up on the log (see `BACKLOG`), while some wait
        self._caught_up: Ticket | None = None
        self._catch_up_error: BaseException | None = None  # the writer's last, if it failed
        try:
            self._migrate()
        except BaseException:
            self._release()
            raise

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"

    def _damaged_file(self, exc: Exception) -> JournalError:
        if isinstance(exc, sqlite3.OperationalError) and busy(exc):
            msg = (
                f"journal {str(self.path)!r} could not be written: {exc}; find the process "
                f"or tool keeping a transaction open on the file, and try again once it has "
                f"finished"
            )
            return JournalError(msg)
        advice = unwritable(exc) if isinstance(exc, sqlite3.Error) else None
        if advice is not None:
            msg = f"journal {str(self.path)!r} could not be written ({exc}); {advice}"
            return JournalError(msg)
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
        """Bring the tables up to date and register this owner's log, in one transaction
        (see `journal_log.register`)."""
        conn = self._conn()
        where = repr(str(self.path))
        try:
            with self._transaction(conn):
                execute = sqlite_execute(conn)
                tables = {str(row[0]) for row in execute(SQLITE.tables_sql, ())}
                before = drive(execute, migrations.stored_version_plan(JOURNAL, tables, where))
                drive(execute, migrations.migrate_plan(JOURNAL, SQLITE, where))
                names = [self._name] if self.logs_commits else []
                if before is not None and before < _REGISTERED_SINCE:
                    # Logs its owners wrote before owners registered them: they are its own.
                    names.extend(journal_log.log_files(self._lock_dir))
                journal_log.register(conn, names)
        except sqlite3.DatabaseError as exc:
            raise self._damaged_file(exc) from exc

    @contextlib.contextmanager
    def _transaction(self, conn: sqlite3.Connection, *, commit: bool = True) -> Iterator[None]:
        """A write transaction on one of this journal's connections (see `_conn`), once
        `_still_here` says this process may still write (a read may go on)."""
        if commit:
            self._still_here()
        if self._placed is None:
            self._placed = Placed.of(self.path)  # the connection made the file
        try:
            with write_transaction(
                conn, str(self.path), BUSY_TIMEOUT, commit=commit, polling=True, placed=self._placed
            ):
                yield
        except FileMoved as exc:
            self._lost = JournalError(
                f"journal {str(self.path)!r} {exc.how} while this process had it open: what "
                f"it wrote since is in a file no other process opens, so it writes nothing "
                f"more; put the file back, or close this System and open the journal again"
            )
            raise self._lost from exc

    def _still_here(self) -> None:
        """Raise the JournalError that ended this process's writing, if one did.

        Other processes take an owner whose lock file is gone for dead and may claim
        its requests (and run their steps): if this process went on, a step could run
        in both. So once its lock file is deleted or replaced, it writes nothing more.
        """
        if self._lost is None and self._owner.held:
            how = self._owner.moved()
            if how is not None:
                self._lost = JournalError(
                    f"this process's owner lock {str(self._owner.path)!r} {how} while it ran, "
                    f"so other processes take it for dead and may have claimed its requests: "
                    f"it writes nothing more to journal {str(self.path)!r}; close this System "
                    f"and open the journal again, and keep cleaners out of {self._lock_dir}"
                )
        if self._lost is not None:
            raise self._lost

    def _conn(self) -> sqlite3.Connection:
        """This thread's connection (the writer thread has one too)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
                )
                use_wal(conn, str(self.path), BUSY_TIMEOUT)
                conn.execute(f"PRAGMA synchronous={self.synchronous}")
                # From here on it waits for the write lock in `write_transaction` only:
                # every statement it runs is in one of those, or needs no lock.
                conn.execute("PRAGMA busy_timeout = 0")
            except sqlite3.DatabaseError as exc:
                raise self._damaged_file(exc) from exc
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    # -- committing (on the committing thread) ------------------------------------

    def submit(self, unit: Unit, *, direct: bool = False) -> Ticket:
        """Make one unit durable: append it to this process's log (its ticket is then
        done already), or hand it to the writer thread to commit in the database after
        everything logged before it (a store plan, a caller-chosen id's open, a FULL
        journal, or `direct`)."""
        log = self._log
        found = None if direct or log is None else items_of(unit)
        if found is not None and not self._opens_checked(found[1]):
            return self._append(*found)
        with self._log_lock:
            return self.writer.submit(_Direct((0, 0) if log is None else log.end, unit))

    def log(self, request_id: str, items: list[Item]) -> Ticket:
        """Make one request's items durable: one append to this process's log (a FULL
        journal, or a caller-chosen id's open, commits them in the database)."""
        if self._log is None:
            return super().log(request_id, items)
        if self._checked and self._opens_checked(items):
            # To the database itself, whose key refuses the id if another process
            # opened it first (`submit` would look for the checked open again).
            return self.submit(tuple(rows_of(request_id, items)), direct=True)
        return self._append([request_id], items)

    def _opens_checked(self, items: list[Item]) -> bool:
        """Whether the items open a request whose id a caller chose (see
        `has_request`): that open goes to the database itself."""
        checked = self._checked
        if not checked:
            return False
        for item in items:
            if item[0] == "o" and item[1] in checked:
                checked.discard(item[1])
                return True
        return False

    def _append(self, ids: list[str], items: list[Item]) -> Ticket:
        """One record in the log, for the writer thread to apply later."""
        if not items:
            return _DONE
        log = self._log
        assert log is not None
        record = encode(ids, items)
        writer = self._writer or self.writer
        try:
            self._still_here()
        except JournalError as exc:
            return done_ticket(exc)
        with self._log_lock:
            if writer.closed:
                msg = f"{self!r} is closed; open a new journal to write"
                raise WriterClosed(msg)
            behind = len(self._pending) >= BACKLOG  # this one makes it more
            if behind:
                refused = self._stalled(writer)
                if refused is not None:
                    return refused
            try:
                generation, start, end = log.append(record)
            except OSError as exc:
                msg = f"cannot append to the journal's commit log in {log.directory}: {exc}"
                return done_ticket(JournalError(msg))
            # Kept as tuples of scalars, which the collector stops tracking: a backlog
            # of lists would make every collection of the loop's thread scan it.
            kept = tuple([tuple(item) if type(item) is list else item for item in items])
            self._pending.append((generation, start, end, tuple(ids), kept))
            if behind:
                # Durable already: its caller only waits for the writer to catch up.
                caught_up = self._caught_up
                if caught_up is None or caught_up.done:
                    caught_up = self._caught_up = writer.submit(_LOGGED, quiet=True)
                return caught_up
        writer.nudge(_LOGGED)
        return _DONE

    def _stalled(self, writer: Any) -> Ticket | None:
        """Past `BACKLOG`, once the writer failed to catch up: a refusal (nothing written)
        until a try succeeds, one nudged (within `Writer.delay`, however many commits are
        refused meanwhile); None while the writer is trying."""
        cause = self._catch_up_error
        if cause is None:
            return None
        writer.nudge(_LOGGED)
        msg = (
            f"journal {str(self.path)!r} holds {len(self._pending)} commits in its log that "
            f"its writer could not apply ({cause}), so it takes no more until it can: they "
            f"are safe in {self._lock_dir}; {_NEXT_STEP}"
        )
        return done_ticket(JournalError(msg))

    def duplicate_key(self, exc: BaseException) -> bool:
        """A UNIQUE constraint failed: the one on the request id, for an open entry."""
        return isinstance(exc, sqlite3.IntegrityError)

    def logs_open(self, request_id: str) -> bool:
        """Whether the request's open entry goes to the log: unless its id was a
        caller's, checked by `has_request`, or the journal is FULL."""
        return self._log is not None and request_id not in self._checked

    def has_request(self, request_id: str) -> bool:
        """Whether the journal holds a request with this id, finished or not.

        An id found new here (as `System` checks a caller's id before its request) is
        then opened in the database itself rather than the log, so that the
        database's key still refuses one id opened by two processes at once.
        """
        found = super().has_request(request_id)
        if not found and self._log is not None:
            if len(self._checked) >= _CHECKED_MAX:
                self._checked.clear()
            self._checked.add(request_id)
        return found

    # -- writing (on the writer thread) ------------------------------------------

    def _write(self, units: list[Any]) -> None:
        conn = self._conn()
        saves = self.synchronous != "FULL" and any(
            isinstance(unit, _Direct) and any(type(item) is not tuple for item in unit.unit)
            for unit in units
        )
        if saves:
            conn.execute("PRAGMA synchronous=FULL")

        store_execute = sqlite_execute(conn)

        def run_plan(plan: Any) -> None:
            drive(store_execute, plan)

        pending = self._pending
        # What the log holds now: later records are the next nudge's.
        upto = (pending[-1][0], pending[-1][2]) if pending else None
        applied: Position | None = None
        failed: BaseException | None = None
        try:
            # A long backlog first, in transactions of at most APPLY_MAX records, each
            # of which lets other writers waiting have their turn (`write_transaction`).
            while upto is not None and self._behind(upto) > APPLY_MAX:
                with self._transaction(conn):
                    applied = self._apply_own(conn, self._own_position(conn), upto, APPLY_MAX)
                self._applied_to(applied)
            with self._transaction(conn):
                at = (0, 0) if self._log is None else self._own_position(conn)
                for unit in units:
                    if isinstance(unit, _Direct):
                        at = self._apply_own(conn, at, unit.end)
                        drive_unit(unit.unit, conn.execute, run_plan)
                # Then what the log held: nothing logged waits on a unit not yet
                # committed (a request waits for its open to commit before it logs).
                applied = self._apply_own(conn, at, upto)
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise  # one unit's (an id taken): the writer fails it alone
            failed = exc
            raise self._damaged_file(exc) from exc
        except BaseException as exc:
            failed = exc
            raise
        finally:
            if saves:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute(f"PRAGMA synchronous={self.synchronous}")
            self._catch_up_error = failed
            if isinstance(failed, sqlite3.DatabaseError):
                self._drop_if_read_only(failed)
        self._applied_to(applied)

    def _own_position(self, conn: sqlite3.Connection) -> Position:
        row = conn.execute(
            "SELECT generation, applied FROM journal_logs WHERE name = ?", (self._name,)
        ).fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def _behind(self, upto: Position) -> int:
        """Records kept in memory up to `upto`, not applied yet (counted to `APPLY_MAX` + 1)."""
        count = 0
        for generation, _, stop, _, _ in self._pending:
            if (generation, stop) > upto or count > APPLY_MAX:
                break
            count += 1
        return count

    def _apply_own(
        self,
        conn: sqlite3.Connection,
        at: Position,
        upto: Position | None,
        limit: int | None = None,
    ) -> Position:
        """Apply this process's log from `at` up to `upto` (None: all it holds), or its
        first `limit` records past `at`, in the open transaction, from the records kept
        in memory; return where it got to.

        Raises:
            JournalError: the records in memory do not follow what the database says
                was applied (the log or ``journal_logs`` was changed behind its back).
        """
        log = self._log
        if log is None or (upto is not None and upto <= at):
            return at
        records: list[tuple[Sequence[str], list[Statement]]] = []
        applied = Applied()
        end, taken = at, 0
        for generation, start, stop, ids, items in list(self._pending):
            if (generation, stop) <= end:
                continue  # applied already (by a claim, say)
            if upto is not None and (generation, stop) > upto:
                break
            if taken == limit:
                break
            taken += 1
            follows = (generation, start) == end or (
                start == 0
                and generation == end[0] + 1
                and (end == (0, 0) or log.final.get(end[0]) == end[1])
            )
            if not follows:
                msg = (
                    f"the commit log {log.path(generation)} does not follow what journal "
                    f"{str(self.path)!r} says was applied of it ({end}); the log or the "
                    f"journal_logs table was changed by something else than this journal"
                )
                raise JournalError(msg)
            statements = _own_statements(ids, items)
            if statements is None:  # as a reader of the log finds it: damaged
                journal_log.count_damage(conn, applied, self._name, ids, journal_log.DAMAGED)
            else:
                records.append((ids, statements))
            end = (generation, stop)
            if len(records) % _APPLY_RUN == 0:
                # Let go of the GIL now and then: the loop is never kept waiting long
                # for this thread's Python.
                time.sleep(0)
        if end != at:
            journal_log.apply_records(conn, self._name, records, applied)
            journal_log.set_position(conn, self._name, end)
        return end

    def _applied_to(self, at: Position | None) -> None:
        """After a commit: forget the records applied, delete spent generations (a
        file that cannot be deleted stays: everything in it is applied)."""
        if at is None or self._log is None:
            return
        pending = self._pending
        while pending and (pending[0][0], pending[0][2]) <= at:
            pending.popleft()
        for generation in range(at[0] - 1, 0, -1):
            path = self._log.path(generation)
            if not path.exists():
                break
            try:
                path.unlink(missing_ok=True)
            except OSError:
                break

    def _drop_if_read_only(self, exc: sqlite3.DatabaseError) -> bool:
        """A file SQLite could not write at open is read-only to that connection for
        good: close it (to be opened again), and say whether it was so."""
        if (getattr(exc, "sqlite_errorname", None) or "").startswith("SQLITE_READONLY"):
            self._close_own_conn()
            return True
        return False

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

    # -- reading: the database with every log applied ----------------------------

    @contextlib.contextmanager
    def _view(self, *, commit: bool = False) -> Iterator[Applied | None]:
        """A transaction on this thread's connection in which every log is applied:
        rolled back (a reader writes nothing), or committed with `commit`."""
        if getattr(self._local, "view", False):
            yield None  # inside a view already: it holds every log
            return
        conn = self._conn()
        try:
            with self._transaction(conn, commit=commit):
                applied = journal_log.apply_logs(conn, self._lock_dir, self._alive_name)
                self._local.view = True
                try:
                    yield applied
                finally:
                    self._local.view = False
        except sqlite3.DatabaseError as exc:
            if self._drop_if_read_only(exc) and not commit:
                msg = (
                    f"journal {str(self.path)!r} could not be read ({exc}): a read applies "
                    f"the commit logs in a transaction it rolls back, so it needs to write "
                    f"the file; {unwritable(exc)}"
                )
                raise JournalError(msg) from exc
            raise self._damaged_file(exc) from exc
        except OSError as exc:
            msg = f"cannot read the commit logs of journal {str(self.path)!r}: {exc}"
            raise JournalError(msg) from exc
        if commit:
            applied.remove_spent()

    def catch_up(self) -> None:
        """Apply every process's log to the database for good (a reader applies them
        for itself; this is for a recovery, or a tool that reads the file directly)."""
        with self._view(commit=True):
            pass  # opening the view applies the logs; leaving it with commit=True keeps them

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one query on the database with every log applied (in a view)."""
        with self._view():
            try:
                return list(self._conn().execute(sql, params).fetchall())
            except sqlite3.DatabaseError as exc:
                raise self._damaged_file(exc) from exc

    def load(self, request_id: str) -> RequestJournal:
        """Everything journaled for one request, the logs included (see `Journal.load`)."""
        with self._view():
            return super().load(request_id)

    def unfinished(self, catalog: str | None = None) -> Iterator[RequestJournal]:
        """Every request opened and not closed, the logs included (read only)."""
        with self._view():
            found = list(super().unfinished(catalog))
            lost = self._fetch(
                "SELECT DISTINCT request_id FROM journal_damaged WHERE request_id NOT IN "
                "(SELECT request_id FROM journal_requests)"
            )
        # A damaged record may have held a request's open entry: it is counted, not lost.
        self.damaged.update(str(row[0]) for row in lost)
        yield from found

    def _damage(self, request_id: str) -> tuple[int, int]:
        rows = self._fetch(
            "SELECT count(*), count(*) FILTER (WHERE kind IS NOT ?) FROM journal_damaged "
            "WHERE request_id = ?",
            (journal_log.CUT, request_id),
        )
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    # -- liveness and claims -------------------------------------------------

    def owner_alive(self, owner: str) -> bool:
        """Whether the process that owns `owner` still holds its lock."""
        if owner == self.owner:
            return self._alive_here()
        return self._alive_name(_safe(owner))

    def _alive_here(self) -> bool:
        """Whether this process still counts as alive: its lock held and in place."""
        return self._owner.held and self._lost is None

    def _alive_name(self, name: str) -> bool:
        """Whether the owner whose lock file is called `name` still holds it."""
        if name == self._name:
            return self._alive_here()
        return holds(self._lock_dir, name)

    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins.
        Every log is applied for good first, so the request's entries are all rows."""
        conn = self._conn()
        with self._view(commit=True):
            row = conn.execute(
                "SELECT owner, closed_at FROM journal_requests WHERE request_id = ?",
                (request_id,),
            ).fetchone()
            won = row is not None and row[1] is None
            won = won and (row[0] == self.owner or not self.owner_alive(row[0]))
            if won:
                conn.execute(
                    "UPDATE journal_requests SET owner = ?, claimed_at = ? WHERE request_id = ?",
                    (self.owner, time.time(), request_id),
                )
        return bool(won)

    def same_database(self, store: object) -> bool:
        """Whether `store` is a SQLite store in this journal's file."""
        if not isinstance(store, SQLiteStore):
            return False
        return os.path.realpath(store.path) == os.path.realpath(self.path)

    # -- closing -------------------------------------------------------------

    def close(self) -> None:
        """Commit and apply what was submitted, stop the writer, delete this process's
        log once it is all applied (else it stays, for a recovering process to apply),
        and release the owner lock. A second call does nothing."""
        try:
            if self._writer is not None:
                if self._pending and not self._writer.closed:
                    # A catch-up that failed left records: one more try.
                    with contextlib.suppress(WriterClosed):
                        self._writer.submit(_LOGGED)
                self._writer.close()
            log = self._log
            if log is not None and self._owner.held:
                with contextlib.suppress(OSError):  # the zeros after its records stay
                    log.close()
                if not self._pending:
                    for generation in range(log.generation, 0, -1):
                        with contextlib.suppress(OSError):  # stays, all of it applied
                            log.path(generation).unlink(missing_ok=True)
        finally:
            self._release()
        # A process that lost its owner lock told every caller since, each commit refused.
        if self._pending and self._catch_up_error is not None and self._lost is None:
            warnings.warn(
                f"journal {str(self.path)!r} closed with {len(self._pending)} commits in its "
                f"log that its writer could not apply ({self._catch_up_error}): they are "
                f"safe in {self._lock_dir}, and the next process to open the journal "
                f"applies them",
                RuntimeWarning,
                stacklevel=2,
            )

    def _release(self) -> None:
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()
        owner = getattr(self, "_owner", None)
        if owner is not None:
            owner.release()

    def __del__(self) -> None:
        # An abandoned journal releases its owner lock, as the process's death would.
        owner = getattr(self, "_owner", None)
        if owner is not None and owner.held:
            with contextlib.suppress(Exception):
                self.close()
