"""What every journal backend shares: the tables, the rows, reading back, the writer thread.

Per request, an *open* entry (plan, input, input hash, catalog version) is
committed before the first step is dispatched; a *started* entry before a part
is called (if it cannot be written, the call does not start); a *settled* entry
with the value or error before any step that reads it starts; a *closed* entry
once the response exists, or once the caller cancelled the request.
"Interrupted" is never written: for an unclosed request whose owner process is
gone it is derived, as *interrupted during execution* (started, not settled) or
*interrupted before start* (never started).

Every write is made durable without a database call on the committing thread: by
the journal's one writer thread (`solvi._db.writer`), which the caller waits for,
or, for a SQLite journal with ``synchronous="NORMAL"``, by one append to the
process's commit log (`solvi._db.journal_log`), which the writer thread applies to
the database later. Values are kept as data only (the record's JSON, and the
exact tagged JSON of `solvi._db.exact`); reading a journal never runs anything it
holds.
"""

from __future__ import annotations

import abc
import functools
import hashlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs

from solvi._db.exact import ExactFormError, decode
from solvi._db.journal_rows import (
    CLOSE_REQUEST,
    INSERT_ENTRY,
    OPEN_REQUEST,
    Item,
    checksum,
    entry_row,
    rows_of,
)
from solvi._db.writer import Ticket, Writer
from solvi.errors import SolviError, _finite

__all__ = [
    "ADD_CLOSED_AS",
    "CANCELLED",
    "SCHEMA",
    "Journal",
    "JournalEntry",
    "JournalError",
    "RequestJournal",
    "StepState",
    "Unit",
    "input_hash",
    "newer_schema",
]

# The tables, made by the first step of the journal's migrations (`solvi._db.migrations`):
# IF NOT EXISTS keeps those of a journal made before versions were kept, and a later
# step adds ADD_CLOSED_AS's column to them when it is missing. Entries are never
# deleted, so a plain rowid (one more than the largest) only grows. Requests are found
# by id, so their table is keyed by it (WITHOUT ROWID), and the index of open requests
# holds only those.
SCHEMA = """
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
    response_hash TEXT,
    closed_as TEXT
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
#: requests record how they closed (answered or cancelled): for tables made before
ADD_CLOSED_AS = "ALTER TABLE journal_requests ADD COLUMN closed_as TEXT"

#: how a request closed by its caller's cancellation is marked (``closed_as``)
CANCELLED = "cancelled"
#: ``closed_as`` of a request whose response the store refused: it holds another
#: request's under the same id
REFUSED = "refused"
#: ``closed_as`` of a request that has its response
ANSWERED = "answered"
#: what ``exact`` holds for a value with no exact form: its step is not resumable
NO_EXACT = "-"
#: the next requests `Journal.prune` deletes, in key order, a few hundred at a time (a
#: short transaction, and each batch starts where the last one ended)
_CLOSED_BEFORE = (
    "SELECT request_id FROM journal_requests WHERE request_id > ? AND closed_at <= ? "
    "ORDER BY request_id LIMIT 500"
)

#: One unit of the writer: statements, and store plans (a callable making a fresh
#: plan, so that a unit can be retried alone), committed in one transaction.
Unit = tuple[Any, ...]


class JournalError(SolviError, RuntimeError):
    """The journal cannot be written or read as it must be."""


@attrs.frozen
class JournalEntry:
    """One started or settled entry of a request.

    `value` is what the part returned, rebuilt exactly; `resumable` is False when
    it had no exact form (the step then counts as interrupted on resume).
    """

    seq: int
    kind: str  # "started" | "settled"
    step: int
    part: str
    outcome: str | None
    value: Any
    message: str | None
    at: float
    resumable: bool = True


@attrs.frozen
class StepState:
    """What the journal says of one planned step, as a reader may show it.

    `state` is ``"settled"``, ``"running"`` (only while the owner lives),
    ``"interrupted during execution"``, ``"interrupted before start"``,
    ``"not started"`` (owner alive) or ``"not run"`` (the request is closed).
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
    #: ``"answered"`` or ``"cancelled"`` once closed (None for journals before it)
    closed_as: str | None = None
    #: whether the stored input still matches its hash
    input_intact: bool = True

    @property
    def cancelled(self) -> bool:
        """Whether the request's caller cancelled it (it is closed, never resumed)."""
        return self.closed_as == CANCELLED

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
                live = self.owner_alive and not before_claim and not self.closed
                state = "running" if live else "interrupted during execution"
                out.append(StepState(part, state))
            elif self.closed:
                out.append(StepState(part, "not run"))
            else:
                state = "not started" if self.owner_alive else "interrupted before start"
                out.append(StepState(part, state))
        return tuple(out)


@functools.lru_cache(maxsize=256)
def _plan_json(plan: tuple[str, ...]) -> str:
    """A plan as the journal keeps it (the same few plans come back for every request)."""
    return json.dumps(list(plan))


def input_hash(state_json: str) -> str:
    """sha256 of a request's canonical input."""
    return hashlib.sha256(state_json.encode()).hexdigest()


_TEXT, _NUMBER, _OPT_TEXT, _OPT_NUMBER = (
    (str,),
    (int, float),
    (str, type(None)),
    (
        int,
        float,
        type(None),
    ),
)
#: the types each column of a request row (as `load` selects it) may hold
_REQUEST_TYPES = (_TEXT,) * 7 + (_NUMBER, _OPT_NUMBER, _OPT_NUMBER, _OPT_TEXT)
#: the same for an entry row
_ENTRY_TYPES = (
    (int,),
    _TEXT,
    (int,),
    _TEXT,
    _OPT_TEXT,
    _OPT_TEXT,
    _OPT_TEXT,
    _OPT_TEXT,
    _NUMBER,
    _TEXT,
)


def _check_types(row: Sequence[Any], types: Sequence[tuple[type, ...]]) -> None:
    """Raise TypeError naming the first column whose value has a type solvi never writes."""
    for index, (value, allowed) in enumerate(zip(row, types, strict=True)):
        if type(value) not in allowed:
            msg = f"column {index} holds a {type(value).__name__}"
            raise TypeError(msg)


def _input_and_plan(row: Sequence[Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A request row's input and plan.

    Raises:
        TypeError, ValueError: the row holds what solvi never writes.
    """
    _check_types(row, _REQUEST_TYPES)
    state = decode(row[5])
    plan = tuple(json.loads(row[6]))
    if not isinstance(state, dict) or not all(isinstance(p, str) for p in plan):
        msg = "the input is not a mapping, or the plan not a list of names"
        raise ValueError(msg)
    return state, plan


def _entry_value(value: str | None, exact: str | None) -> tuple[Any, bool]:
    """An entry's value and whether it is exact.

    Raises:
        ExactFormError, ValueError: the stored text is not what solvi writes.
    """
    if exact == NO_EXACT:
        return (None if value is None else json.loads(value)), False
    if exact is not None:
        return decode(exact), True
    # No exact form: the value's JSON is exact, tags and all (a NaN's `{"$float":
    # "nan"}` is both its record form and its exact one), so it is read as one.
    return (None if value is None else decode(value)), True


class Journal(abc.ABC):
    """What every journal backend shares; subclasses supply connections and liveness.

    Journal SQL uses ``?`` placeholders; a backend whose driver wants another style
    converts them. Writes are units handed to the writer thread (`submit`);
    `commit` waits for one.
    """

    owner: str
    #: what `prune` deletes of the requests it names ({} stands for their keys)
    #: the tables whose rows of a request `prune` deletes with the request's own
    _forget_from: tuple[str, ...] = ("journal_entries",)
    #: requests this process is running right now
    active: set[str]
    #: requests whose row could not be read (listed by nothing, reported here)
    damaged: set[str]
    #: `submit` makes a unit durable before it returns (a log append), so its ticket
    #: is done at once; the writer thread applies it to the database later
    logs_commits: bool = False
    _writer: Writer[Any] | None = None

    # -- what a backend supplies -----------------------------------------------

    @abc.abstractmethod
    def _write(self, units: list[Any]) -> None:
        """On the writer thread: run every unit in one transaction, committed on return
        (the units `submit` handed over: a `Unit`, or what the backend wraps one in)."""

    @abc.abstractmethod
    def _writer_exit(self) -> None:
        """On the writer thread, as it stops: close its connection."""

    @abc.abstractmethod
    def _fetch(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one query and return its rows (never on an event loop's thread)."""

    @abc.abstractmethod
    def owner_alive(self, owner: str) -> bool:
        """Whether the process that owns `owner` still holds its lock."""

    @abc.abstractmethod
    def claim(self, request_id: str) -> bool:
        """Take over an unclosed request whose owner is dead; only one claimant wins."""

    @abc.abstractmethod
    def _release(self) -> None:
        """Release this process's owner lock and connections (after the writer stopped)."""

    @abc.abstractmethod
    def same_database(self, store: object) -> bool:
        """Whether `store` keeps its tables in this journal's database."""

    # -- the writer ------------------------------------------------------------

    @property
    def writer(self) -> Writer[Any]:
        """The journal's writer thread (started on the first write)."""
        writer = self._writer
        if writer is None:
            writer = self._writer = Writer(
                self._write, name=f"solvi-journal-writer {self!r}", on_exit=self._writer_exit
            )
        return writer

    def submit(self, unit: Unit, *, direct: bool = False) -> Ticket:
        """Hand one unit to the writer thread (`direct`: to the database itself, for a
        journal that logs its commits)."""
        return self.writer.submit(unit)

    def logs_open(self, request_id: str) -> bool:
        """Whether the open entry of this request goes to a log (not the database
        itself): then it may wait there for the request's first start."""
        return False

    def duplicate_key(self, exc: BaseException) -> bool:
        """Whether a failed commit of a request's open entry failed on the request key:
        its id is in the journal already (the backends know their driver's error)."""
        return False

    def log(self, request_id: str, items: list[Item]) -> Ticket:
        """Make one request's items durable (items as its `JournalWriter` makes them,
        see `rows_of`): as statements handed to the writer thread here; a journal
        with a log appends them to it."""
        return self.submit(tuple(rows_of(request_id, items)))

    def catch_up(self) -> None:  # noqa: B027  # a hook: a journal without logs has nothing to do
        """Bring the database up to every commit made so far (a journal that logs its
        commits applies the logs for good; others have nothing to do)."""

    def commit(self, unit: Unit) -> None:
        """Hand one unit to the writer thread and wait until it is committed."""
        self.submit(unit).wait()

    def close(self) -> None:
        """Commit what was submitted, stop the writer, release the owner lock (this
        process's unclosed requests become recoverable). A second call does nothing."""
        if self._writer is not None:
            self._writer.close()
        self._release()

    # -- statements --------------------------------------------------------------

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
        """The statement that writes a request's open entry."""
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

    def close_statement(
        self, request_id: str, response_hash: str | None, closed_as: str = ANSWERED
    ) -> tuple[str, tuple[Any, ...]]:
        """The statement that closes a request."""
        return (CLOSE_REQUEST, (time.time(), response_hash, closed_as, request_id))

    # -- writing, one statement at a time (tools, tests, the sync driver) ----------

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
        statement = self.open_statement(
            request_id,
            catalog=catalog,
            catalog_version=catalog_version,
            state_json=state_json,
            plan=plan,
            early_exit=early_exit,
        )
        self.commit((statement,))

    def started(self, request_id: str, step: int, part: str) -> None:
        """Commit that a part's call is about to begin."""
        row = entry_row(request_id, "started", step, part, None, None, None, None)
        self.commit(((INSERT_ENTRY, row),))

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
        """Commit a call's outcome: `value_json` for readers, `exact` for a resume."""
        row = entry_row(request_id, "settled", step, part, outcome, value_json, message, exact)
        self.commit(((INSERT_ENTRY, row),))

    def close_request(
        self, request_id: str, response_hash: str | None, closed_as: str = ANSWERED
    ) -> None:
        """Commit that the request has its response (or was cancelled)."""
        self.active.discard(request_id)
        self.commit((self.close_statement(request_id, response_hash, closed_as),))

    def running_here(self, request_id: str) -> None:
        """Note that this process is running (or resuming) the request right now."""
        self.active.add(request_id)

    def done_here(self, request_id: str) -> None:
        """Note that this process no longer runs the request."""
        self.active.discard(request_id)

    # -- reading -------------------------------------------------------------

    def has_request(self, request_id: str) -> bool:
        """Whether the journal holds a request with this id, finished or not."""
        return bool(
            self._fetch("SELECT 1 FROM journal_requests WHERE request_id = ?", (request_id,))
        )

    def load(self, request_id: str) -> RequestJournal:
        """Everything journaled for one request.

        Raises:
            JournalError: no such request, or its row is damaged.
        """
        rows = self._fetch(
            "SELECT request_id, owner, catalog, catalog_version, input_hash, input, plan, "
            "early_exit, closed_at, claimed_at, closed_as FROM journal_requests "
            "WHERE request_id = ?",
            (request_id,),
        )
        if not rows:
            msg = (
                f"the journal {self} has no request {request_id!r}: it never opened here, "
                f"or prune() forgot it once it was closed"
            )
            raise JournalError(msg)
        row = rows[0]
        try:
            state, plan = _input_and_plan(row)
        except (ValueError, TypeError) as exc:
            msg = f"the journal's row for request {request_id!r} is damaged: {exc}"
            raise JournalError(msg) from exc
        entries, torn_parts = self._entries(request_id)
        entries_torn = len(torn_parts)
        settled = {e.part for e in entries if e.kind == "settled"}
        damaged, anywhere = self._damage(request_id)
        if anywhere or not set(torn_parts) <= set(plan):
            # A damaged record or entry that names no planned part may have been the
            # start of any step not settled: none of them is run again unless idempotent.
            torn_parts = [*torn_parts, *(p for p in plan if p not in settled)]
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
            skipped_torn=entries_torn + damaged,
            torn_parts=frozenset(p for p in torn_parts if p not in settled),
            claimed_at=row[9],
            closed_as=row[10],
            input_intact=input_hash(row[5]) == row[4],
        )

    def _damage(self, request_id: str) -> tuple[int, int]:
        """How many damaged log records name the request, and how many of those were not
        the last record a dead owner was writing (none, for a journal without logs)."""
        return 0, 0

    def _entries(self, request_id: str) -> tuple[list[JournalEntry], list[str]]:
        """A request's sound entries, and the part of each damaged one."""
        entries: list[JournalEntry] = []
        torn: list[str] = []
        found = self._fetch(
            "SELECT seq, kind, step, part, outcome, value, message, exact, at, checksum "
            "FROM journal_entries WHERE request_id = ? ORDER BY seq",
            (request_id,),
        )
        for row in found:
            seq, kind, step, part, outcome, value, message, exact, at, stored = row
            try:
                _check_types(row, _ENTRY_TYPES)
            except TypeError:
                torn.append(part if isinstance(part, str) else "?")
                continue
            expected = checksum(request_id, kind, step, part, outcome, value, message, exact)
            if stored != expected or kind not in ("started", "settled"):
                torn.append(str(part))  # a damaged entry is skipped, never fatal
                continue
            try:
                decoded, resumable = _entry_value(value, exact)
            except (ValueError, ExactFormError):
                torn.append(str(part))
                continue
            entries.append(
                JournalEntry(seq, kind, step, part, outcome, decoded, message, at, resumable)
            )
        return entries, torn

    def prune(self, older_than: float) -> int:
        """Forget the requests closed at least `older_than` seconds ago, with their
        entries, and say how many. A closed request is kept only so that `resume`
        can say how it ended and a caller cannot reuse its id; nothing else reads it.

        Raises:
            ValueError: `older_than` is not a number of seconds, 0 or more.
        """
        if not _finite(older_than) or older_than < 0:
            msg = f"older_than must be a number of seconds, 0 or more; got {older_than!r}"
            raise ValueError(msg)
        cutoff, after, count = time.time() - older_than, "", 0
        while ids := [row[0] for row in self._fetch(_CLOSED_BEFORE, (after, cutoff))]:
            # A reader sees commits still in a process's log: each delete asks again
            # whether the database itself holds the close, so none of a request's
            # entries is applied after its row is gone.
            keys = ", ".join("?" * len(ids))
            closed = f"request_id IN ({keys}) AND closed_at <= ?"
            held = f"SELECT request_id FROM journal_requests WHERE {closed}"
            unit = [
                (f"DELETE FROM {t} WHERE request_id IN ({held})", (*ids, cutoff))
                for t in self._forget_from
            ]
            self.commit((*unit, (f"DELETE FROM journal_requests WHERE {closed}", (*ids, cutoff))))
            (left,) = self._fetch(
                f"SELECT count(*) FROM journal_requests WHERE request_id IN ({keys})", tuple(ids)
            )
            count, after = count + len(ids) - int(left[0]), ids[-1]
        return count

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


def newer_schema(where: str, found: int, supported: int) -> str:
    """Why a journal written by a newer solvi is refused (raised as a JournalError)."""
    return (
        f"journal {where} has schema version {found}, newer than this solvi understands "
        f"({supported}); upgrade solvi"
    )


def drive_unit(
    unit: Unit,
    execute: Callable[[str, tuple[Any, ...]], Any],
    run_plan: Callable[[Any], Any],
) -> None:
    """Run one unit's items: statements with `execute`, store plans with `run_plan`."""
    for item in unit:
        if type(item) is tuple:
            execute(*item)
        else:
            run_plan(item())
