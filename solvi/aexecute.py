"""The async driver of the scheduler: `aask` on anyio.

Steps start as soon as the steps they read are done. Plain sync parts run
inline; async parts are awaited, directly when nothing else could overlap with
them or when they have proved fast, otherwise as tasks of one task group;
`blocking=True` parts (and sync parts with a `timeout=`) run in worker threads.
"""

from __future__ import annotations

from collections import deque
from time import perf_counter
from typing import Any

import anyio

from solvi.calls import PartTimeout, cause_of
from solvi.costs import CostBook
from solvi.program import ARITY_NONE, ARITY_ONE, Node, effective_timeout
from solvi.schedule import OK, PENDING, Cause, Run, learned_batches, rest_after_learned

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
    return (node.simple or node.simple_async) and run.plain and not run.causes


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
    cause = run.missing_input(node)
    if cause is not None:
        run.block(node, cause)
        return
    vals = run.vals
    first = run.resume_from.get(node.index, 0) if run.resume_from else 0
    for tried in range(first, len(node.parts)):
        part = node.parts[tried]
        start = perf_counter()
        if run.journal is not None:
            refused = run.starting(node, tried)
            if refused is None:
                try:
                    await run.journal.flush()  # the started entry is durable before the call
                except Exception as exc:
                    message = f"journal could not record the start: {type(exc).__name__}: {exc}"
                    refused = Cause("error", part.name, node.fact, message)
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
        # A settled entry waits in the journal's group: the next call that starts
        # flushes it together with its own started entry, so it is durable before
        # any step that reads it begins (and the response flushes what is left).
        if done:
            return


def _is_fast(node: Node, costs: CostBook) -> bool:
    """Whether a node cannot usefully overlap with others: all plain sync, or proven fast."""
    for part in node.parts:
        if _inline_sync(part):
            continue
        if not part.is_async or part.timeout is not None:
            return False
        mean = costs.mean(part.name)
        if mean is None or mean >= INLINE_BELOW_MS:
            return False
    return True


class _Driver:
    """Runs a set of nodes of one request, each as soon as its inputs are ready.

    Work is done by a few worker tasks rather than a task per node: the
    request's own coroutine is the first worker, and another is started only
    when more slow nodes are ready than workers are idle. A worker that
    finishes a node completes it itself (releasing its dependents) and takes
    the next ready node, so a chain never leaves its task.
    """

    def __init__(self, run: Run, limiter: Any, costs: CostBook, *, speculative: bool) -> None:
        self.run = run
        self.limiter = limiter
        self.costs = costs
        self.speculative = speculative
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.ready: deque[int] = deque()
        self.waiting: dict[int, int] = {}
        #: per node of the current drive: whether it may overlap with others
        self.slow: dict[int, bool] = {}
        #: how many of the ready nodes are slow (they decide how many workers run)
        self.slow_ready = 0
        self.running = 0
        self.idle = 0
        self.wake = anyio.Event()
        self.tg: Any = None

    def _is_slow(self, index: int) -> bool:
        """Whether a node may overlap with others (worked out once per drive, when needed)."""
        slow = self.slow.get(index)
        if slow is None:
            slow = self.slow[index] = not _is_fast(self.run.program.nodes[index], self.costs)
        return slow

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
                waiting[d] -= 1
                if waiting[d] == 0:
                    self.ready.append(d)
                    if self._is_slow(d):
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

    def _wake_idle(self) -> None:
        if self.idle:
            self.wake.set()
            self.wake = anyio.Event()

    async def _worker(self) -> None:
        ready = self.ready
        slow = self.slow
        run = self.run
        nodes = run.program.nodes
        while True:
            if ready:
                index = ready.popleft()
                if slow[index]:  # known: `_is_slow` ran when it became ready
                    self.slow_ready -= 1
                self.running += 1
                node = nodes[index]
                if self.speculative:
                    await self._execute(index)
                elif _fast(run, node):
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
                else:
                    await run_node_async(run, node, self.limiter)
                self.running -= 1
                self._complete(index)
                if self.slow_ready > 1:
                    # This worker takes the next ready node; others run the rest.
                    for _ in range(self.slow_ready - 1 - self.idle):
                        self.tg.start_soon(self._worker, name="solvi-step")
                    self._wake_idle()
                continue
            if self.running == 0:
                self._wake_idle()  # nothing can become ready any more: let the others end
                return
            self.idle += 1
            await self.wake.wait()
            self.idle -= 1

    async def drive(self, indices: tuple[int, ...], filter_wanted: bool) -> None:
        run = self.run
        nodes = run.program.nodes
        todo: list[int] = []
        for index in indices:
            node = nodes[index]
            if run.status[index] != PENDING:
                continue  # settled before a resume
            if filter_wanted and not node.qmask & run.open_mask:
                run.skip_unneeded(node)
            else:
                todo.append(index)
        if not todo:
            return
        phases = run.program.phases
        if len(todo) == len(indices) and indices in phases:
            # The whole phase runs: its dependency counts were computed at compile time.
            self.waiting = dict(run.program.phase_waiting[phases.index(indices)])
        else:
            members = set(todo)
            self.waiting = {i: sum(1 for d in nodes[i].deps if d in members) for i in todo}
        self.slow = {}
        self.ready = deque(i for i in todo if self.waiting[i] == 0)
        self.slow_ready = sum(1 for i in self.ready if self._is_slow(i))
        self.running = 0
        self.idle = 0
        async with anyio.create_task_group() as tg:
            self.tg = tg
            for _ in range(self.slow_ready - 1):
                tg.start_soon(self._worker, name="solvi-step")
            await self._worker()
        self.tg = None


async def run_async(
    run: Run,
    limiter: Any,
    costs: CostBook,
    *,
    speculate: bool,
    order: Any = None,
    cost_of: Any = None,
    by_declaration: bool = False,
) -> None:
    """Run a request's flow on the current event loop."""
    program = run.program
    phase0, phase1 = program.phases
    if order is not None and run.early_exit:
        driver = _Driver(run, limiter, costs, speculative=False)
        for batch in learned_batches(run, order, cost_of, by_declaration=by_declaration):
            await driver.drive(batch, False)
        await driver.drive(rest_after_learned(run), True)
        return
    if speculate:
        driver = _Driver(run, limiter, costs, speculative=True)
        await driver.drive(phase0 + phase1, False)
        run.settle()
        if run.early_exit:
            run.drop_unneeded()
        return
    driver = _Driver(run, limiter, costs, speculative=False)
    await driver.drive(phase0, False)
    if run.early_exit:
        run.settle()
        await driver.drive(phase1, run.open_mask != program.all_questions_mask)
    else:
        await driver.drive(phase1, False)
        run.settle()
