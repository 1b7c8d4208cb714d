"""The journal: each request's progress, written ahead, so a crash loses nothing silently.

Per request, an *open* entry (plan, input, input hash, catalog version) is
committed before the first step is dispatched; a *started* entry before a
part is called (if it cannot be written, the call does not start); a
*settled* entry with the value or error before any step that reads it is
released; a *closed* entry once the response exists. "Interrupted" is never
written: it is derived, for an unclosed request whose owner process is gone,
as *interrupted during execution* (started, not settled) or *interrupted
before start* (never started).

Owners prove they are alive by holding an exclusive lock on a file of their
own next to the database for as long as their journal is open; the lock
vanishes with the process, however it dies.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import contextlib
import fcntl
import functools
import hashlib
import json
import math
import os
import pickle
import socket
import sqlite3
import threading
import time
import uuid
import weakref
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.lowlevel
import attrs

__all__ = [
    "CLOSE_REQUEST",
    "INSERT_ENTRY",
    "OPEN_REQUEST",
    "EntryRows",
    "GroupCommit",
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
    "pack_exact",
    "unpack_exact",
]

from solvi._journal_log import LOGS_SCHEMA, Applied, LogWriter, apply_logs, encode, log_files
from solvi.errors import SolviError

# Entries are never deleted, so a plain rowid (one more than the largest) still only
# grows; AUTOINCREMENT would also rewrite sqlite_sequence on every commit. Requests are
# found by id only, so their table is keyed by it (WITHOUT ROWID: one B-tree, not a
# table and an index), and the index of open requests holds only those. A commit then
# writes fewer pages. (Journals created before keep their tables; the SQL is the same.)
SCHEMA = """
CREATE TABLE IF NOT EXISTS journal_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal_requests (
    request_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    catalog TEXT NOT NULL,
    catalog_version TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    input TEXT NOT NULL,
    plan TEXT NOT NULL,
    early_exit INTEGER NOT NULL,
    opened_at REAL NOT NULL,
    claimed_at REAL,
    closed_at REAL,
    response_hash TEXT
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS journal_entries (
    seq INTEGER PRIMARY KEY,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    step INTEGER NOT NULL,
    part TEXT NOT NULL,
    outcome TEXT,
    value TEXT,
    message TEXT,
    exact TEXT,
    at REAL NOT NULL,
    checksum TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_entries_request ON journal_entries (request_id, seq);
CREATE INDEX IF NOT EXISTS journal_requests_open ON journal_requests (opened_at)
    WHERE closed_at IS NULL;
"""
VERSION = 1
#: SQLite journals since commit logs: an older solvi would not read the logs, so it
#: must refuse them
SQLITE_VERSION = 2


class JournalError(SolviError, RuntimeError):
    """The journal cannot be written or read as it must be."""


def _checksum(*fields: Any) -> str:
    # Detects a torn or damaged entry, not tampering (that is the audit log's job),
    # so a CRC is enough, and much cheaper than a cryptographic hash per step.
    text = "\x1f".join("" if f is None else str(f) for f in fields)
    return format(zlib.crc32(text.encode()), "08x")


@attrs.frozen
class JournalEntry:
    """One started or settled entry of a request."""

    seq: int
    kind: str  # "started" | "settled"
    step: int
    part: str
    outcome: str | None
    value: Any
    message: str | None
    at: float


@attrs.frozen
class StepState:
    """What the journal says of one planned step, as a reader may show it.

    `state` is ``"settled"``, ``"running"`` (only while the owner lives),
    ``"interrupted during execution"``, ``"interrupted before start"`` or
    ``"not started"`` (owner alive).
    """

    part: str
    state: str
    outcome: str | None = None


@attrs.frozen
class RequestJournal:
    """Everything the journal holds about one request."""

    request_id: str
    owner: str
    owner_alive: bool
    catalog: str
    catalog_version: str
    input_hash: str
    input: dict[str, Any]
    plan: tuple[str, ...]
    early_exit: bool
    closed: bool
    entries: tuple[JournalEntry, ...]
    skipped_torn: int
    #: parts named by damaged entries: they may have started, so none is run again
    #: unless idempotent
    torn_parts: frozenset[str] = frozenset()
    #: when a recovering process took the request over (entries before it belong
    #: to the dead owner)
    claimed_at: float | None = None

    def started_parts(self) -> set[str]:
        """Parts that may have begun a call: a started entry, or a damaged entry."""
        return {e.part for e in self.entries if e.kind == "started"} | set(self.torn_parts)

    def steps(self) -> tuple[StepState, ...]:
        """Each planned step's state, never "running" once its owner is gone."""
        started: dict[str, JournalEntry] = {}
        settled: dict[str, JournalEntry] = {}
        for e in self.entries:
            (started if e.kind == "started" else settled)[e.part] = e
        out = []
        for part in self.plan:
            if part in settled:
                out.append(StepState(part, "settled", settled[part].outcome))
            elif part in started or part in self.torn_parts:
                entry = started.get(part)
                before_claim = entry is None or (
                    self.claimed_at is not None and entry.at <= self.claimed_at
                )
                live = self.owner_alive and not before_claim
                state = "running" if live else "interrupted during execution"
                out.append(StepState(part, state))
            elif self.closed:
                out.append(StepState(part, "not run"))
            else:
                state = "not started" if self.owner_alive else "interrupted before start"
                out.append(StepState(part, state))
        return tuple(out)


def pack_exact(value: Any) -> str | None:
    """A value as base64 pickle, so a resume gets back exactly the object a part
    returned (a date, a tuple), not its JSON form; None if it cannot be pickled.

    Only a journal the operator trusts may be resumed from: unpickling runs code.
    A string, a whole number, a bool, a finite float or None comes back exactly
    from JSON, so it needs no pickle.
    """
    kind = type(value)
    if value is None or kind is str or kind is int or kind is bool:
        return None
    if kind is float and math.isfinite(value):
        return None
    try:
        return base64.b64encode(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).decode()
    except Exception:  # any object may refuse pickling; the JSON form is kept then
        return None


def unpack_exact(text: str) -> Any:
    """The inverse of `pack_exact`."""
    return pickle.loads(base64.b64decode(text))  # only trusted journals are resumed


ENTRY_COLUMNS = "request_id, kind, step, part, outcome, value, message, exact, at, checksum"
INSERT_ENTRY = f"INSERT INTO journal_entries ({ENTRY_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"
OPEN_REQUEST = (
    "INSERT INTO journal_requests (request_id, owner, catalog, catalog_version, "
    "input_hash, input, plan, early_exit, opened_at) VALUES (?,?,?,?,?,?,?,?,?)"
)
CLOSE_REQUEST = "UPDATE journal_requests SET closed_at = ?, response_hash = ? WHERE request_id = ?"


class EntryRows:
    """The entry rows of one request, as `entry_row` makes them, with the request's
    share of each checksum worked out once (a CRC can be continued)."""

    __slots__ = ("_crc", "request_id")

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self._crc = zlib.crc32(f"{request_id}\x1f".encode())

    def started(self, step: int, part: str) -> tuple[Any, ...]:
        """The row of a started entry."""
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
            time.time(),
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
    ) -> tuple[Any, ...]:
        """The row of a settled entry."""
        text = (
            f"settled\x1f{step}\x1f{part}\x1f{outcome}\x1f{'' if value is None else value}\x1f"
            f"{'' if message is None else message}\x1f{'' if exact is None else exact}"
        )
        crc = zlib.crc32(text.encode(), self._crc)
        row = (self.request_id, "settled", step, part, outcome, value, message, exact)
        return (*row, time.time(), f"{crc:08x}")


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
    checksum = _checksum(request_id, kind, step, part, outcome, value, message, exact)
    return (request_id, kind, step, part, outcome, value, message, exact, time.time(), checksum)


class GroupCommit:
    """Lets the concurrent steps of one event loop share commits.

    Writers bound to a group `add` their statements; a step that needs its
    entry durable awaits `flush`. The first flusher leads: it yields one turn
    of the loop (so that the other steps ready in the same turn add theirs),
    then more turns (at most `gather_turns` in all) while workers the
    scheduler has woken or started have yet to run (see `expect`), and commits
    everything pending in one transaction. The others wait for that commit
    (or, if it failed, lead the next attempt). When `flush` returns, every
    statement added before the call is committed; if the commit fails, they
    stay pending and the error is raised.
    """

    #: how many turns of the loop a leader waits at most for more statements
    gather_turns = 3

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.pending: list[tuple[str, tuple[Any, ...]]] = []
        #: how many statements were committed: the first ones ever added, in order
        self.durable = 0
        #: workers woken or started that have not run yet (see `expect`)
        self.coming = 0
        self._leading = False
        #: the followers of the current leader (asyncio futures, resolved after its commit)
        self._waiters: list[asyncio.Future[None]] = []
        #: the asyncio loop (None under another backend), found on the first flush
        self._loop: asyncio.AbstractEventLoop | None = None
        self._looked_up = False

    def expect(self) -> None:
        """Say that a worker was woken or started and runs on a coming turn of the
        loop, where it may add entries: a leader gathering a commit waits for it."""
        self.coming += 1

    def arrived(self) -> None:
        """Say that a worker announced by `expect` runs now."""
        self.coming -= 1

    def add(self, statement: tuple[str, tuple[Any, ...]]) -> None:
        """Queue one statement (sql, params)."""
        self.pending.append(statement)

    def add_entry(self, row: tuple[Any, ...]) -> None:
        """Queue one entry row (see `entry_row`)."""
        self.pending.append((INSERT_ENTRY, row))

    async def flush(self) -> None:
        """Commit what is pending, together with what the loop's other steps add now."""
        if not self.pending:
            return
        target = self.durable + len(self.pending)
        if not self._looked_up:
            try:
                self._loop = asyncio.get_running_loop()
            except RuntimeError:
                self._loop = None
            self._looked_up = True
        loop = self._loop
        # On asyncio, yield with asyncio's own sleep(0), what anyio's checkpoint
        # does there after looking the backend up on every call.
        pause = anyio.lowlevel.checkpoint if loop is None else _sleep0
        while self._leading:
            if loop is None:
                await pause()  # the leader commits ours with its own
            else:
                waiter = loop.create_future()
                self._waiters.append(waiter)
                await waiter
            if self.durable >= target:
                return
        self._leading = True
        try:
            await pause()  # the steps ready in this turn add theirs
            turns = 1
            while self.coming > 0 and turns < self.gather_turns:
                await pause()
                turns += 1
            if self.durable < target:
                self.flush_now()
        finally:
            self._leading = False
            waiters, self._waiters = self._waiters, []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def flush_now(self) -> None:
        """Commit what is pending, without waiting for company."""
        if not self.pending:
            return
        statements, self.pending = self.pending, []
        try:
            self.journal.write_statements(statements)
        except BaseException:
            self.pending[:0] = statements
            raise
        self.durable += len(statements)


@functools.lru_cache(maxsize=256)
def _plan_json(plan: tuple[str, ...]) -> str:
    """A plan as the journal keeps it (the same few plans come back for every request)."""
    return json.dumps(list(plan))


#: a turn of the asyncio loop (anyio's checkpoint is this, after a backend lookup)
_sleep0 = functools.partial(asyncio.sleep, 0)


def input_hash(state_json: str) -> str:
    """sha256 of a request's canonical input."""
    return hashlib.sha256(state_json.encode()).hexdigest()


class Journal(abc.ABC):
    """What every journal backend shares; subclasses supply the connection and liveness.

    SQL here uses ``?`` placeholders; a backend whose driver wants another style
    converts them in `_execute` and `_fetch`.
    """

    owner: str
    #: requests this process is running right now
    active: set[str]
    #: requests whose row could not be read (listed by nothing, reported here)
    damaged: set[str]

    @abc.abstractmethod
    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        """Run one statement in a transaction of its own, committed on return."""

    @abc.abstractmethod
    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Run several statements in one transaction."""

    @abc.abstractmethod
    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one query and return its rows."""

    @abc.abstractmethod
    def owner_alive(self, owner: str) -> bool:
        """Whether the process that owns `owner` still holds its lock."""

    @abc.abstractmethod
    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release this process's owner lock (its unclosed requests become recoverable)."""

    # -- writing -------------------------------------------------------------

    def open(
        self,
        request_id: str,
        *,
        catalog: str,
        catalog_version: str,
        state_json: str,
        plan: tuple[str, ...],
        early_exit: bool,
    ) -> None:
        """Commit the open entry of a request; nothing runs before it returns."""
        self._execute(
            *self.open_statement(
                request_id,
                catalog=catalog,
                catalog_version=catalog_version,
                state_json=state_json,
                plan=plan,
                early_exit=early_exit,
            )
        )

    def open_statement(
        self,
        request_id: str,
        *,
        catalog: str,
        catalog_version: str,
        state_json: str,
        plan: tuple[str, ...],
        early_exit: bool,
    ) -> tuple[str, tuple[Any, ...]]:
        """The statement that writes a request's open entry (for a group commit)."""
        return (
            OPEN_REQUEST,
            (
                request_id,
                self.owner,
                catalog,
                catalog_version,
                input_hash(state_json),
                state_json,
                _plan_json(plan),
                int(early_exit),
                time.time(),
            ),
        )

    def started(self, request_id: str, step: int, part: str) -> None:
        """Commit that a part's call is about to begin."""
        self._entry(request_id, "started", step, part, None, None, None, None)

    def settled(
        self,
        request_id: str,
        step: int,
        part: str,
        outcome: str,
        value_json: str | None,
        message: str | None,
        exact: str | None = None,
    ) -> None:
        """Commit a call's outcome before anything reads it.

        `value_json` is the value as JSON, for readers; `exact` the value in a
        form that restores it exactly (see `pack_exact`), for a resume.
        """
        self._entry(request_id, "settled", step, part, outcome, value_json, message, exact)

    def _entry(
        self,
        request_id: str,
        kind: str,
        step: int,
        part: str,
        outcome: str | None,
        value: str | None,
        message: str | None,
        exact: str | None,
    ) -> None:
        self._execute(
            INSERT_ENTRY, entry_row(request_id, kind, step, part, outcome, value, message, exact)
        )

    def close_request(self, request_id: str, response_hash: str | None) -> None:
        """Commit that the request's response exists."""
        self._execute(*self.close_statement(request_id, response_hash))

    def close_statement(
        self, request_id: str, response_hash: str | None
    ) -> tuple[str, tuple[Any, ...]]:
        """The statement that closes a request (for a group commit)."""
        self.active.discard(request_id)
        return (CLOSE_REQUEST, (time.time(), response_hash, request_id))

    def write_statements(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Commit several statements in one transaction."""
        self._transaction(statements)

    def has_request(self, request_id: str) -> bool:
        """Whether the journal holds a request with this id, finished or not."""
        return bool(
            self._fetch("SELECT 1 FROM journal_requests WHERE request_id = ?", (request_id,))
        )

    def running_here(self, request_id: str) -> None:
        """Note that this process is running (or resuming) the request right now."""
        self.active.add(request_id)

    # -- reading -------------------------------------------------------------

    def load(self, request_id: str) -> RequestJournal:
        """Everything journaled for one request.

        Raises:
            JournalError: no such request.
        """
        rows = self._fetch(
            "SELECT request_id, owner, catalog, catalog_version, input_hash, input, plan, "
            "early_exit, closed_at, claimed_at FROM journal_requests WHERE request_id = ?",
            (request_id,),
        )
        if not rows:
            msg = f"the journal {self} has no request {request_id!r}"
            raise JournalError(msg)
        row = rows[0]
        try:
            state = json.loads(row[5])
            plan = tuple(json.loads(row[6]))
        except ValueError as exc:
            msg = f"the journal's row for request {request_id!r} is damaged: {exc}"
            raise JournalError(msg) from exc
        entries: list[JournalEntry] = []
        torn = 0
        torn_parts: set[str] = set()
        found = self._fetch(
            "SELECT seq, kind, step, part, outcome, value, message, exact, at, checksum "
            "FROM journal_entries WHERE request_id = ? ORDER BY seq",
            (request_id,),
        )
        for seq, kind, step, part, outcome, value, message, exact, at, checksum in found:
            expected = _checksum(request_id, kind, step, part, outcome, value, message, exact)
            if checksum != expected:
                torn += 1  # a damaged entry is skipped, never fatal
                torn_parts.add(str(part))
                continue
            try:
                decoded = unpack_exact(exact) if exact else None
                if exact is None and value is not None:
                    decoded = json.loads(value)
            except (ValueError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
                torn += 1
                torn_parts.add(str(part))
                continue
            entries.append(JournalEntry(seq, kind, step, part, outcome, decoded, message, at))
        # This process owns what it claimed, but only what it is running is running.
        alive = self.owner_alive(row[1]) and (row[1] != self.owner or request_id in self.active)
        return RequestJournal(
            request_id=row[0],
            owner=row[1],
            owner_alive=alive,
            catalog=row[2],
            catalog_version=row[3],
            input_hash=row[4],
            input=state,
            plan=plan,
            early_exit=bool(row[7]),
            closed=row[8] is not None,
            entries=tuple(entries),
            skipped_torn=torn,
            torn_parts=frozenset(torn_parts - {e.part for e in entries if e.kind == "settled"}),
            claimed_at=row[9],
        )

    def unfinished(self, catalog: str | None = None) -> Iterator[RequestJournal]:
        """Every request opened and not closed (read only; claims nothing)."""
        query = "SELECT request_id FROM journal_requests WHERE closed_at IS NULL"
        args: tuple[Any, ...] = ()
        if catalog is not None:
            query += " AND catalog = ?"
            args = (catalog,)
        for (request_id,) in self._fetch(query + " ORDER BY opened_at", args):
            try:
                yield self.load(request_id)
            except JournalError:
                self.damaged.add(request_id)  # one damaged row must not hide the others


def _is_new(version_row: tuple[Any, ...] | None, where: object, version: int = VERSION) -> bool:
    """Whether a journal's version row is missing (a new journal, to be stamped).

    Raises:
        JournalError: the journal was written by a newer solvi.
    """
    if version_row is None:
        return True
    if version_row[0] > version:
        msg = (
            f"journal {where} has schema version {version_row[0]}, newer than this solvi "
            f"understands ({version}); upgrade solvi"
        )
        raise JournalError(msg)
    return False


#: the statements a commit log carries, by the small number that stands for each
_LOGGED = {INSERT_ENTRY: 0, OPEN_REQUEST: 1, CLOSE_REQUEST: 2}
_SQL_OF = {tag: sql for sql, tag in _LOGGED.items()}
#: where each logged statement's parameters hold the request id
_REQUEST_AT = {0: 0, 1: 0, 2: 2}


class SQLiteJournal(Journal):
    """A journal in a SQLite file (WAL), shared by the processes of one machine.

    A commit is an append to a log file of this process's own, next to the
    database (see `solvi._journal_log`); a thread of the journal's own applies
    the log to the database every `apply_every` seconds, and every reader
    applies what is left first (an inspection in a transaction it rolls back).
    So a commit on the event loop costs one write, not a SQLite transaction.

    Args:
        path: the database file.
        synchronous: ``"NORMAL"`` (default) survives a killed process, not a
            power loss; ``"FULL"`` survives both, at an fsync per commit.
    """

    #: seconds the journal's thread lets commits gather before applying them
    apply_every = 0.05

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
        self._lock_dir = Path(f"{self.path}.owners")
        self._lock_dir.mkdir(parents=True, exist_ok=True)
        self._log = LogWriter(self._lock_dir, self._safe(self.owner), sync=synchronous == "FULL")
        self._applier: threading.Thread | None = None
        self._applier_lock = threading.Lock()
        self._apply_wake = threading.Event()
        self._apply_stop = threading.Event()
        self._owner_file = open(self._lock_dir / f"{self._safe(self.owner)}.lock", "w")
        fcntl.flock(self._owner_file, fcntl.LOCK_EX)
        conn = self._conn()
        with conn:
            conn.executescript(SCHEMA + LOGS_SCHEMA)
            row = conn.execute("SELECT version FROM journal_version").fetchone()
            if _is_new(row, self.path, SQLITE_VERSION):
                conn.execute("INSERT INTO journal_version VALUES (?)", (SQLITE_VERSION,))
            elif row is not None and row[0] < SQLITE_VERSION:
                conn.execute("UPDATE journal_version SET version = ?", (SQLITE_VERSION,))

    @staticmethod
    def _safe(owner: str) -> str:
        return owner.replace(":", "_").replace("/", "_")

    def __repr__(self) -> str:
        return f"SQLiteJournal({str(self.path)!r})"

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            self._local.conn = conn
        return conn

    def __del__(self) -> None:
        # An abandoned journal releases its owner lock, as the process's death would
        # (at interpreter exit, what close needs may be gone: the log stays, to be applied).
        owner_file = getattr(self, "_owner_file", None)
        if owner_file is not None and not owner_file.closed:
            with contextlib.suppress(Exception):
                self.close()

    def close(self) -> None:
        """Apply this process's log, and release its owner lock (its unclosed
        requests become recoverable)."""
        self._apply_stop.set()
        self._apply_wake.set()
        applier = self._applier
        if applier is not None and applier is not threading.current_thread():
            applier.join()
        self._applier = None
        self._log.close()
        if not self._owner_file.closed:
            self._apply_own_log()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
        if not self._owner_file.closed:
            fcntl.flock(self._owner_file, fcntl.LOCK_UN)
            self._owner_file.close()
            (self._lock_dir / f"{self._safe(self.owner)}.lock").unlink(missing_ok=True)

    def _apply_own_log(self) -> None:
        """Apply this process's log for good and delete its files (kept, for a later
        reader to apply, if that fails)."""
        name = self._log.name
        if self._log.generation == 0:
            return  # never written
        try:
            with self._view(commit=True, only=name):
                row = (
                    self._conn()
                    .execute("SELECT generation, applied FROM journal_logs WHERE name = ?", (name,))
                    .fetchone()
                )
        except (sqlite3.Error, OSError, JournalError):
            return
        if row is not None and tuple(row) == (self._log.generation, self._log.size):
            for generation in log_files(self._lock_dir).get(name, []):
                self._log.path(generation).unlink(missing_ok=True)

    # -- writing: appends to this process's log ---------------------------------

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        self._commit([(sql, params)])

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        self._commit(statements)

    def _commit(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        """Journal writes go to the log; anything else straight to the database,
        once the logs are applied."""
        try:
            tagged = [(_LOGGED[sql], params) for sql, params in statements]
        except KeyError:
            with self._view(commit=True):
                conn = self._conn()
                for sql, params in statements:
                    conn.execute(sql, params)
            return
        ids = dict.fromkeys(str(params[_REQUEST_AT[tag]]) for tag, params in tagged)
        self._log.append(encode(tagged, ids))
        if not self._apply_wake.is_set():
            if self._applier is None:
                self._start_applier()
            self._apply_wake.set()

    def _start_applier(self) -> None:
        with self._applier_lock:
            if self._applier is None and not self._apply_stop.is_set():
                self._applier = threading.Thread(
                    target=_apply_in_background,
                    args=(weakref.ref(self), self._apply_wake, self._apply_stop),
                    name="solvi-journal-apply",
                    daemon=True,
                )
                self._applier.start()

    # -- reading: the database, with every log applied --------------------------

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._view():
            return list(self._conn().execute(sql, params).fetchall())

    @contextlib.contextmanager
    def _view(self, *, commit: bool = False, only: str | None = None) -> Iterator[Applied]:
        """A transaction on this thread's connection in which every log (or the log
        `only`) is applied; committed with `commit`, else rolled back."""
        current: Applied | None = getattr(self._local, "view", None)
        if current is not None:
            if commit and not self._local.view_commits:
                msg = "a journal write inside a read of the journal"
                raise JournalError(msg)
            yield current
            return
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            try:
                applied = apply_logs(conn, self._lock_dir, _SQL_OF, self._alive_name, only)
            except sqlite3.IntegrityError as exc:
                msg = (
                    f"a commit log in {self._lock_dir} holds an entry the database refuses "
                    f"({exc}): two processes journaled requests under one id"
                )
                raise JournalError(msg) from exc
            self._local.view, self._local.view_commits = applied, commit
            yield applied
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT" if commit else "ROLLBACK")
        finally:
            self._local.view = None
        if commit:
            applied.remove_spent()

    def catch_up(self) -> None:
        """Apply every process's log to the database now, for good (readers apply
        the logs for themselves; this is for tools that read the file directly)."""
        self._apply_for_good()

    def _apply_for_good(self, only: str | None = None) -> Applied:
        """Apply every log (or the log `only`) and commit."""
        with self._view(commit=True, only=only) as applied:
            return applied

    def load(self, request_id: str) -> RequestJournal:
        """Everything journaled for one request (see `Journal.load`)."""
        with self._view() as applied:
            found = super().load(request_id)
        torn = applied.torn.get(request_id, 0)
        return attrs.evolve(found, skipped_torn=found.skipped_torn + torn) if torn else found

    def unfinished(self, catalog: str | None = None) -> Iterator[RequestJournal]:
        """Every request opened and not closed (read only; claims nothing)."""
        with self._view():
            found = list(super().unfinished(catalog))
        yield from found

    # -- liveness and claims -------------------------------------------------

    def owner_alive(self, owner: str) -> bool:
        """Whether the process that owns `owner` still holds its lock."""
        if owner == self.owner:
            return not self._owner_file.closed
        return self._alive_name(self._safe(owner))

    def _alive_name(self, name: str) -> bool:
        """Whether the owner whose lock file is called `name` still holds it."""
        if name == self._log.name:
            return not self._owner_file.closed
        try:
            handle = open(self._lock_dir / f"{name}.lock")
        except FileNotFoundError:
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
        with self._view(commit=True):  # every log applied for good first
            row = (
                self._conn()
                .execute(
                    "SELECT owner, closed_at FROM journal_requests WHERE request_id = ?",
                    (request_id,),
                )
                .fetchone()
            )
            if row is None or row[1] is not None:
                return False
            if row[0] != self.owner and self.owner_alive(row[0]):
                return False
            self._conn().execute(
                "UPDATE journal_requests SET owner = ?, claimed_at = ? WHERE request_id = ?",
                (self.owner, time.time(), request_id),
            )
        return True


def _apply_in_background(
    ref: weakref.ref[SQLiteJournal], wake: threading.Event, stop: threading.Event
) -> None:
    """The journal's thread: on the first commit after a pause, wait `apply_every`
    seconds for more, then apply the logs; until the journal closes or goes away."""
    try:
        while True:
            wake.wait()
            journal = ref()
            if journal is None or stop.is_set():
                return
            every = journal.apply_every
            del journal  # an abandoned journal may go meanwhile
            if stop.wait(every):
                return
            wake.clear()
            journal = ref()
            if journal is None:
                return
            # Every log, its own and those dead processes left (nobody else applies
            # those for good unless a request of theirs is claimed). A failure is left
            # for the next round, and for readers, to meet again.
            with contextlib.suppress(Exception):
                journal._apply_for_good()
            del journal
    finally:
        journal = ref()
        conn = None if journal is None else getattr(journal._local, "conn", None)
        if conn is not None:
            conn.close()
            journal._local.conn = None  # type: ignore[union-attr]


# The same tables in PostgreSQL's types.
PG_SCHEMA = (
    SCHEMA.replace("seq INTEGER PRIMARY KEY", "seq BIGSERIAL PRIMARY KEY")
    .replace("REAL", "DOUBLE PRECISION")
    .replace(" WITHOUT ROWID", "")
)


#: A group's entry rows as one INSERT, in order, from one parameter: the rows as a
#: JSON array of arrays. The statement is the same whatever the number of rows (so it
#: is prepared once), and json.dumps costs a fraction of psycopg adapting ten lists.
_PG_INSERT_ENTRIES = (
    f"INSERT INTO journal_entries ({ENTRY_COLUMNS}) SELECT r->>0, r->>1, (r->>2)::integer, "
    "r->>3, r->>4, r->>5, r->>6, r->>7, (r->>8)::double precision, r->>9 "
    "FROM json_array_elements(%s::json) WITH ORDINALITY AS e(r, n) ORDER BY n"
)


def _one_statement(
    statements: list[tuple[str, tuple[Any, ...]]],
) -> tuple[str, list[Any]] | None:
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
        elif sql == CLOSE_REQUEST and values[2] not in closed:
            closed.add(values[2])
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


def _owner_key(owner: str) -> int:
    """A signed 64-bit advisory-lock key for an owner."""
    return int.from_bytes(hashlib.sha256(owner.encode()).digest()[:8], "big", signed=True)


class PostgresJournal(Journal):
    """A journal in PostgreSQL, shared by processes on several machines.

    The owner's liveness is a session advisory lock held by one connection of
    the owning process for as long as the journal is open: when the process
    dies, its connection closes and the lock goes with it.

    Args:
        dsn: a ``postgresql://`` connection string.
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
        self._holder = self._connect()
        self._holder.execute("SELECT pg_advisory_lock(%s)", (_owner_key(self.owner),))
        # Group commits go through a connection of their own (no pool checkout per
        # commit); a second thread committing meanwhile takes one from the pool.
        self._writer: Any = None
        self._writer_lock = threading.Lock()
        self._pool = ConnectionPool(
            dsn, min_size=1, max_size=8, kwargs={"autocommit": True}, open=True
        )
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(7301)")  # one schema writer at a time
            conn.execute(PG_SCHEMA)
            row = conn.execute("SELECT version FROM journal_version").fetchone()
            if _is_new(row, self):
                conn.execute("INSERT INTO journal_version VALUES (%s)", (VERSION,))

    def __repr__(self) -> str:
        return "PostgresJournal(...)"

    @staticmethod
    def _sql(sql: str) -> str:
        return sql.replace("?", "%s")

    def _execute(self, sql: str, params: tuple[Any, ...] = ()) -> None:
        with self._pool.connection() as conn:
            conn.execute(self._sql(sql), params)

    def _transaction(self, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
        single = _one_statement(statements)
        if single is not None:
            # One statement is one transaction, in one round trip.
            if self._writer_lock.acquire(blocking=False):
                try:
                    writer = self._writer
                    if writer is None or writer.closed:
                        writer = self._writer = self._connect()
                    writer.execute(*single)
                finally:
                    self._writer_lock.release()
                return
            with self._pool.connection() as conn:
                conn.execute(*single)
            return
        with self._pool.connection() as conn, conn.transaction(), conn.pipeline():
            for sql, params in statements:
                conn.execute(self._sql(sql), params)

    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._pool.connection() as conn:
            return list(conn.execute(self._sql(sql), params).fetchall())

    def owner_alive(self, owner: str) -> bool:
        """Whether `owner`'s advisory lock is still held by a live session."""
        if owner == self.owner:
            return not self._holder.closed
        key = _owner_key(owner)
        with self._pool.connection() as conn:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            got = bool(row and row[0])
            if got:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        return not got

    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins."""
        with self._pool.connection() as conn, conn.transaction():
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

    def __del__(self) -> None:
        # An abandoned journal releases its owner lock, as the process's death would.
        if getattr(self, "_pool", None) is not None:
            self.close()

    def close(self) -> None:
        """Release the owner lock and the connections."""
        if not self._holder.closed:
            self._holder.close()
        with self._writer_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None
        if not self._pool.closed:
            self._pool.close()


def open_journal(spec: Any) -> Journal:
    """A journal from a path, ``sqlite:///path``, ``postgresql://...``, or a journal object.

    Raises:
        ValueError: the spec names no journal solvi can open.
    """
    if isinstance(spec, Journal):
        return spec
    if isinstance(spec, os.PathLike):
        return SQLiteJournal(spec)
    if isinstance(spec, str):
        if spec.startswith("sqlite:///"):
            return SQLiteJournal(spec[len("sqlite:///") :])
        if spec.startswith(("postgresql://", "postgres://")):
            return PostgresJournal(spec)
        if "://" not in spec:
            return SQLiteJournal(spec)
    msg = f"journal= takes a file path, 'sqlite:///path' or a SQLiteJournal, got {spec!r}"
    raise ValueError(msg)
