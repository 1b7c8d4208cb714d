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
from solvi.program import Node, effective_timeout
from solvi.schedule import Run, learned_batches, rest_after_learned

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


async def run_node_async(run: Run, node: Node, limiter: Any) -> None:
    """Compute one node: try its producers in order until one succeeds."""
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
            if run.called(node, tried, start, perf_counter(), None, cause):
                return
        else:
            if run.called(node, tried, start, perf_counter(), value, None):
                return


def _awaits_inline(node: Node, costs: CostBook) -> bool:
    """Whether a node cannot usefully overlap with others: all sync-inline, or proven fast."""
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
    """Runs a set of nodes of one request, each as soon as its inputs are ready."""

    def __init__(self, run: Run, limiter: Any, costs: CostBook, *, speculative: bool) -> None:
        self.run = run
        self.limiter = limiter
        self.costs = costs
        self.speculative = speculative
        self.done: deque[int] = deque()
        self.wake = anyio.Event()
        self.scopes: dict[int, anyio.CancelScope] = {}

    async def _task(self, node: Node) -> None:
        with anyio.CancelScope() as scope:
            self.scopes[node.index] = scope
            await run_node_async(self.run, node, self.limiter)
        self.scopes.pop(node.index, None)
        self.done.append(node.index)
        self.wake.set()

    def _cancel_unneeded(self) -> None:
        run = self.run
        for index, scope in list(self.scopes.items()):
            node = run.program.nodes[index]
            if node.phase == 1 and not node.qmask & run.open_mask:
                scope.cancel()

    async def drive(self, indices: tuple[int, ...], filter_wanted: bool) -> None:
        run = self.run
        nodes = run.program.nodes
        todo: list[int] = []
        for index in indices:
            node = nodes[index]
            if filter_wanted and not node.qmask & run.open_mask:
                run.skip_unneeded(node)
            else:
                todo.append(index)
        members = set(todo)
        waiting = {i: sum(1 for d in nodes[i].deps if d in members) for i in todo}
        ready = deque(i for i in todo if waiting[i] == 0)
        in_flight = 0
        finished: set[int] = set()

        def complete(index: int) -> None:
            finished.add(index)
            for d in nodes[index].dependents:
                if d in waiting:
                    waiting[d] -= 1
                    if waiting[d] == 0:
                        ready.append(d)
            if self.speculative and nodes[index].is_hard_check:
                run.settle()
                self._cancel_unneeded()

        async with anyio.create_task_group() as tg:
            while ready or in_flight:
                while ready:
                    index = ready.popleft()
                    node = nodes[index]
                    if self.speculative and node.phase == 1 and not node.qmask & run.open_mask:
                        complete(index)  # settled already: never started, dropped later
                        continue
                    if (not ready and not in_flight) or _awaits_inline(node, self.costs):
                        await run_node_async(run, node, self.limiter)
                        complete(index)
                    else:
                        in_flight += 1
                        tg.start_soon(self._task, node)
                if in_flight:
                    if not self.done:
                        await self.wake.wait()
                        self.wake = anyio.Event()
                    while self.done:
                        in_flight -= 1
                        complete(self.done.popleft())
                        while self.done:
                            in_flight -= 1
                            complete(self.done.popleft())


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
