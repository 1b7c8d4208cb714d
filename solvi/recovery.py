"""Journaling requests as they run, and finishing them after a crash.

The System calls `begin` before running a journaled request and `end` after
it; `inspect`, `recover` and `prepare_resume` read the journal back.
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
import warnings
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as encode_json_string
from time import perf_counter
from typing import TYPE_CHECKING, Any

import attrs

from solvi._db.exact import encode as encode_exact
from solvi._db.journal_base import ANSWERED, NO_EXACT, REFUSED
from solvi._db.journal_rows import Item, rows_of
from solvi._db.store_plans import PlanStore, duplicate_request
from solvi._db.writer import Ticket, done_ticket
from solvi._run.scheduler import A_PART, FAILED, OK, Cause, Run
from solvi._run.steps import Program
from solvi._uncancelled import to_the_end
from solvi.errors import (
    DuplicateRequestError,
    MissingRecordError,
    RequestIdTaken,
    SolviError,
    _described,
)
from solvi.journal import (
    CANCELLED,
    Journal,
    JournalEntry,
    JournalError,
    RequestJournal,
    StepState,
)
from solvi.record import canonical_json, to_record_value

if TYPE_CHECKING:
    from solvi.response import Response
    from solvi.storage import Store

Statement = tuple[str, tuple[Any, ...]]

__all__ = [
    "JournalWriter",
    "Leftovers",
    "Recovery",
    "ResumeRefused",
    "begin",
    "check_new_id",
    "close_cancelled",
    "id_taken",
    "inspect",
    "keep",
    "left",
    "notes_after_resume",
    "prepare_resume",
    "recover",
    "state_json",
    "value_forms",
]


def check_new_id(request_id: str, journal: Journal | None, store: Store | None) -> None:
    """Refuse a caller's request id that the journal or the store holds already.

    Raises:
        RequestIdTaken: the journal holds a request of this id.
        DuplicateRequestError: the store holds a response under it.
    """
    if journal is not None and journal.has_request(request_id):
        raise id_taken(request_id, journal)
    if store is None:
        return
    try:
        store.get_record(request_id)
    except MissingRecordError:
        return
    raise duplicate_request(request_id)


def id_taken(request_id: str, journal: Journal) -> RequestIdTaken:
    """The error of a caller's request id that the journal holds already."""
    msg = (
        f"request id {request_id!r} is already in the journal {journal}: give each "
        f"request an id of its own (or leave request_id out), and finish an "
        f"interrupted one with system.resume({request_id!r})"
    )
    return RequestIdTaken(msg, request_id=request_id)


class ResumeRefused(SolviError, ValueError):
    """A journaled request cannot be resumed safely (see the message)."""


@attrs.frozen
class Recovery:
    """An unfinished request whose owner died, now claimed by this process."""

    request_id: str
    input: dict[str, Any]
    settled: tuple[str, ...]
    interrupted_during_execution: tuple[str, ...]
    interrupted_before_start: tuple[str, ...]
    skipped_torn: int
    steps: tuple[StepState, ...]


class JournalWriter:
    """One request's journal entries, handed to the journal as items (see
    `solvi._db.journal_rows.rows_of`).

    A started entry goes out at once, together with everything the request
    recorded before it (its open entry, the settled entries of the steps it
    reads), and the call waits for that commit: so a call never starts before
    its start, and its inputs, are durable. Settled entries wait for the next
    started entry or the close. With a journal that logs its commits, a commit is
    durable once `Journal.log` returns, so nothing is waited for; only an open
    entry committed in the database itself (a caller's id) is, before anything
    else of the request is logged. The methods are safe from several threads.

    On an event loop, the starts of steps that are about to begin together (the
    ready steps a worker hands to other workers) go out in one commit with the
    first of them: each is durable before its call, for one commit instead of
    several.
    """

    __slots__ = ("eager", "early", "journal", "lock", "opened", "pending", "request_id")

    def __init__(
        self, journal: Journal, request_id: str, first: Statement | None = None, *, eager: bool
    ) -> None:
        self.journal = journal
        self.request_id = request_id
        self.pending: list[Item] = []
        self.lock = threading.Lock()
        #: commit each entry as it comes, waiting (the sync drivers: one commit per
        #: entry costs them little, and narrows what a crash can cut)
        self.eager = eager
        #: the open entry's commit: every later commit of the request comes after it
        self.opened: Ticket | None = None
        #: steps whose start went out with another's (`astart`'s `others`): the commit
        self.early: dict[int, tuple[Ticket, list[Item]]] = {}
        if first is not None:
            item = ["o", *first[1]]
            if eager:
                try:
                    journal.log(request_id, [item]).wait()
                except Exception as exc:
                    if journal.duplicate_key(exc):
                        raise id_taken(request_id, journal) from None
                    raise
            elif journal.logs_open(request_id):
                # Logged with the first start (or the close): it is durable before any
                # call starts all the same, for one append fewer.
                self.pending.append(item)
            else:
                self.opened = journal.log(request_id, [item])

    def _open_pending(self) -> Ticket | None:
        """The open entry's commit while the rest of the request must wait for it: it
        goes to the database itself, and the request's other commits to a log (which
        must not hold a start, or a close, of a request that may not be opened)."""
        opened = self.opened
        if opened is None or opened.done or not self.journal.logs_commits:
            return None
        return opened

    def _submit_start(
        self, step: int, part: str, others: Sequence[tuple[int, str]] = ()
    ) -> tuple[Ticket, list[Item]]:
        now = time.time()
        with self.lock:
            carried, self.pending = self.pending, []
        items = [*carried, ["s", 0, step, part, now]]
        items.extend(["s", 0, other, name, now] for other, name in others)
        return self.journal.log(self.request_id, items), carried

    def _put_back(self, carried: list[Item]) -> None:
        """A failed commit took the open and settled entries it carried with it: they go
        with the next commit instead (once, whichever step of a shared commit sees
        it fail first)."""
        with self.lock:
            self.pending[:0] = carried
            carried.clear()

    def start(self, step: int, part: str) -> None:
        """Commit a started entry (with what is pending) and wait for it; raise when
        it cannot be written (the call must not start)."""
        opened = self._open_pending()
        if opened is not None:
            with contextlib.suppress(Exception):
                opened.wait()
            self._check_opened()
        ticket, carried = self._submit_start(step, part)
        try:
            ticket.wait()
        except Exception:
            self._put_back(carried)
            raise
        self._check_opened()

    async def astart(self, step: int, part: str, others: Sequence[tuple[int, str]] = ()) -> None:
        """`start` on an event loop: the loop awaits the writer thread's commit (with a
        journal that logs its commits, there is nothing to await).

        `others` are (step, part) of steps about to begin as well: their starts go in
        the same commit, and their own `astart` then only waits for it (if it
        failed, each commits its start again alone, as if none had been shared).
        """
        early = self.early.pop(step, None) if self.early else None
        if early is not None:
            shared, carried = early
            if not shared.done:
                with contextlib.suppress(Exception):
                    await shared.wait_async()
            if shared.error is None:
                self._check_opened()
                return
            self._put_back(carried)
            others = ()  # they were in the failed commit too, and retry on their own
        elif others and self.early:
            others = [o for o in others if o[0] not in self.early]  # theirs are out
        opened = self.opened
        if opened is not None and not opened.done and self.journal.logs_commits:
            with contextlib.suppress(Exception):
                await opened.wait_async()  # see `_open_pending`
            self._check_opened()
            # The steps in `others` were ready before this wait; their workers may have
            # begun them meanwhile, so each commits its own start.
            others = ()
        ticket, carried = self._submit_start(step, part, others)
        for other, _ in others:
            self.early[other] = (ticket, carried)
        if not ticket.done:
            try:
                await ticket.wait_async()
            except BaseException:
                if ticket.done and ticket.error is not None:
                    self._put_back(carried)
                raise
        elif ticket.error is not None:
            self._put_back(carried)
            raise ticket.error
        if opened is not None:
            self._check_opened()

    def _check_opened(self) -> None:
        """Raise when the request's open entry failed: a call it would start has no
        journaled request to belong to. (Commits are in order, so it is done by now.)"""
        opened = self.opened
        if opened is not None and opened.error is not None:
            if self.journal.duplicate_key(opened.error):
                raise id_taken(self.request_id, self.journal) from None
            msg = f"the request could not be opened in the journal: {opened.error}"
            raise JournalError(msg) from opened.error

    def settled(self, step: int, part: str, value: Any, cause: Cause | None) -> None:
        """Record a settled entry with the value (as JSON, and exactly) or the error.

        Raises:
            RecordError: the value has no JSON form (nothing is recorded).
        """
        if cause is None:
            outcome, message = "ok", None
            data, exact = value_forms(value, part)
        else:
            outcome, data, message, exact = cause.kind, None, cause.message, None
            message.encode()  # UnicodeEncodeError for a text no journal can keep
        item = ["v", 0, step, part, outcome, data, message, exact, time.time()]
        if self.eager:
            self.journal.log(self.request_id, [item]).wait()
            return
        with self.lock:
            self.pending.append(item)

    def _submit(self, items: list[Item], save: Any = None) -> Ticket:
        """Submit the request's items, and `save` with them in one transaction: to the
        database itself with a save or while the open entry is on its way there;
        without the items if the open failed (the id then belongs to another request)."""
        opened = self.opened
        if opened is not None and opened.done and opened.error is not None:
            items = []
        direct = save is not None or self._open_pending() is not None
        if not direct:
            return self.journal.log(self.request_id, items) if items else done_ticket()
        statements = rows_of(self.request_id, items)
        unit = (*([] if save is None else [save]), *statements)
        return self.journal.submit(unit, direct=True) if unit else done_ticket()

    def flush(self) -> Ticket | None:
        """Submit what is pending (None when nothing is)."""
        with self.lock:
            items, self.pending = self.pending, []
        return self._submit(items) if items else None

    def close(
        self, response_hash: str | None, *, save: Any = None, closed_as: str = ANSWERED
    ) -> Ticket:
        """Submit the closed entry with what is pending, and `save` (a store plan
        maker) in the same transaction when the store shares the journal's database."""
        close = ["c", time.time(), response_hash, closed_as, self.request_id]
        with self.lock:
            items, self.pending = [*self.pending, close], []
        self.journal.done_here(self.request_id)
        return self._submit(items, save)


def value_forms(value: Any, part: str) -> tuple[str, str | None]:
    """A settled value's canonical JSON (as `canonical_json` of its record form) and
    its exact form: None when the JSON is exact already, `NO_EXACT` when the value
    has none (its step is then not resumable)."""
    kind = type(value)
    if kind is int:
        return int.__repr__(value), None
    if kind is str:
        return encode_json_string(value), None
    if value is None:
        return "null", None
    if kind is bool:
        return ("true" if value else "false"), None
    data = canonical_json(to_record_value(value, part))
    exact = encode_exact(value)
    if exact is None:
        return data, NO_EXACT
    return data, (None if exact == data else exact)


#: input values whose record form is the value itself
_AS_IS = frozenset({str, int, bool, type(None)})


def state_json(state: dict[str, Any]) -> str:
    """A request's input as the journal keeps (and hashes) it: its exact form when it
    has one (so a resume gets back tuples and dates), else its record form."""
    for value in state.values():
        kind = type(value)
        if kind not in _AS_IS and not (kind is float and math.isfinite(value)):
            break
    else:
        return canonical_json(state)  # plain scalars only: exact as it is
    exact = encode_exact(state)
    if exact is not None:
        return exact
    return canonical_json({k: to_record_value(v, f"input {k}") for k, v in state.items()})


def begin(
    journal: Journal,
    run: Run,
    request_id: str,
    catalog: str,
    catalog_version: str,
    *,
    eager: bool,
) -> None:
    """Attach the request's writer. Its open entry is committed before any call
    starts: now when `eager`, else with the first started entry."""
    first = journal.open_statement(
        request_id,
        catalog=catalog,
        catalog_version=catalog_version,
        state_json=state_json(run.state),
        plan=run.program.step_names,
        early_exit=run.early_exit,
    )
    run.journal = JournalWriter(journal, request_id, first, eager=eager)
    # The sync fast path calls a node without journaling it; the async one
    # (`plain`) journals its start and outcome as the general path does, so it stays.
    run.bare = False
    journal.running_here(request_id)


def left(journal: Journal | None, run: Run) -> None:
    """A request whose run stopped on what is not its caller's doing (a KeyboardInterrupt
    in a part or a hook, a bug): it stays open, for `recover` once this process is gone,
    and is no longer shown as running meanwhile."""
    if journal is not None and run.request_id is not None:
        journal.done_here(run.request_id)


async def close_cancelled(run: Run) -> None:
    """Close a request its caller cancelled, before the cancellation goes on: no one
    may resume what its caller gave up. Its steps keep what they were."""
    try:
        await to_the_end(run.journal.close(None, closed_as=CANCELLED).wait_async)
    except Exception as failure:
        warnings.warn(
            f"cancelled request {run.request_id!r} could not be closed in the journal "
            f"({_described(failure)}); recover() will list it once this "
            f"process has stopped",
            RuntimeWarning,
            stacklevel=3,
        )


def keep(
    response: Response, run: Run, store: Store | None, *, shared_db: bool, resumed: bool
) -> None:
    """Store a response and close its journaled request (blocking).

    Sharing one database, the save and the close are one transaction. Apart, the
    request's entries are committed first, then the response saved, then the
    request closed: a crash in between leaves the request open with every step
    settled, and its resume finds the response stored and only closes it.

    Raises:
        DuplicateRequestError: a response is already stored under the request's id
            (a resume takes the stored one instead).
    """
    writer, request_id = run.journal, run.request_id
    if store is not None and request_id is not None:
        record = response.record
        if writer is not None and shared_db and isinstance(store, PlanStore):
            save = functools.partial(store.save_plan, record, request_id)
            try:
                writer.close(record["hash"], save=save).wait()
            except DuplicateRequestError:
                _stored_already(store, record, writer, request_id, resumed=resumed)
            return
        if writer is not None:
            flushed = writer.flush()
            if flushed is not None:
                flushed.wait()
        try:
            store.save_response(record, request_id=request_id)
        except DuplicateRequestError:
            _stored_already(store, record, writer, request_id, resumed=resumed)
            return
        if writer is not None:
            writer.close(record["hash"]).wait()
    elif writer is not None:
        writer.close(None).wait()


def _stored_already(
    store: Store,
    record: Mapping[str, Any],
    writer: JournalWriter | None,
    request_id: str,
    *,
    resumed: bool,
) -> None:
    """The store holds a response under the request's id. A resume whose crash came
    between saving it and closing the request finds its own (the same hash): it only
    closes the request. Any other response is another request's: the journaled request
    is closed as refused, so that no `recover` claims it again, and the error raised.

    Raises:
        DuplicateRequestError: the stored response is not this request's.
    """
    if resumed and store.get_record(request_id).get("hash") == record["hash"]:
        if writer is not None:
            writer.close(record["hash"]).wait()
        return
    if writer is not None:
        writer.close(None, closed_as=REFUSED).wait()
    raise duplicate_request(request_id)


def _recovery(rj: RequestJournal) -> Recovery:
    steps = rj.steps()
    return Recovery(
        request_id=rj.request_id,
        input=rj.input,
        settled=tuple(s.part for s in steps if s.state == "settled"),
        interrupted_during_execution=tuple(
            s.part for s in steps if s.state == "interrupted during execution"
        ),
        interrupted_before_start=tuple(
            s.part for s in steps if s.state == "interrupted before start"
        ),
        skipped_torn=rj.skipped_torn,
        steps=steps,
    )


def recover(journal: Journal, catalog: str, catalog_version: str) -> list[Recovery]:
    """Claim every unfinished request of `catalog` at `catalog_version` whose owner is
    dead (first bringing the database up to every process's commits, dead processes'
    logs included).

    A request of another version is left unclaimed: this System could only refuse to
    resume it, and a claim would keep a System of its own version (one still running
    the old catalog in a rolling deploy, say) from taking it.
    """
    journal.catch_up()
    out = []
    for rj in journal.unfinished(catalog):
        if rj.owner_alive or rj.catalog_version != catalog_version:
            continue
        if journal.claim(rj.request_id):
            out.append(_recovery(rj))  # as found: what the dead owner left
    return out


def inspect(journal: Journal, catalog: str) -> list[Recovery]:
    """Every unfinished request of `catalog`, read only (claims nothing)."""
    return [_recovery(rj) for rj in journal.unfinished(catalog)]


def prepare_resume(
    journal: Journal,
    request_id: str,
    program_for: Any,
    catalog_version: str,
    timeout: float | None,
) -> tuple[Run, Leftovers]:
    """A Run holding what the journal settled, ready for a driver to finish, and what
    the crash left unfinished (for `notes_after_resume`).

    Raises:
        ResumeRefused: the request is closed, owned by a live process, or its
            catalog version, input or plan differ from this System's.
    """
    try:
        rj = journal.load(request_id)
    except JournalError as exc:
        raise ResumeRefused(str(exc)) from exc
    if rj.cancelled:
        msg = (
            f"request {request_id!r} was cancelled by its caller, so it is closed and is "
            f"never resumed; ask again to decide it"
        )
        raise ResumeRefused(msg)
    if rj.closed:
        msg = f"request {request_id!r} is already closed; there is nothing to resume"
        raise ResumeRefused(msg)
    if rj.catalog_version != catalog_version:
        msg = (
            f"request {request_id!r} was journaled by catalog version {rj.catalog_version}, "
            f"this System is version {catalog_version}; resume it with the catalog that "
            f"started it"
        )
        raise ResumeRefused(msg)
    if not rj.input_intact:
        msg = f"request {request_id!r}: the journaled input does not match its hash"
        raise ResumeRefused(msg)
    program: Program = program_for(rj.input)
    if program.flow.steps != rj.plan:
        msg = (
            f"request {request_id!r} was planned as {list(rj.plan)}, now "
            f"{list(program.flow.steps)}; the plan changed, so it cannot be resumed"
        )
        raise ResumeRefused(msg)
    # Claim last, so that a refusal above leaves the request to others.
    if rj.owner != journal.owner and not journal.claim(request_id):
        msg = (
            f"request {request_id!r} belongs to a live process ({rj.owner}); only a dead "
            f"owner's requests can be resumed"
        )
        raise ResumeRefused(msg)
    run = Run(
        program, dict(rj.input), early_exit=rj.early_exit, timeout=timeout, started=perf_counter()
    )
    leftovers = _prefill(run, rj)
    run.journal = JournalWriter(journal, request_id, eager=True)
    run.bare = run.plain = False
    run.resumed = True
    journal.running_here(request_id)
    return run, leftovers


@attrs.frozen
class Leftovers:
    """What a crash left unfinished: the planned steps it left before their start, and
    the idempotent steps it interrupted (each with its note's place in `Run.notes`),
    whose notes say whether the resume ran them once it is known."""

    untouched: list[str]
    reruns: list[tuple[int, str, str]]


def _prefill(run: Run, rj: RequestJournal) -> Leftovers:
    nodes = run.program.nodes
    settled: dict[str, JournalEntry] = {}
    started = rj.started_parts()
    began: dict[str, float] = {}
    for entry in rj.entries:
        if entry.kind == "settled":
            settled[entry.part] = entry
        elif entry.kind == "started":
            began[entry.part] = entry.at
    # A step settled before the crash is shown at the resume's start, taking as long as
    # the journal's clock says it took.
    t = run.started
    reruns: list[tuple[int, str, str]] = []
    for node in nodes:
        for k, part in enumerate(node.parts):
            if run.status[node.index] in (OK, FAILED):
                break
            outcome = settled.get(part.name)
            if outcome is not None and outcome.resumable:
                cause = None
                if outcome.outcome != "ok":
                    kind = outcome.outcome or "error"
                    cause = Cause(kind, part.name, node.fact, outcome.message or "")
                took = max(0.0, outcome.at - began.get(part.name, outcome.at))
                done = run.called(node, k, t, t + took, outcome.value, cause)
                if not done:
                    run.resume_from[node.index] = k + 1
                continue
            if outcome is not None or part.name in started:
                what = (
                    "was interrupted during execution"
                    if outcome is None
                    else "settled with a value that has no exact form"
                )
                if part.idempotent:
                    reruns.append((len(run.notes), part.name, what))
                    run.notes.append(f"{part.name} {what}; re-run (idempotent)")
                    run.resume_from[node.index] = k
                else:
                    run.notes.append(
                        f"{part.name} {what}; not re-run (declare idempotent=True to allow it)"
                    )
                    message = f"{what.removeprefix('was ')}; not re-run (not idempotent)"
                    done = run.called(
                        node, k, t, t, None, Cause("interrupted", part.name, node.fact, message)
                    )
                    if not done:
                        run.resume_from[node.index] = k + 1
                    continue
            break
    untouched = [p for p in run.program.flow.steps if p not in settled and p not in started]
    return Leftovers(untouched, reruns)


def notes_after_resume(run: Run, leftovers: Leftovers) -> None:
    """Say, for each step the crash left unfinished, whether the resume ran it."""
    ran = {a[A_PART] for a in run.attempts}
    for at, part, what in leftovers.reruns:
        if part not in ran:
            reason = run.skip_reasons.get(part)
            why = "" if reason is None else f" ({reason})"
            run.notes[at] = f"{part} {what}; not re-run{why}"
    for part in leftovers.untouched:
        if part in ran:
            run.notes.append(f"{part} was interrupted before start; run on resume")
        elif part in run.skip_reasons:
            run.notes.append(
                f"{part} was interrupted before start; not run on resume ({run.skip_reasons[part]})"
            )
