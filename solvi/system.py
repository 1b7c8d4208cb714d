"""The System: a catalog and its questions, planned once per key set, asked many times."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import random
import threading
import time
import warnings
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from time import perf_counter
from typing import Any, Literal

import anyio
import attrs

from solvi import extract, heads, recovery
from solvi._run.async_ import run_async
from solvi._run.scheduler import (
    A_OUTCOME,
    A_PART,
    OK,
    Run,
    by_declaration,
    order_policy,
    take_prior_calls,
)
from solvi._run.steps import GivenUp, Program, current_loop
from solvi._run.sync import run_sequential, run_sequential_subset, run_threaded
from solvi._run.threads import LoopSlots
from solvi._uncancelled import in_thread_through, in_thread_to_the_end, to_the_end
from solvi.catalog import Catalog
from solvi.costs import CostBook, MeasuredCosts, ProducerChooser
from solvi.errors import CheckpointError, PlanError, SolviError
from solvi.flow import Flow
from solvi.hooks import HookTable, StructlogHook, report_failures, told_finished
from solvi.inputs import RequestGuard, as_state, check_request_id, check_request_value
from solvi.journal import Journal, open_journal
from solvi.mistakes import SolviWarning, check_inputs, type_conflicts, ungoverning_checks
from solvi.order import OrderModel, OrderPolicy
from solvi.planning import Planner
from solvi.question import Question, check_questions
from solvi.record import HUGE_INT, NEGATIVE_HUGE_INT, PLAIN_TYPES
from solvi.replay import ReplayResult, replay
from solvi.response import Response
from solvi.settings import Setting, Settings, check_flag, check_names, check_positive
from solvi.storage import Store, open_store
from solvi.strategy import Strategist

__all__ = ["SAVE_LEARNING_EVERY", "System"]

#: How often (in requests) a System with a store writes its cost book and order model.
SAVE_LEARNING_EVERY = 100
ORDER_BLOB = "order_model"


#: at most this many request hook tables are kept (see `System._table_with`)
MAX_REQUEST_TABLES = 64


def _raise_if(error: BaseException | None) -> None:
    if error is not None:
        raise error


def _stored_order(saved: bytes, source: str) -> OrderModel:
    """The learned order a store kept, or a fresh one when the row was changed."""
    try:
        return OrderModel.from_json(saved, source=f"{source}: order model")
    except CheckpointError as exc:
        msg = f"stored order model not used, it is learned again from the next requests: {exc}"
        warnings.warn(msg, SolviWarning, stacklevel=3)
        return OrderModel()


def _as_question(question: object) -> Question:
    if isinstance(question, Question):
        return question
    if isinstance(question, str):
        return Question(question)
    msg = f"questions must be Question objects or names, got {question!r}"
    raise TypeError(msg)


def _new_request_id() -> str:
    """A fresh request id: 32 hex digits, the clock's nanoseconds then 64 random bits.

    Ids made later sort later, so the journal's and the store's indexes on them
    grow at one end instead of touching a random page on every write. The random
    bits come from `random`, seeded from the OS at start and again in a forked
    child, so no system call is made per request.
    """
    return f"{time.time_ns():016x}{random.getrandbits(64):016x}"


class System:
    """A catalog and the questions it answers.

    Everything that can be checked without a request is checked here: unknown
    names in questions raise `PlanError` naming the closest known names.

    Args:
        catalog: the parts.
        questions: `Question` objects or names (a name is `Question(name)`);
            default: one question per rule, in declaration order.
        workers: run independent steps in this many threads (1: one after another).
        timeout: seconds, for parts without a `timeout=` of their own.
        early_exit: skip what a failed hard check made unnecessary.
        strategist: the planner (default `DeterministicStrategist()`).
        logger: a structlog logger for request, step and safeguard events (default:
            none); short for ``hooks=[solvi.hooks.StructlogHook(logger)]``.
        hooks: objects told when requests and steps start and finish (see
            `solvi.Hook`); looked up once, here.
        threads: at most this many worker threads for `blocking=True` parts under
            `aask`, and for timed-out sync calls still running under `ask`.
        producers: shortcut for `strategist=CostStrategist(producers=...)`;
            ``"learned"`` also chooses among equivalent producers per request, by
            their learned chance of failing on the request's facts.
        cost_policy: ``"declared"`` plans with `cost=`; ``"measured"`` with the
            run times in `cost_book` (needs ``producers="equivalent"``).
        costs: settings of the measured policy (`MeasuredCosts`).
        order: ``"learned"`` evaluates hard checks one at a time, highest
            expected saving first (see `learn_order`); implies `learn`.
        learn: record which hard checks fail on which input, in `order_model`.
        guards: ``"declared"``: when several hard checks fail, the first
            declared decides (answers identical under any order);
            ``"found"``: a learned order may stop at the first failing check
            it finds, and the guard names that check.
        journal: a path, ``sqlite:///path`` or `Journal`: journal every
            request so that `recover` and `resume` can finish it after a crash.
        store: a path, ``sqlite:///path``, ``postgresql://...`` or a `Store`:
            keep every response and its audit entries, and the cost book and
            order model across restarts.
        overrides: hard checks, or facts they read, that requests may set (a
            trusted caller's corrections); any other such key is a `RequestError`.
        inputs: the request keys, declared: then a part that reads a name no
            part provides and this list lacks is a `PlanError` here.
        max_flows: at most this many planned flows are cached (one per set of
            request keys); the least recently used is forgotten first.

    Raises:
        PlanError: a question names a rule, fact or part the catalog lacks; a
            producer's return annotation cannot match a reader's parameter
            annotation; a part reads a name `inputs` lacks.
        ValueError: an option has a wrong value.

    Warns:
        SolviWarning: a hard check governs no question, so it could never fail.
    """

    def __init__(
        self,
        catalog: Catalog,
        questions: Iterable[Question | str] | None = None,
        *,
        workers: int = 1,
        timeout: float | None = None,
        early_exit: bool = True,
        strategist: Strategist | None = None,
        logger: Any = None,
        hooks: Iterable[object] = (),
        threads: int = 16,
        producers: Literal["all", "equivalent", "learned"] | None = None,
        cost_policy: Literal["declared", "measured"] = "declared",
        costs: MeasuredCosts | None = None,
        order: Literal["default", "learned"] = "default",
        learn: bool = False,
        guards: Literal["declared", "found"] = "declared",
        journal: Any = None,
        store: Any = None,
        overrides: Iterable[str] = (),
        inputs: Iterable[str] | None = None,
        max_flows: int = 1000,
    ) -> None:
        if not isinstance(catalog, Catalog):
            msg = f"System needs a solvi.Catalog, got {type(catalog).__name__}"
            raise TypeError(msg)
        #: how this System plans and runs requests (frozen; see `solvi.settings`)
        self.settings = Settings.of(
            workers=workers,
            timeout=timeout,
            early_exit=early_exit,
            strategist=strategist,
            producers=producers,
            threads=threads,
            cost_policy=cost_policy,
            costs=costs,
            order=order,
            learn=learn,
            guards=guards,
            max_flows=max_flows,
        )
        self.catalog = catalog
        self._parts = catalog.parts
        if questions is None:
            questions = [Question(p.name) for p in self._parts if p.kind == "rule"]
        elif isinstance(questions, str | Question):
            msg = (
                f"questions must be a list, got {questions!r}; write [{questions!r}] for one "
                f"question"
            )
            raise TypeError(msg)
        self.questions: tuple[Question, ...] = tuple(map(_as_question, questions))
        check_questions(catalog, self.questions)
        conflicts = type_conflicts(self._parts)
        if conflicts:
            raise PlanError(str(conflicts[0]), name=conflicts[0].consumer)
        #: the request keys the System was told to expect (None: not declared)
        self.inputs: frozenset[str] | None = None
        if inputs is not None:
            declared = [inputs] if isinstance(inputs, str) else list(inputs)
            problem = check_inputs(self._parts, declared)
            if problem is not None:
                raise PlanError(problem)
            self.inputs = frozenset(declared)
        for message in ungoverning_checks(self._parts, self.questions):
            warnings.warn(message, SolviWarning, stacklevel=2)
        #: what a request may not set (hard checks, and the facts they read)
        self.guard = RequestGuard.of(catalog, check_names("overrides", overrides))
        self._text = extract.TextReader.of(catalog)  # its extracts and aliases, for ask_text
        self.order_model = OrderModel()
        self.logger = logger
        if logger is not None:
            hooks = [*hooks, StructlogHook(logger)]
        self.hooks: tuple[object, ...] = tuple(hooks)
        self._hook_table = HookTable.build(self.hooks)
        #: tables for the hooks of single requests, by the tuple of hooks a caller
        #: passes each time (a server's metrics): built once, not per request
        self._request_tables: dict[tuple[int, ...], tuple[object, HookTable | None]] = {}
        self.name = catalog.name
        self.version = catalog.version
        # The journal also pins the questions: a changed forced value changes answers.
        questions_digest = hashlib.sha256(
            repr(
                [(q.name, q.rule, q.uses, q.requires, repr(q.forced)) for q in self.questions]
            ).encode()
        ).hexdigest()[:8]
        self.stats: dict[str, int] = {"requests": 0, "timeouts": 0, "errors": 0}
        # Sampled only where no choice waits on each measurement (see CostBook).
        sampled = cost_policy == "declared" and not self.settings.learned_producers
        self.cost_book = CostBook(alpha=self.costs.alpha, one_in=8 if sampled else 1)
        #: how requests are planned (see `solvi.planning`)
        self.planner = Planner(
            self._parts,
            self.questions,
            self.guard,
            self.settings,
            self.cost_book,
            f"{self.version}.{questions_digest}",
        )
        self._thread_slots = LoopSlots(self.threads)
        self._given_up = GivenUp(self.threads)
        self._lock = threading.Lock()
        self._pools: dict[int, ThreadPoolExecutor] = {}
        self.store: Store | None = None if store is None else open_store(store)
        self.journal: Journal | None = open_journal(journal, store=self.store)
        #: the store keeps its tables in the journal's database: a response is saved
        #: and its request closed in one transaction
        self._shared_db = self.journal is not None and self.journal.same_database(self.store)
        if self.store is not None:
            self.cost_book.restore(self.store.load_costs(self.name))
            saved = self.store.load_blob(self.name, ORDER_BLOB)
            if saved is not None:
                self.order_model = _stored_order(saved, f"store {self.store}")
        self.heads = heads.attach_heads(self)  # trained heads by question, see `fit`

    # -- the settings, read-only ---------------------------------------------

    workers = Setting[int]("Threads for independent steps under `ask` (1: one after another).")
    timeout = Setting[float | None](
        "Seconds, for async and blocking parts without a `timeout=` of their own."
    )
    early_exit = Setting[bool]("Whether steps a failed hard check made unnecessary are skipped.")
    strategist = Setting[Strategist]("The planner.")
    threads = Setting[int]("At most this many worker threads for `blocking=True` parts under aask.")
    cost_policy = Setting[str]('``"declared"`` or ``"measured"``.')
    costs = Setting[MeasuredCosts]("The settings of the measured cost policy.")
    order = Setting[str]('``"default"`` or ``"learned"``.')
    learn = Setting[bool]("Whether the order model learns from every request.")
    guards = Setting[str]('``"declared"`` or ``"found"``.')

    def __repr__(self) -> str:
        names = ", ".join(q.name for q in self.questions)
        return f"<System {self.name}: {names}>"

    # -- planning ------------------------------------------------------------

    def plan(self, keys: Iterable[str]) -> Flow:
        """The flow for requests that bring exactly these keys (cached).

        Under measured costs this is the flow of the current producer choice.
        """
        return self.planner.plan(check_names("plan's keys", keys))

    def _order_policy(self, order: Any) -> OrderPolicy | None:
        return order_policy(order, self.settings.order, self.order_model)

    def _by_declaration(self, policy: OrderPolicy | None) -> bool:
        return by_declaration(policy, self.order_model, self.guards)

    facts_for, fit, save_heads = heads.facts_for, heads.fit, heads.save_heads  # see solvi.heads

    def learn_order(
        self, examples: Iterable[Mapping[str, Any]], features: Iterable[str] | None = None
    ) -> OrderModel:
        """Learn how often each hard check fails, then evaluate them in the learned order.

        Runs only the hard checks and what they read (and the cheap computed
        `features`) on each example, feeds the outcomes to a fresh
        `order_model`, and switches this System to ``order="learned"``.

        Returns:
            The new order model.
        """
        model = OrderModel(features or ())
        for state in examples:
            state = self._as_state(state)
            program, prices = self.planner.program_for(state)
            run = Run(
                program,
                state,
                early_exit=True,
                timeout=self.timeout,
                started=perf_counter(),
                prices=prices,
            )
            phase0 = program.phases[0]
            wanted = set(phase0)
            for node in program.nodes:
                if node.fact in model.features:
                    wanted.add(node.index)
                    wanted.update(d for d in node.deps)
            run_sequential_subset(run, tuple(sorted(wanted)))
            self._observe(model, run)
        self.order_model = model
        self.settings = attrs.evolve(self.settings, order="learned", learn=True)
        return model

    def _observe(self, model: OrderModel, run: Run) -> None:
        row = run.row if run.row is not None else model.row(run.vals, run.state.keys())
        nodes = run.program.nodes
        for i in run.program.phases[0]:
            node = nodes[i]
            if node.is_hard_check and run.status[i] == OK:
                model.observe(node.parts[0].name, row, not run.vals[node.fact])

    # -- journal and recovery -------------------------------------------------

    def _journal(self, what: str) -> Journal:
        if self.journal is None:
            msg = f"{what}() needs a journal: System(..., journal='decisions.journal')"
            raise SolviError(msg)
        return self.journal

    def journal_status(self) -> list[recovery.Recovery]:
        """Every unfinished journaled request of this catalog, read only.

        A step is shown as running only while its owner process lives; once
        the owner is gone it is interrupted (during execution, or before start).
        """
        return recovery.inspect(self._journal("journal_status"), self.name)

    def recover(self) -> list[recovery.Recovery]:
        """Claim every unfinished request whose owner process died, and list them.

        Two processes recovering at once never claim the same request. Requests
        journaled by another catalog version are left for a System of that version
        (`journal_status` lists them).
        """
        return recovery.recover(self._journal("recover"), self.name, self.planner.journal_version)

    def resume(self, request_id: str) -> Response:
        """Finish a journaled request: settled steps are reused, the rest run.

        A step interrupted before its start runs now; one interrupted during
        execution runs again only if its part is ``idempotent=True``, else the
        questions that need it abstain with guard ``"interrupted"``. For
        deterministic parts the answers and hash equal an uninterrupted run's;
        `Response.notes` names each interrupted step and what became of it.

        Raises:
            ResumeRefused: the request is closed, owned by a live process, or
                its catalog version, input or plan changed.
            RequestError: `request_id` is no id a journal could hold.
        """
        journal = self._journal("resume")
        check_request_id(request_id)

        def program_for(state: dict[str, Any]) -> Program:
            return self.planner.program_for(state)[0]

        run, leftovers = recovery.prepare_resume(
            journal, request_id, program_for, self.planner.journal_version, self.timeout
        )
        run.request_id = request_id
        run.given_up = self._given_up
        if self._hook_table is not None:
            run.attach_hooks(self._hook_table, self.name)
            run.request_began()
        run_sequential(run)
        recovery.notes_after_resume(run, leftovers)
        response = self._conclude(run)
        try:
            self._keep(response, run, learning=self._learning_due(), resumed=True)
        finally:
            told_finished(run, response)
        if run.hook_failures:
            report_failures(run.hook_failures)
        return response

    def freeze_costs(self) -> None:
        """Stop switching producers: keep each fact's current choice.

        Raises:
            SolviError: the System does not plan with measured costs.
        """
        self._measured("freeze_costs").freeze()

    def unfreeze_costs(self) -> None:
        """Let measured costs choose producers again."""
        self._measured("unfreeze_costs").unfreeze()

    def _measured(self, what: str) -> ProducerChooser:
        if self.planner.chooser is None:
            msg = (
                f"{what}() needs a System planning with measured costs: "
                f'System(..., producers="equivalent", cost_policy="measured")'
            )
            raise SolviError(msg)
        return self.planner.chooser

    @property
    def is_async(self) -> bool:
        """Whether the catalog has async parts (`aask` awaits them; `ask` runs a loop each)."""
        return any(p.is_async for p in self._parts)

    # -- asking ----------------------------------------------------------------

    def ask(
        self,
        state: Mapping[str, Any],
        *,
        early_exit: bool | None = None,
        workers: int | None = None,
        timeout: float | None = None,
        order: Any = None,
        request_id: str | None = None,
        hooks: Iterable[object] = (),
    ) -> Response:
        """Answer every question for one request, synchronously.

        Args:
            state: the request's facts by name (its keys select the flow).
            early_exit: override the System's setting for this request.
            workers: override the number of threads for this request.
            timeout: seconds, for async and blocking parts without their own.
            order: ``"default"``, ``"learned"``, or an object with
                ``p_fail(check, row)`` and ``row(vals, init_keys)``.
            request_id: the request's id in the journal and the store
                (default: a fresh random id).
            hooks: hooks told of this request only, after the System's (a
                server's metrics, a trace of one request).

        Returns:
            The Response. Parts that raise or time out never raise here: they
            are safeguards in the response.

        Raises:
            TypeError: `state` is not a mapping with string keys.
        """
        self._check_new_id(request_id)
        run = self._start(state, early_exit, timeout, request_id, hooks, eager=True)
        policy = self._order_policy(order)
        n = self.settings.workers if workers is None else workers
        response = None
        try:
            if n == 1:
                run_sequential(
                    run, policy, self.planner.node_cost, by_declaration=self._by_declaration(policy)
                )
            else:
                check_positive("workers", n, integer=True)
                run_threaded(
                    run,
                    self._pool(n),
                    policy,
                    self.planner.node_cost,
                    by_declaration=self._by_declaration(policy),
                    workers=n,
                )
            response = self._conclude(run)
            self._keep(response, run, learning=self._learning_due())
        except BaseException:
            recovery.left(self.journal, run)  # as `aask` does
            raise
        finally:
            told_finished(run, response)
        if run.hook_failures:
            report_failures(run.hook_failures)
        return response

    def _start(
        self,
        state: Mapping[str, Any],
        early_exit: bool | None,
        timeout: float | None,
        request_id: str | None,
        hooks: Iterable[object],
        *,
        eager: bool,
    ) -> Run:
        """A Run for one request, journaled with a journal (`eager`: each entry
        committed at once, for the sync drivers).

        A caller's request id must be new to the journal: the caller checks that
        first (`_check_new_id`), off the event loop under `aask`.
        """
        # A copy: the caller may reuse its dict for the next request, and the record
        # is made later, from this.
        state = dict(state) if type(state) is dict else self._as_state(state)
        extract.check_not_text(state)
        if early_exit is not None:
            check_flag("early_exit", early_exit)
        if timeout is not None:
            check_positive("timeout", timeout)
        program, prices = self.planner.program_for(state)
        forms: dict[str, Any] | None = None
        for key, value in state.items():
            if type(value) not in PLAIN_TYPES or (
                type(value) is int and not NEGATIVE_HUGE_INT < value < HUGE_INT
            ):
                # A container, say, that the caller may change later: its record form now.
                if forms is None:
                    forms = {}
                forms[key] = check_request_value(key, value)
        settings = self.settings  # read once: this runs on every request
        run = Run(
            program,
            state,
            early_exit=settings.early_exit if early_exit is None else early_exit,
            timeout=settings.timeout if timeout is None else timeout,
            started=perf_counter(),
            prices=prices,
            found=settings.guards == "found",
        )
        run.input_forms = forms
        run.given_up = self._given_up
        table = self._hook_table if not hooks else self._table_with(hooks)
        if self.journal is not None or self.store is not None or table is not None:
            rid = request_id or _new_request_id()
            run.request_id = rid
            if table is not None:
                run.attach_hooks(table, self.name)
                run.request_began(take_prior_calls())
            if self.journal is not None:
                recovery.begin(
                    self.journal, run, rid, self.name, self.planner.journal_version, eager=eager
                )
        return run

    def _table_with(self, hooks: Iterable[object]) -> HookTable | None:
        """The System's hook table followed by a request's own `hooks`.

        A tuple's table is kept by the identity of its hooks (never by equality: two
        equal hooks are still two), and the kept entry holds the hooks, so no id is
        reused while it is kept."""
        if type(hooks) is not tuple:
            return HookTable.build(hooks, self._hook_table)
        key = tuple(map(id, hooks))
        kept = self._request_tables.get(key)
        if kept is not None:
            return kept[1]
        table = HookTable.build(hooks, self._hook_table)
        if len(self._request_tables) >= MAX_REQUEST_TABLES:
            self._request_tables.clear()  # callers making new tuples: keep memory bounded
        self._request_tables[key] = (hooks, table)
        return table

    def _check_new_id(self, request_id: str | None) -> None:
        """A caller's request id must be new to the journal and the store (made ones
        always are), before anything of its request runs."""
        if request_id is not None:
            check_request_id(request_id)
            recovery.check_new_id(request_id, self.journal, self.store)

    async def aask(
        self,
        state: Mapping[str, Any],
        *,
        early_exit: bool | None = None,
        speculate: bool = False,
        timeout: float | None = None,
        order: Any = None,
        request_id: str | None = None,
        hooks: Iterable[object] = (),
    ) -> Response:
        """Answer every question for one request on the running event loop.

        Steps start as soon as the steps they read are done, all concurrently,
        in the phases of `ask` (hard checks and what they read first), so no
        call starts that `ask` would not make. The Response, its record and
        its hash equal those of `ask` on the same input.

        Args:
            state: the request's facts by name.
            early_exit: override the System's setting for this request.
            speculate: start every step as soon as its inputs are ready, and
                cancel the calls a failed hard check makes unnecessary.
            timeout: seconds, for async and blocking parts without their own.
            order: as for `ask`. Under a learned order hard checks run one at
                a time, so `speculate` is ignored with a UserWarning.
            request_id, hooks: as for `ask`.

        Raises:
            TypeError: `state` is not a mapping with string keys.
        """
        loop = current_loop()
        cancelled_first: BaseException | None = None
        if request_id is not None:
            check_request_id(request_id)  # before any database is asked about it
        if request_id is not None and (self.journal is not None or self.store is not None):
            # Seen to its end, so that a request cancelled now is still journaled, as
            # cancelled (below), and its id refused by `resume` as such.
            check = functools.partial(recovery.check_new_id, request_id, self.journal, self.store)
            _, cancelled_first = await in_thread_through(check)
        run = self._start(state, early_exit, timeout, request_id, hooks, eager=False)
        policy = self._order_policy(order)
        if policy is not None and speculate:
            warnings.warn(
                "speculate=True is ignored under a learned order: hard checks run one at a "
                'time; pass order="default" to speculate',
                UserWarning,
                stacklevel=2,
            )
            speculate = False
        slots = self._thread_slots.of(loop)
        response = None
        try:
            try:
                _raise_if(cancelled_first)  # a native cancel, during the check above
                await run_async(
                    run,
                    slots,
                    self.cost_book,
                    speculate=speculate and run.early_exit,
                    order=policy,
                    cost_of=self.planner.node_cost,
                    by_declaration=self._by_declaration(policy),
                )
            except anyio.get_cancelled_exc_class():
                if run.journal is not None:
                    await recovery.close_cancelled(run)
                if run.hooks is not None:
                    run.request_ended("cancelled")
                    with contextlib.suppress(Warning):  # the cancellation goes on
                        report_failures(run.hook_failures)
                raise
            response = self._conclude(run)
            if run.journal is not None or self.store is not None:
                learning = self._learning_due()
                # Begun, the keeping is finished: a cancelled caller still leaves the
                # response stored and its request closed, never half of it.
                if self.store is None and not learning:
                    await to_the_end(run.journal.close(None).wait_async)
                else:
                    keep = functools.partial(self._keep, response, run, learning=learning)
                    await in_thread_to_the_end(keep)
        except BaseException:
            # Not the caller's doing (or closed already): the request stays open, for
            # `recover` once this process is gone, and is no longer shown as running.
            recovery.left(self.journal, run)
            raise
        finally:
            told_finished(run, response)
        if run.hook_failures:
            report_failures(run.hook_failures)
        return response

    # `ask` / `aask` on the request a text makes (the extract parts run first): see solvi.extract
    ask_text = extract.ask_text
    aask_text = extract.aask_text

    def _conclude(self, run: Run) -> Response:
        """Learn from a finished run and make its Response (no I/O: both drivers end here)."""
        attempts = run.attempts
        self.cost_book.observe_attempts(attempts)
        chooser = self.planner.chooser
        if chooser is not None:
            chooser.ran(a[A_PART] for a in attempts)
            chooser.learn(run.state, attempts)
        if self.settings.learn:
            self._observe(self.order_model, run)
        timeouts = errors = 0
        if run.failures:
            for a in attempts:
                outcome = a[A_OUTCOME]
                if outcome == "timeout":
                    timeouts += 1
                elif outcome != "ok":
                    errors += 1
        self._tally(requests=1, timeouts=timeouts, errors=errors)
        return extract.respond(run, self.name, self.version, request_id=run.request_id)

    def _tally(self, *, requests: int = 0, timeouts: int = 0, errors: int = 0) -> None:
        """Add to `stats` (under the System's lock: requests finish in many threads)."""
        with self._lock:
            stats = self.stats
            stats["requests"] += requests
            if timeouts or errors:
                stats["timeouts"] += timeouts
                stats["errors"] += errors

    def _learning_due(self) -> bool:
        return self.store is not None and self.stats["requests"] % SAVE_LEARNING_EVERY == 0

    def _keep(self, response: Response, run: Run, *, learning: bool, resumed: bool = False) -> None:
        """Store the response and close its journaled request (blocking: under `aask`
        it runs in a worker thread).

        See `recovery.keep`.
        """
        recovery.keep(response, run, self.store, shared_db=self._shared_db, resumed=resumed)
        if learning:
            try:
                self.save_learning()
            except SolviError as exc:
                # The request is answered, stored and closed: failing it now would have
                # its caller try again, and run its parts a second time. What was
                # learned is kept in memory and saved by the next save.
                msg = f"what was learned could not be saved, it is kept for the next save: {exc}"
                warnings.warn(msg, SolviWarning, stacklevel=2)

    def save_learning(self) -> None:
        """Write the cost book and the order model to the store (done every
        `SAVE_LEARNING_EVERY` requests and on `close`), so a restart keeps them."""
        if self.store is None:
            return
        self.store.save_costs(self.name, self.cost_book.snapshot())
        self.store.save_blob(self.name, ORDER_BLOB, self.order_model.to_json().encode())

    def replay(self, record_or_id: Any) -> ReplayResult:
        """Re-run a stored request through this System and list any differences.

        Only reads: nothing is stored, journaled or learned. A step the record holds
        as timed out takes its recorded outcome instead of running again.

        Args:
            record_or_id: a record (``res.record``) or a request id in the store.

        Returns:
            The differences in answers, values, steps and hash; or a refusal when
            the record comes from another catalog version.
        """
        return replay(self, record_or_id, store=self.store)

    _as_state = staticmethod(as_state)

    def _pool(self, workers: int) -> ThreadPoolExecutor:
        """A pool of at least `workers` threads. Sizes go up in powers of two, so a
        caller choosing `workers=` per request keeps a handful of pools, not one per
        value; each request runs at most `workers` steps at once all the same."""
        size = 1 << (workers - 1).bit_length()
        pool = self._pools.get(size)
        if pool is None:
            with self._lock:
                pool = self._pools.get(size)
                if pool is None:
                    pool = ThreadPoolExecutor(size, thread_name_prefix=f"solvi-{self.name}")
                    self._pools[size] = pool
        return pool

    def close(self) -> None:
        """Stop the worker threads this System started and close its journal.

        Without a journal the System can still be asked afterwards. The journal and
        the store are both closed even when closing the other, or saving what was
        learned, fails (a database gone, say); the error is raised afterwards.
        """
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)
        try:
            if self.journal is not None:
                self.journal.close()
        finally:
            if self.store is not None:
                try:
                    self.save_learning()
                finally:
                    self.store.close()

    def __enter__(self) -> System:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
