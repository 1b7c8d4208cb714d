"""The async driver of the scheduler: `aask` on anyio.

Steps start as soon as the steps they read are done. Plain sync parts run
inline; async parts are awaited, directly when nothing else could overlap with
them or when they have proved fast, otherwise on a few worker tasks of the
request; `blocking=True` parts (and sync parts with a `timeout=`) run in worker
threads.
"""

from __future__ import annotations

import asyncio
from collections import deque
from time import perf_counter
from typing import Any

import anyio

from solvi._run.scheduler import (
    OK,
    Cause,
    Run,
    journal_refused,
    learned_batches,
    rest_after_learned,
)
from solvi._run.steps import (
    ARITY_NONE,
    ARITY_ONE,
    Node,
    PartTimeout,
    cause_of,
    effective_timeout,
    waiting_counts,
)
from solvi.costs import CostBook

__all__ = ["run_async", "run_node_async"]

#: An async part whose calls took less than this (ms) on average is awaited
#: inline: a task would cost more than the overlap it could buy.
INLINE_BELOW_MS = 0.05


async def _call(part: Any, args: tuple[Any, ...], seconds: float | None, limiter: Any) -> Any:
    if part.is_async:
        if seconds is None:
            return await part.func(*args)
        try:
            with anyio.fail_after(seconds):
                return await part.func(*args)
        except TimeoutError:
            raise PartTimeout(seconds) from None
    # A sync part that may block: a worker thread, abandoned on timeout.
    if seconds is None:
        return await anyio.to_thread.run_sync(part.func, *args, limiter=limiter)
    try:
        with anyio.fail_after(seconds):
            return await anyio.to_thread.run_sync(
                part.func, *args, limiter=limiter, abandon_on_cancel=True
            )
    except TimeoutError:
        raise PartTimeout(seconds) from None


def _inline_sync(part: Any) -> bool:
    return not part.is_async and not part.blocking and part.timeout is None


def _fast(run: Run, node: Node) -> bool:
    """Whether a node may take the fast path: one plain sync or untimed async
    producer, nothing missing, no journal, resume or request timeout."""
    return node.fast_path and run.plain and not run.causes


def _journaled(run: Run) -> bool:
    """Whether a journaled request's fast-path nodes may take the journaled fast
    path: a fresh request (not a resume) without a request timeout."""
    return run.journal is not None and run.timeout is None and not run.resumed


async def _astarting(run: Run, node: Node, tried: int) -> Cause | None:
    """`Run.starting` for the event loop: the loop awaits the writer thread's commit."""
    part = node.parts[tried].name
    try:
        await run.journal.astart(node.index, part)
    except Exception as exc:
        return journal_refused(part, node.fact, exc)
    return None


async def _journaled_fast(run: Run, node: Node) -> None:
    """A fast-path node of a journaled request: what `run_node_async` does for it
    (started entry durable, call, settled entry recorded), in fewer steps."""
    start = perf_counter()
    refused = await _astarting(run, node, 0)
    if refused is not None:
        run.called(node, 0, start, perf_counter(), None, refused)
        return
    try:
        value = _fast_call(run, node)
        if node.simple_async:
            value = await value
    except Exception as exc:
        _fast_failed(run, node, start, exc)
        return
    try:
        run.journal.settled(node.index, node.first_part, value, None)
    except Exception:
        # The general path writes it again, and records why that fails.
        run.called(node, 0, start, perf_counter(), value, None)
        return
    _fast_done(run, node, start, value)


def _fast_call(run: Run, node: Node) -> Any:
    """Call a fast-path node's producer; an async one's coroutine is returned unawaited."""
    vals = run.vals
    arity = node.arity
    if arity == ARITY_NONE:
        return node.func()
    if arity == ARITY_ONE:
        return node.func(vals[node.inputs[0]])
    return node.func(*node.getter(vals))


def _fast_done(run: Run, node: Node, start: float, value: Any) -> None:
    run.attempts.append((node.index, node.first_part, node.fact, start, perf_counter(), "ok", None))
    run.vals[node.fact] = bool(value) if node.is_check else value
    run.status[node.index] = OK


def _fast_failed(run: Run, node: Node, start: float, exc: Exception) -> None:
    failure = cause_of(exc, node.first_part, node.fact)
    run.called(node, 0, start, perf_counter(), None, failure)


async def run_node_async(run: Run, node: Node, limiter: Any) -> None:
    """Compute one node: try its producers in order until one succeeds."""
    if _fast(run, node):
        start = perf_counter()
        try:
            value = _fast_call(run, node)
            if node.simple_async:
                value = await value
        except Exception as exc:
            _fast_failed(run, node, start, exc)
            return
        _fast_done(run, node, start, value)
        return
    if node.fast_path and not run.causes and _journaled(run):
        await _journaled_fast(run, node)
        return
    vals = run.vals
    for tried in run.producers_to_try(node):
        part = node.parts[tried]
        start = perf_counter()
        if run.journal is not None:
            refused = await _astarting(run, node, tried)
            if refused is not None:
                if run.called(node, tried, start, perf_counter(), None, refused):
                    return
                continue
        args = tuple(vals[i] for i in part.inputs)
        try:
            if _inline_sync(part):
                value = part.func(*args)
            else:
                value = await _call(part, args, effective_timeout(part, run.timeout), limiter)
        except Exception as exc:
            cause = cause_of(exc, part.name, node.fact)
            done = run.called(node, tried, start, perf_counter(), None, cause)
        else:
            done = run.called(node, tried, start, perf_counter(), value, None)
        # A settled entry waits with the request's writer: the next call that starts
        # commits it together with its own started entry, so it is durable before
        # any step that reads it begins (and the close commits what is left).
        if done:
            return


def _is_slow(node: Node, costs: CostBook) -> bool:
    """Whether a node may usefully overlap with others: not all plain sync, nor proven fast."""
    parts = node.inline_unless_slow
    return parts is None or (bool(parts) and not costs.all_below(parts, INLINE_BELOW_MS))


class _Driver:
    """Runs a set of nodes of one request, each as soon as its inputs are ready.

    Work is done by a few worker tasks rather than a task per node: the
    request's own coroutine is the first worker, and another starts only when
    more slow nodes are ready than workers are parked. A worker that finishes
    a node completes it itself (releasing its dependents) and takes the next
    ready node, so a chain never leaves its task. A worker with nothing to do
    parks, and is woken only for a node to run; it ends instead when the
    nodes not yet started are no more than the workers still busy, since
    those take them as they finish.

    On asyncio the workers are plain tasks, each in a cancel scope of its own
    (`_crew_asyncio`): starting and joining them costs about two thirds of what
    an anyio task group's bookkeeping does, with the same guarantees. On other
    backends they run in an anyio task group.
    """

    def __init__(
        self, run: Run, limiter: Any, costs: CostBook, *, speculative: bool, loop: object
    ) -> None:
        self.run = run
        self.limiter = limiter
        self.costs = costs
        self.speculative = speculative
        #: the asyncio loop, or None on another backend
        self.loop = loop if isinstance(loop, asyncio.AbstractEventLoop) else None
        #: speculation: the cancel scope of each phase-1 node being computed
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.ready: deque[int] = deque()
        self.waiting: dict[int, int] = {}
        #: per node of the current drive: whether it may overlap with others
        self.slow: dict[int, bool] = {}
        #: how many of the ready nodes are slow (they decide how many workers run)
        self.slow_ready = 0
        #: nodes of the current drive not yet taken by a worker
        self.unstarted = 0
        self.running = 0
        #: one future (asyncio) or event per parked worker, set to wake it
        self.parked: list[Any] = []
        #: workers woken but not yet running again
        self.waking = 0
        self.tg: Any = None
        # The asyncio crew: its tasks, their scopes, and how the drive ends.
        self.tasks: list[asyncio.Task[None]] = []
        self.children = 0
        self.child_scopes: set[anyio.CancelScope] = set()
        self.host_scope: anyio.CancelScope | None = None
        self.all_done: asyncio.Future[None] | None = None
        self.failure: BaseException | None = None
        self.stopping = False

    def _cancel_unneeded(self) -> None:
        run = self.run
        nodes = run.program.nodes
        for index, scope in list(self.scopes.items()):
            node = nodes[index]
            if node.phase == 1 and not node.qmask & run.open_mask:
                scope.cancel()

    def _complete(self, index: int) -> None:
        run = self.run
        nodes = run.program.nodes
        waiting = self.waiting
        for d in nodes[index].dependents:
            if d in waiting:
                left = waiting[d] - 1
                waiting[d] = left
                if left == 0:
                    self.ready.append(d)
                    slow = self.slow[d] = _is_slow(nodes[d], self.costs)
                    if slow:
                        self.slow_ready += 1
        if self.speculative and nodes[index].is_hard_check:
            run.settle()
            self._cancel_unneeded()

    async def _execute(self, index: int) -> None:
        run = self.run
        node = run.program.nodes[index]
        if self.speculative and node.phase == 1:
            if not node.qmask & run.open_mask:
                return  # settled already: never started, dropped later
            with anyio.CancelScope() as scope:
                self.scopes[index] = scope
                await run_node_async(run, node, self.limiter)
            self.scopes.pop(index, None)
            return
        await run_node_async(run, node, self.limiter)

    # -- workers -------------------------------------------------------------

    async def _worker(self) -> None:
        ready = self.ready
        slow = self.slow
        run = self.run
        nodes = run.program.nodes
        plain = run.plain and not self.speculative
        journaled = _journaled(run) and not self.speculative
        while not self.stopping:
            if ready:
                index = ready.popleft()
                self.unstarted -= 1
                if slow[index]:  # known: worked out when it became ready
                    self.slow_ready -= 1
                self.running += 1
                node = nodes[index]
                if self.speculative:
                    await self._execute(index)
                elif plain and node.fast_path and not run.causes:
                    # Inline, so that a step costs no coroutine of solvi's own.
                    start = perf_counter()
                    try:
                        value = _fast_call(run, node)
                        if node.simple_async:
                            value = await value
                    except Exception as exc:
                        _fast_failed(run, node, start, exc)
                    else:
                        _fast_done(run, node, start, value)
                elif journaled and node.fast_path and not run.causes:
                    await _journaled_fast(run, node)
                else:
                    await run_node_async(run, node, self.limiter)
                self.running -= 1
                self._complete(index)
                if self.slow_ready > 1 + self.waking:
                    # This worker takes the next ready node; others run the rest.
                    self._add_workers(self.slow_ready - 1 - self.waking)
                continue
            if self.running == 0:
                self._wake(len(self.parked))  # nothing can become ready any more
                return
            if self.unstarted <= self.running:
                return  # the busy workers take what is left as they finish
            await self._park()

    def _add_workers(self, wanted: int) -> None:
        woken = min(wanted, len(self.parked))
        self._wake(woken)
        for _ in range(wanted - woken):
            self._spawn()

    def _wake(self, count: int) -> None:
        parked = self.parked
        for _ in range(count):
            waker = parked.pop()
            if self.loop is None:
                waker.set()
            elif not waker.done():
                waker.set_result(None)
            else:
                continue  # its worker was cancelled
            self.waking += 1

    async def _park(self) -> None:
        if self.loop is not None:
            future = self.loop.create_future()
            self.parked.append(future)
            try:
                await future
            finally:
                if future.done() and not future.cancelled():
                    self._woken()
            return
        event = anyio.Event()
        self.parked.append(event)
        try:
            await event.wait()
        finally:
            if event.is_set():
                self._woken()

    def _woken(self) -> None:
        self.waking -= 1

    def _spawn(self) -> None:
        if self.loop is None:
            self.tg.start_soon(self._spawned, name="solvi-step")
            return
        self.children += 1
        self.tasks.append(self.loop.create_task(self._child(), name="solvi-step"))

    async def _spawned(self) -> None:
        """One extra worker in the task group (backends other than asyncio)."""
        await self._worker()

    async def _child(self) -> None:
        """One extra worker on asyncio; whatever it raises stops the drive and is re-raised."""
        scope = anyio.CancelScope()
        try:
            with scope:
                if self.stopping:
                    return
                self.child_scopes.add(scope)
                await self._worker()
        except BaseException as exc:  # handed to the host, which raises it
            if self.failure is None:
                self.failure = exc
            self._stop()
        finally:
            self.child_scopes.discard(scope)
            self.children -= 1
            if self.children == 0 and self.all_done is not None and not self.all_done.done():
                self.all_done.set_result(None)

    def _stop(self) -> None:
        """Cancel every worker of the drive (children and the host's own) and wake the parked."""
        self.stopping = True
        for scope in list(self.child_scopes):
            scope.cancel()
        if self.host_scope is not None:
            self.host_scope.cancel()
        self._wake(len(self.parked))

    async def _crew_asyncio(self, extra: int) -> None:
        """Run the drive's workers as plain asyncio tasks, with a task group's guarantees.

        When this returns or raises, no worker runs. Cancelling the host
        cancels every worker and waits for them before the cancellation goes
        on. An exception escaping a worker (a part's failure never does: it is
        recorded) cancels the others and is raised here. Workers are cancelled
        through cancel scopes, so shielded work, such as waiting for a part's
        thread to finish, is respected.
        """
        loop = self.loop
        assert loop is not None
        self.stopping = False
        self.failure = None
        self.all_done = None
        self.tasks = []
        for _ in range(extra):
            self._spawn()
        try:
            with anyio.CancelScope() as self.host_scope:
                await self._worker()
            self.host_scope = None
            if self.children:
                self.all_done = loop.create_future()
                await self.all_done
        except BaseException:
            self.host_scope = None
            self._stop()
            with anyio.CancelScope(shield=True):
                while self.children:
                    self.all_done = loop.create_future()
                    try:
                        await self.all_done
                    except asyncio.CancelledError:  # a native cancel: still wait
                        continue
            raise
        finally:
            self.tasks = []
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure

    async def drive(self, indices: tuple[int, ...], filter_wanted: bool, phase: int | None) -> None:
        """Run `indices` (a whole `phase` of the program when given) to the end."""
        run = self.run
        program = run.program
        if phase is not None and not run.resumed and not filter_wanted:
            # A fresh request running a whole phase: everything was worked out at compile time.
            if not indices:
                return
            self.waiting = program.phase_waiting[phase].copy()
            ready: tuple[int, ...] | list[int] = program.phase_ready[phase]
            self.unstarted = len(indices)
        else:
            todo = run.still_to_run(indices, filter_wanted)
            if not todo:
                return
            if phase is not None and len(todo) == len(indices):
                self.waiting = program.phase_waiting[phase].copy()
            else:
                self.waiting = waiting_counts(program.nodes, todo)
            ready = [i for i in todo if self.waiting[i] == 0]
            self.unstarted = len(todo)
        nodes = program.nodes
        self.slow = slow = {i: _is_slow(nodes[i], self.costs) for i in ready}
        self.ready = deque(ready)
        self.slow_ready = sum(slow.values())
        self.running = 0
        self.parked = []
        self.waking = 0
        if self.loop is not None:
            await self._crew_asyncio(self.slow_ready - 1)
            return
        async with anyio.create_task_group() as tg:
            self.tg = tg
            for _ in range(self.slow_ready - 1):
                self._spawn()
            await self._worker()
        self.tg = None


async def run_async(
    run: Run,
    limiter: Any,
    costs: CostBook,
    *,
    speculate: bool,
    loop: object = None,
    order: Any = None,
    cost_of: Any = None,
    by_declaration: bool = False,
) -> None:
    """Run a request's flow on the running event loop (`loop`, as `current_loop` gives it)."""
    program = run.program
    phase0, phase1 = program.phases
    if order is not None and run.early_exit:
        driver = _Driver(run, limiter, costs, speculative=False, loop=loop)
        for batch in learned_batches(run, order, cost_of, by_declaration=by_declaration):
            await driver.drive(batch, False, None)
        await driver.drive(rest_after_learned(run), True, None)
        return
    if speculate:
        driver = _Driver(run, limiter, costs, speculative=True, loop=loop)
        await driver.drive(phase0 + phase1, False, None)
        run.settle()
        if run.early_exit:
            run.drop_unneeded()
        return
    driver = _Driver(run, limiter, costs, speculative=False, loop=loop)
    await driver.drive(phase0, False, 0)
    if run.early_exit:
        run.settle()
        await driver.drive(phase1, run.open_mask != program.all_questions_mask, 1)
    else:
        await driver.drive(phase1, False, 1)
        run.settle()
