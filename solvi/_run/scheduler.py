"""The scheduler: what one request has done, what it may still do, and what it means.

Plain logic, shared by every driver (`ask` sequential, `ask` with worker
threads, `aask`): which nodes are wanted, what a failed hard check settles,
how answers follow from what ran. It knows nothing of threads or event loops,
which is why records cannot drift between the drivers.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Generator, Iterator, Sequence
from time import perf_counter
from typing import Any, Final, Literal

import attrs

from solvi._run.steps import (
    NOT_JOURNALED,
    NOT_STARTED,
    Cause,
    Drive,
    GivenUp,
    Node,
    Program,
    cause_of,
    check_verdict,
    waiting_counts,
)
from solvi.errors import RequestIdTaken, _described
from solvi.hooks import HookTable, Outcome, RequestEvent, StepEvent
from solvi.order import OrderLine, OrderModel, OrderPolicy
from solvi.question import Fail
from solvi.record import HUGE_INT as HUGE
from solvi.record import NEGATIVE_HUGE_INT as LOW
from solvi.record import PLAIN_TYPES as _PLAIN
from solvi.record import json_problem

__all__ = [
    "CALL",
    "PRIOR_CALLS",
    "START",
    "Cause",
    "Drive",
    "PriorCall",
    "Run",
    "attempts",
    "by_declaration",
    "drives",
    "journal_refused",
    "learned_batches",
    "order_policy",
    "readiness",
    "release",
    "rest_after_learned",
    "take_prior_calls",
]

PENDING, OK, FAILED, NOT_RUN = 0, 1, 2, 3


#: One call of one part, kept as a plain tuple because one is made per step on
#: the hot path: (node index, part name, fact, start, end, outcome, message),
#: outcome "ok" | "timeout" | "error" | "interrupted". Read with the A_* indices.
Attempt = tuple[int, str, str, float, float, str, "str | None"]
A_NODE: Final = 0
A_PART: Final = 1
A_FACT: Final = 2
A_START: Final = 3
A_END: Final = 4
A_OUTCOME: Final = 5
A_MESSAGE: Final = 6


#: a call made before the request was planned, to make its input (an extract of
#: `ask_text`): part, fact, start, end (`perf_counter` seconds), outcome, message
PriorCall = tuple[str, str, float, float, Outcome, str | None]


#: the calls that made the input of the request about to start (a text request's
#: extracts), for its hooks: set by `ask_text` and `aask_text` only when some hook will
#: hear the request, and taken once when it starts (`take_prior_calls`), so a request
#: that one of its parts makes does not hear of them
PRIOR_CALLS: contextvars.ContextVar[tuple[PriorCall, ...]] = contextvars.ContextVar(
    "solvi_prior_calls", default=()
)


def take_prior_calls() -> tuple[PriorCall, ...]:
    """The calls that made the input of the request now starting (none for another)."""
    calls = PRIOR_CALLS.get()
    if calls:
        PRIOR_CALLS.set(())
    return calls


class Run:
    """The mutable state of one request; owned by one driver, never shared."""

    __slots__ = (
        "attempts",
        "bare",
        "causes",
        "check_reasons",
        "early_exit",
        "evaluated",
        "failures",
        "found",
        "given_up",
        "hook_catalog",
        "hook_failures",
        "hook_start",
        "hook_told_end",
        "hooks",
        "input_forms",
        "journal",
        "notes",
        "open_mask",
        "order_lines",
        "plain",
        "prices",
        "program",
        "request_id",
        "resume_from",
        "resumed",
        "row",
        "settled",
        "skip_reasons",
        "started",
        "state",
        "status",
        "timeout",
        "vals",
    )

    def __init__(
        self,
        program: Program,
        state: dict[str, Any],
        *,
        early_exit: bool,
        timeout: float | None,
        started: float,
        prices: Any = None,
        found: bool = False,
    ) -> None:
        self.program = program
        self.state = state
        #: the record forms of input values that are not plain scalars, taken when the
        #: request began (None: every value is a plain scalar)
        self.input_forms: dict[str, Any] | None = None
        self.vals: dict[str, Any] = dict(state)
        self.status = [PENDING] * len(program.nodes)
        self.causes: dict[int, Cause] = {}
        self.attempts: list[Attempt] = []
        #: attempts that timed out or raised (so counting them is skipped when 0)
        self.failures = 0
        self.skip_reasons: dict[str, str] = {}
        #: check fact -> the reason its `Fail` gave
        self.check_reasons: dict[str, str] = {}
        self.early_exit = early_exit
        self.timeout = timeout
        self.started = started
        self.prices = prices
        #: the System's count of timed-out sync calls still running (None: unbounded)
        self.given_up: GivenUp | None = None
        #: the System's hook table (None: no hooks, nothing to call)
        self.hooks: HookTable | None = None
        self.hook_catalog = ""
        #: what the hooks raised, reported once the request is over (`report_failures`)
        self.hook_failures: list[str] = []
        #: whether the hooks have heard `request_finished` (it is told once)
        self.hook_told_end = False
        #: guards="found": a learned order settles a question by the first failing
        #: check it evaluated, not the first declared
        self.found = found
        #: hard-check nodes in the order a learned order evaluated them
        self.evaluated: list[int] = []
        self.order_lines: list[OrderLine] = []
        self.row: dict[str, float] | None = None
        #: the request's journal writer, when the System keeps one
        self.journal: Any = None
        #: the request's id, when a journal or a store needs one
        self.request_id: str | None = None
        #: on resume: node -> index of the first producer still to try
        self.resume_from: dict[int, int] = {}
        #: on resume: what happened to interrupted steps
        self.notes: list[str] = []
        #: a resumed request: some steps settled before, the rest run now
        self.resumed = False
        #: no journal, no hooks and no resume: the sequential driver's fast path
        #: records a call itself, telling no one (else `_told_start` tells them)
        self.bare = True
        #: no resume and no request timeout: untimed async nodes may take the async
        #: fast path (with a journal or hooks too: the worker journals the call and
        #: tells the hooks around it)
        self.plain = timeout is None
        self.open_mask = program.all_questions_mask
        #: question index -> (deciding hard-check node, "failed" | "unevaluated")
        self.settled: dict[int, tuple[int, str]] = {}

    # -- hooks ---------------------------------------------------------------

    def attach_hooks(self, hooks: HookTable, catalog: str) -> None:
        """Tell `hooks` of every call from now on."""
        self.hooks = hooks
        self.hook_catalog = catalog
        self.hook_start = self.started
        self.bare = False

    def request_began(self, prior: Sequence[PriorCall] = ()) -> None:
        """Tell the hooks the request begins, then of the calls that made its input
        before it was planned (`ask_text`'s extracts), with the times they ran. The
        request is then told as begun when the first of them began, so that every
        step it is told of lies inside it (call only when `hooks` is set)."""
        hooks = self.hooks
        assert hooks is not None
        if prior:
            self.hook_start = min(self.started, *(call[2] for call in prior))
        rid, catalog = self.request_id, self.hook_catalog
        failed = self.hook_failures
        hooks.emit("request_started", RequestEvent(rid, catalog, self.hook_start), failed)
        for part, fact, start, end, outcome, message in prior:
            if hooks.step_started:
                hooks.emit("step_started", StepEvent(rid, catalog, part, fact, start), failed)
            if hooks.step_finished:
                event = StepEvent(rid, catalog, part, fact, start, outcome, end - start, message)
                hooks.emit("step_finished", event, failed)

    def step_started(self, node: Node, tried: int, start: float) -> None:
        """Tell the hooks a call begins (call only when `hooks` is set)."""
        assert self.hooks is not None
        calls = self.hooks.step_started
        if not calls:
            return  # no event made that no one hears
        event = StepEvent(
            self.request_id, self.hook_catalog, node.parts[tried].name, node.fact, start
        )
        for call in calls:
            call(event, self.hook_failures)

    def step_ended(
        self,
        node: Node,
        tried: int,
        start: float,
        end: float,
        outcome: Outcome,
        message: str | None,
    ) -> None:
        """Tell the hooks a call ended (call only when `hooks` is set)."""
        assert self.hooks is not None
        calls = self.hooks.step_finished
        if not calls:
            return
        part = node.parts[tried].name
        event = StepEvent(
            self.request_id,
            self.hook_catalog,
            part,
            node.fact,
            start,
            outcome,
            end - start,
            message,
        )
        for call in calls:
            call(event, self.hook_failures)

    def request_ended(
        self, outcome: Literal["ok", "cancelled", "interrupted"], answers: Any = None
    ) -> None:
        """Tell the hooks, once, that the request has its response (`answers`, by
        question), kept and closed, was cancelled, or was interrupted (call only when
        `hooks` is set)."""
        assert self.hooks is not None
        if self.hook_told_end:
            return
        self.hook_told_end = True
        event = RequestEvent(
            self.request_id,
            self.hook_catalog,
            self.hook_start,
            outcome,
            perf_counter() - self.hook_start,
            () if answers is None else tuple((q, a.status) for q, a in answers.items()),
        )
        self.hooks.emit("request_finished", event, self.hook_failures)

    # -- the fast path: one producer, called directly ------------------------

    def fast_async(self, node: Node) -> bool:
        """Whether the async driver may call (and await) the node without the general path."""
        return node.fast_path and self.plain and not self.causes

    def fast_ok(self, node: Node, start: float, end: float, value: Any) -> None:
        """Record a fast-path call that returned (the sequential driver inlines the case
        of a plain value of a node that is not a check)."""
        if node.is_check:
            if type(value) is not bool:  # a Fail, or a value to read as true or false
                self.called(node, 0, start, end, value, None)
                return
        elif (kind := type(value)) not in _PLAIN or (kind is int and not LOW < value < HUGE):
            problem = json_problem(value, node.fact)
            if problem is not None:
                cause = Cause("error", node.first_part, node.fact, problem)
                self.called(node, 0, start, end, None, cause)
                return
        self.attempts.append((node.index, node.first_part, node.fact, start, end, "ok", None))
        self.vals[node.fact] = self.check_value(node.fact, value) if node.is_check else value
        self.status[node.index] = OK

    def fast_failed(self, node: Node, start: float, exc: BaseException) -> None:
        """Record a fast-path call that raised (or timed out)."""
        self.called(node, 0, start, perf_counter(), None, cause_of(exc, node.first_part, node.fact))

    # -- before a node runs ------------------------------------------------

    def wanted(self, node: Node) -> bool:
        """Whether some question that is still open needs this node."""
        return bool(node.qmask & self.open_mask)

    def missing_input(self, node: Node) -> Cause | None:
        """The cause of the first input that upstream failures left missing, if any."""
        if not self.causes:
            return None
        for d in node.deps:
            if self.status[d] == FAILED:
                return self.causes[d]
        return None

    def producers_to_try(self, node: Node) -> range:
        """Which of a node's producers to try, in order: none when an input is
        missing (the node is blocked here), else from the first not yet tried
        before a resume."""
        cause = self.missing_input(node)
        if cause is not None:
            self.block(node, cause)
            return range(0)
        first = self.resume_from.get(node.index, 0) if self.resume_from else 0
        return range(first, len(node.parts))

    # -- after a call ---------------------------------------------------------

    def starting(self, node: Node, tried: int) -> Cause | None:
        """Journal that a call begins and wait until that is durable; a Cause when it
        cannot be written (the call must not start)."""
        part = node.parts[tried]
        try:
            self.journal.start(node.index, part.name)
        except RequestIdTaken:
            raise  # the request is another's: nothing of it may run
        except Exception as exc:
            return journal_refused(part.name, node.fact, exc)
        return None

    def called(
        self, node: Node, tried: int, start: float, end: float, value: Any, cause: Cause | None
    ) -> bool:
        """Note one call of the node's `tried`-th producer; True when the node is done."""
        part = node.parts[tried]
        if cause is None:
            # A check's value is kept as a verdict (True, False or a Fail), any other
            # as it is when it has a JSON form: the journal, the record and a resume
            # then all hold the same thing.
            if node.is_check:
                value, problem = check_verdict(value)
            elif (kind := type(value)) not in _PLAIN or (kind is int and not LOW < value < HUGE):
                problem = json_problem(value, node.fact)
            else:
                problem = None
            if problem is not None:
                cause = Cause("error", part.name, node.fact, problem)
                value = None
        if self.journal is not None:
            try:
                self.journal.settled(node.index, part.name, value, cause)
            except Exception as exc:
                message = NOT_JOURNALED + _described(exc)
                cause = Cause("error", part.name, node.fact, message)
                # Keep the journal in step with the record: the call failed. If even
                # that cannot be written, the cause above already records it.
                with contextlib.suppress(Exception):
                    self.journal.settled(node.index, part.name, None, cause)
        if self.hooks is not None:
            if cause is None:
                self.step_ended(node, tried, start, end, "ok", None)
            else:
                self.step_ended(node, tried, start, end, cause.kind, cause.message)  # type: ignore[arg-type]  # a Cause's kind is an outcome
        if cause is None:
            self.attempts.append((node.index, part.name, node.fact, start, end, "ok", None))
            self.succeed(node, value, tried)
            return True
        self.failures += 1
        self.attempts.append(
            (node.index, part.name, node.fact, start, end, cause.kind, cause.message)
        )
        if tried + 1 == len(node.parts):
            self.fail(node, cause)
            return True
        return False

    def discard(self, node: Node) -> None:
        """Forget a node that ran speculatively but turned out unnecessary."""
        self.vals.pop(node.fact, None)
        self.check_reasons.pop(node.fact, None)
        self.causes.pop(node.index, None)
        self.attempts = [a for a in self.attempts if a[A_NODE] != node.index]
        self.skip_unneeded(node)

    # -- after a node ran --------------------------------------------------

    def succeed(self, node: Node, value: Any, tried: int) -> None:
        """Store a node's value; the producers after the `tried`-th are not needed."""
        self.vals[node.fact] = self.check_value(node.fact, value) if node.is_check else value
        self.status[node.index] = OK
        if tried + 1 < len(node.parts):
            winner = node.parts[tried].name
            for p in node.parts[tried + 1 :]:
                self.skip_reasons[p.name] = f"not needed: {node.fact} came from {winner}"

    def check_value(self, fact: str, value: bool | Fail) -> bool:
        """A check's verdict as a bool, keeping the reason a `Fail` gives."""
        if type(value) is Fail:
            self.check_reasons[fact] = value.reason
            return False
        return value is True

    def fail(self, node: Node, cause: Cause) -> None:
        """Mark a node's fact missing: every producer failed, or an input was missing."""
        self.status[node.index] = FAILED
        self.causes[node.index] = cause

    def block(self, node: Node, cause: Cause) -> None:
        """A node could not start because an input is missing."""
        for p in node.parts:
            self.skip_reasons[p.name] = f"inputs missing: {cause.fact} ({cause.describe()})"
        self.fail(node, cause)

    def skip_unneeded(self, node: Node) -> None:
        """A node no open question needs: say which hard check made it unnecessary."""
        self.status[node.index] = NOT_RUN
        reason = self.unneeded_reason(node)
        for p in node.parts:
            self.skip_reasons[p.name] = reason

    def still_to_run(self, indices: Sequence[int], filter_wanted: bool) -> list[int]:
        """The nodes of `indices` a driver must still run.

        Nodes settled before a resume are left out; with `filter_wanted`, so are
        the nodes no open question needs, which are skipped here and now.
        """
        nodes = self.program.nodes
        status = self.status
        todo: list[int] = []
        for index in indices:
            if status[index] != PENDING:
                continue
            node = nodes[index]
            if filter_wanted and not node.qmask & self.open_mask:
                self.skip_unneeded(node)
            else:
                todo.append(index)
        return todo

    def unneeded_reason(self, node: Node) -> str:
        """Why a node is no longer needed: the check that settled its first question."""
        mask = node.qmask
        q = 0
        while mask:
            if mask & 1 and q in self.settled:
                check_node, how = self.settled[q]
                name = self.program.nodes[check_node].parts[0].name
                if how == "failed":
                    return f"not needed: hard check {name} failed"
                return f"not needed: hard check {name} could not be evaluated"
            mask >>= 1
            q += 1
        return "not needed"

    # -- hard checks -------------------------------------------------------

    def settle(self) -> None:
        """Settle the questions whose first-declared non-passing hard check is known."""
        nodes = self.program.nodes
        status = self.status
        vals = self.vals
        found = self.found and self.evaluated
        for slot in self.program.questions:
            if slot.index in self.settled or slot.blocked is not None:
                continue
            if found:
                checks = [g for g in self.evaluated if g in slot.governing]
            else:
                checks = list(slot.governing)
            for g in checks:
                state = status[g]
                if state == PENDING or state == NOT_RUN:
                    break  # an earlier-declared check is still unknown: wait
                if state == OK:
                    if vals[nodes[g].fact]:
                        continue
                    self.settled[slot.index] = (g, "failed")
                else:
                    self.settled[slot.index] = (g, "unevaluated")
                self.open_mask &= ~(1 << slot.index)
                break

    def drop_unneeded(self) -> None:
        """After speculation: forget every later-phase node no open question needs."""
        for node in self.program.nodes:
            if node.phase == 1 and not node.qmask & self.open_mask:
                self.discard(node)


#: What `attempts` asks its driver to do: journal a call's start (the driver answers
#: None, or the Cause that kept it from being written), or call a part (the driver
#: answers the value, or the Cause of its failure).
START, CALL = 0, 1
Request = tuple[int, Any]


def attempts(run: Run, node: Node) -> Generator[Request, Any, None]:
    """Try a node's producers in order until one succeeds: the one place the order of
    a call's journaled start, its hooks, the call and its outcome is written. The
    drivers only carry out what it yields (sync drivers directly, `aask` awaiting)."""
    vals = run.vals
    for tried in run.producers_to_try(node):
        part = node.parts[tried]
        start = perf_counter()
        if run.journal is not None:
            refused = yield START, tried
            if refused is not None:
                if run.called(node, tried, start, perf_counter(), None, refused):
                    return
                continue
        args = tuple(vals[i] for i in part.inputs)
        if run.hooks is not None:
            run.step_started(node, tried, start)
            start = perf_counter()  # the hooks' time is theirs, not the part's
        value, cause = yield CALL, (part, args, start)
        if run.called(node, tried, start, perf_counter(), value, cause):
            return


def order_policy(order: object, default: str, model: OrderModel) -> OrderPolicy | None:
    """What ranks a request's hard checks: None for the default order, `model` for
    ``"learned"``, or an order object of one's own; `order` None means `default`.

    Raises:
        TypeError: `order` is none of these.
    """
    if order is None:
        order = default
    if order == "default":
        return None
    if order == "learned":
        return model
    if isinstance(order, OrderPolicy):
        return order
    msg = (
        f'order must be "default", "learned" or an object with p_fail(check, row) and '
        f"row(vals, init_keys), got {order!r}"
    )
    raise TypeError(msg)


def by_declaration(policy: OrderPolicy | None, model: OrderModel, guards: str) -> bool:
    """Whether the learned order takes the hard checks in declaration order: under
    declared guards that order is the cheapest on every request (see
    `learned_batches`); an order object given to a request is ranked by its own
    probabilities, for experiments."""
    return policy is model and guards == "declared"


def drives(
    run: Run,
    order: Any = None,
    cost_of: Any = None,
    *,
    by_declaration: bool = False,
    speculate: bool = False,
) -> Iterator[Drive]:
    """The drives of one request, in order: the one place phases, early exit, the
    learned order and speculation are decided, for every driver.

    Each drive must be run to the end before the next is asked for: what comes next
    depends on what the hard checks returned.
    """
    program = run.program
    phase0, phase1 = program.phases
    if order is not None and run.early_exit:
        for batch in learned_batches(run, order, cost_of, by_declaration=by_declaration):
            yield Drive(batch)
        yield Drive(rest_after_learned(run), filter_wanted=True)
        return
    if speculate and run.early_exit:
        yield Drive(phase0 + phase1, speculative=True)
        run.settle()
        run.drop_unneeded()
        return
    whole0, whole1, wanted1 = program.phase_drives
    yield whole0
    if run.early_exit:
        run.settle()
        yield wanted1 if run.open_mask != program.all_questions_mask else whole1
        if run.resumed:
            # A speculative run may have journaled steps that its failed hard checks
            # made unnecessary: forgotten here, as that run would have forgotten them.
            run.drop_unneeded()
    else:
        yield whole1
        run.settle()


def readiness(run: Run, drive: Drive) -> tuple[list[int], Sequence[int], int]:
    """What a drive waits for: per node, how many of the drive's nodes it still waits
    for (`NOT_IN_DRIVE` for a node outside it); the nodes ready now; how many nodes the
    drive runs (0: nothing to do)."""
    program = run.program
    if drive.phase is not None and not run.resumed and not drive.filter_wanted:
        # A fresh request running a whole phase: worked out at compile time.
        if not drive.indices:
            return [], (), 0
        waiting = list(program.phase_waiting[drive.phase])
        return waiting, program.phase_ready[drive.phase], len(drive.indices)
    todo = run.still_to_run(drive.indices, drive.filter_wanted)
    if not todo:
        return [], (), 0
    if drive.phase is not None and len(todo) == len(drive.indices):
        waiting = list(program.phase_waiting[drive.phase])
    else:
        waiting = waiting_counts(program.nodes, todo)
    return waiting, [i for i in todo if waiting[i] == 0], len(todo)


def release(waiting: list[int], dependents: tuple[int, ...]) -> list[int]:
    """Count a finished node off its dependents; those of the drive now ready (a
    dependent outside the drive starts at NOT_IN_DRIVE and never gets there)."""
    ready = []
    for d in dependents:
        left = waiting[d] - 1
        waiting[d] = left
        if left == 0:
            ready.append(d)
    return ready


def journal_refused(part: str, fact: str, exc: Exception) -> Cause:
    """The Cause of a call that did not start because its start could not be journaled."""
    return Cause("error", part, fact, NOT_STARTED + _described(exc))


#: The smallest evaluation cost a score divides by, in ms.
MIN_COST_MS = 0.001


def _ancestors(nodes: tuple[Node, ...], index: int, status: list[int]) -> list[int]:
    """The pending nodes `index` needs, itself included, in flow order."""
    seen: set[int] = set()
    stack = [index]
    while stack:
        i = stack.pop()
        if i in seen or status[i] != PENDING:
            continue
        seen.add(i)
        stack.extend(nodes[i].deps)
    return sorted(seen)


def learned_batches(
    run: Run, policy: Any, cost_of: Any, *, by_declaration: bool = False
) -> Iterator[tuple[int, ...]]:
    """The batches of nodes a learned order runs, one hard check (and what it reads) each.

    The driver runs each batch before asking for the next. Hard checks are
    taken highest score first, ``P(fail) x cost of what its failure would skip /
    cost of evaluating it``, except that once a check has failed, the
    earlier-declared checks of the questions it governs come next (under
    declared guards the first declared failing check decides, so they must run
    whatever they return), and a check reading a pending check's fact waits
    for it. It stops when no pending hard check governs an open question.

    With `by_declaration`, checks are taken in declaration order instead (the
    score is still computed, for `explain_order`). Under declared guards that
    order is the cheapest on every request: each check it evaluates must be
    evaluated by any order that settles the same questions.
    """
    program = run.program
    nodes = program.nodes
    status = run.status
    features = [
        n.index for n in nodes if n.fact in getattr(policy, "features", ()) and n.phase == 0
    ]
    if features:
        batch: set[int] = set()
        for f in features:
            batch.update(_ancestors(nodes, f, status))
        yield tuple(sorted(batch))
    run.row = policy.row(run.vals, run.state.keys())
    checks = [n.index for n in nodes if n.is_hard_check and n.phase == 0]
    names = {q.index: q.name for q in program.questions}
    while True:
        run.settle()
        open_mask = run.open_mask
        candidates = [c for c in checks if status[c] == PENDING and nodes[c].qmask & open_mask]
        if not candidates:
            return
        unblocking: dict[int, list[str]] = {}
        if not run.found:
            for slot in program.questions:
                if not open_mask & (1 << slot.index):
                    continue
                for position, g in enumerate(slot.governing):
                    if status[g] != PENDING and _fails(run, g):
                        for earlier in slot.governing[:position]:
                            if status[earlier] == PENDING:
                                unblocking.setdefault(earlier, []).append(slot.name)
                                break
                        break
        pending = [i for i in range(len(nodes)) if status[i] == PENDING]
        scored: list[tuple[float, int, OrderLine]] = []
        for c in candidates:
            own = _ancestors(nodes, c, status)
            costs = sum(cost_of(nodes[i]) for i in own)
            own_set = set(own)
            mask = nodes[c].qmask
            saves = 0.0
            for i in pending:
                if i in own_set:
                    continue
                live = nodes[i].qmask & open_mask
                if live and not live & ~mask:
                    saves += cost_of(nodes[i])
            p = float(policy.p_fail(nodes[c].parts[0].name, run.row))
            score = p * saves / max(costs, MIN_COST_MS)
            line = OrderLine(
                nodes[c].parts[0].name,
                p,
                saves,
                costs,
                score,
                tuple(unblocking.get(c, ())),
                "",
                (),
            )
            scored.append((score, c, line))
        if by_declaration:
            chosen = min(candidates, key=lambda c: nodes[c].parts[0].index)
            line = next(entry for _, c, entry in scored if c == chosen)
        elif unblocking:
            chosen = min(unblocking, key=lambda c: nodes[c].parts[0].index)
            line = next(entry for _, c, entry in scored if c == chosen)
        else:
            _, chosen, line = max(scored, key=lambda t: (t[0], -t[1]))
        # A check that reads another pending one's fact cannot go first: that one runs
        # in its batch, so it is the one evaluated (and settles what it fails).
        first = next((a for a in _ancestors(nodes, chosen, status) if a in candidates), chosen)
        if first != chosen:
            chosen, line = first, next(entry for _, c, entry in scored if c == first)
        before = set(run.settled)
        yield tuple(_ancestors(nodes, chosen, status))
        run.evaluated.append(chosen)
        run.settle()
        settled_now = tuple(names[q] for q in sorted(set(run.settled) - before))
        outcome = (
            "passed"
            if status[chosen] == OK and run.vals[nodes[chosen].fact]
            else "failed"
            if status[chosen] == OK
            else "could not be evaluated"
        )
        run.order_lines.append(attrs.evolve(line, outcome=outcome, settles=settled_now))


def _fails(run: Run, g: int) -> bool:
    state = run.status[g]
    if state == OK:
        return not run.vals[run.program.nodes[g].fact]
    return state == FAILED


def rest_after_learned(run: Run) -> tuple[int, ...]:
    """What a learned order leaves to run: pending first-phase nodes, then the rest."""
    phase0, phase1 = run.program.phases
    status = run.status
    return tuple(i for i in phase0 if status[i] == PENDING) + phase1
