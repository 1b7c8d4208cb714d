"""The async driver of the scheduler: `aask` on anyio.

Steps start as soon as the steps they read are done. Plain sync parts run
inline; async parts are awaited, directly when nothing else could overlap with
them or when they have proved fast, otherwise on a few worker tasks of the
request, all in the request's one anyio task group; `blocking=True` parts (and
sync parts with a `timeout=`) run in worker threads, at most the System's `threads`
at once (see `solvi._run.threads`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from time import perf_counter
from typing import Any

import anyio

from solvi._run.scheduler import (
    START,
    Cause,
    Drive,
    Run,
    attempts,
    drives,
    journal_refused,
    readiness,
    release,
)
from solvi._run.steps import (
    Node,
    Program,
    await_part,
    cause_of,
    effective_timeout,
    fast_call,
    part_failed,
)
from solvi._run.threads import ThreadSlots
from solvi._tasks import alone
from solvi.costs import CostBook
from solvi.errors import RequestIdTaken

__all__ = ["call_part", "run_async", "run_node_async"]

#: An async part whose calls took less than this (ms) on average is awaited
#: inline: a task would cost more than the overlap it could buy.
INLINE_BELOW_MS = 0.05


async def call_part(
    part: Any, args: tuple[Any, ...], seconds: float | None, slots: ThreadSlots
) -> Any:
    """Await an async part, or call a sync one in a worker thread (given up on timeout
    or cancellation, but counted in `slots` until it ends); raise PartTimeout once it
    runs past `seconds`."""
    if part.is_async:
        return await await_part(part.func, args, seconds)
    return await slots.call(part.func, args, seconds)


def _inline_sync(part: Any) -> bool:
    return not part.is_async and not part.blocking and part.timeout is None


async def _astarting(
    run: Run, node: Node, tried: int, others: list[tuple[int, str]] | None = None
) -> Cause | None:
    """`Run.starting` for the event loop: the loop awaits the writer thread's commit
    (of this start and of `others`', steps about to start on other workers)."""
    part = node.parts[tried].name
    try:
        await run.journal.astart(node.index, part, others or ())
    except RequestIdTaken:
        raise  # the request is another's: nothing of it may run
    except Exception as exc:
        return journal_refused(part, node.fact, exc)
    return None


async def run_node_async(run: Run, node: Node, slots: ThreadSlots) -> None:
    """Compute one node: try its producers in order until one succeeds (the general
    path; a worker calls a fast-path node itself, see `_Driver._worker`)."""
    plan = attempts(run, node)
    try:
        action, arg = next(plan)
        while True:
            if action == START:
                reply: Any = await _astarting(run, node, arg)
            else:
                reply = await _outcome(run, node, slots, *arg)
            action, arg = plan.send(reply)
    except StopIteration:
        return


async def _outcome(
    run: Run, node: Node, slots: ThreadSlots, part: Any, args: tuple[Any, ...], start: float
) -> tuple[Any, Cause | None]:
    """Call one producer on the loop (inline, awaited, or in a thread): its value, or
    the Cause of its failure. A cancelled call is told to the hooks, then goes on."""
    try:
        if _inline_sync(part):
            return part.func(*args), None
        return await call_part(part, args, effective_timeout(part, run.timeout), slots), None
    except BaseException as exc:
        if part_failed(exc):
            return None, cause_of(exc, part.name, node.fact)
        if run.hooks is not None and isinstance(exc, anyio.get_cancelled_exc_class()):
            tried = node.parts.index(part)
            run.step_ended(node, tried, start, perf_counter(), "cancelled", "cancelled")
        raise


def _is_slow(node: Node, costs: CostBook) -> bool:
    """Whether a node may usefully overlap with others: not all plain sync, nor proven fast."""
    parts = node.inline_unless_slow
    return parts is None or (bool(parts) and not costs.all_below(parts, INLINE_BELOW_MS))


#: requests that reuse a flow's slow flags before they are worked out again
SLOW_RECHECK = 32


def slow_flags(program: Program, costs: CostBook) -> tuple[bool, ...]:
    """Per node, `_is_slow`, worked out once per `SLOW_RECHECK` requests of a flow:
    costs change slowly, and asking the cost book of every node of every request
    was a large share of a request's own work. The first requests of a flow
    recheck sooner (after 1, 2, 4, ... requests), so a part proven fast is soon
    awaited inline."""
    memo = program.slow_memo  # [flags or None, reuses left, reuses after the next check]
    flags, left, reuse = memo
    if flags is not None and left > 0:
        memo[1] = left - 1
        return flags  # type: ignore[no-any-return]  # the memo holds what this returns
    flags = tuple(_is_slow(node, costs) for node in program.nodes)
    memo[:] = [flags, reuse - 1, min(SLOW_RECHECK, reuse * 2)]
    return flags


class _Driver:
    """Runs the drives of one request, each node as soon as its inputs are ready.

    Work is done by a few worker tasks rather than a task per node: the
    request's own coroutine is the first worker, and another starts (in the
    request's task group) only when more slow nodes are ready than workers are
    parked. A worker that finishes a node completes it itself (releasing its
    dependents) and takes the next ready node, so a chain never leaves its task.
    A worker with nothing to do parks, and is woken only for a node to run; it
    ends instead when the nodes not yet started are no more than the workers
    still busy, since those take them as they finish.
    """

    def __init__(
        self, run: Run, slots: ThreadSlots, costs: CostBook, tg: anyio.abc.TaskGroup
    ) -> None:
        self.run = run
        self.slots = slots
        self.costs = costs
        self.tg = tg
        self.speculative = False
        #: speculation: the cancel scope of each phase-1 node being computed
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.ready: deque[int] = deque()
        self.waiting: list[int] = []
        #: per node of the current drive: whether it may overlap with others
        self.slow = slow_flags(run.program, costs)
        #: the running library's cancellation exception (looked up once per request)
        self.cancelled = anyio.get_cancelled_exc_class()
        #: how many of the ready nodes are slow (they decide how many workers run)
        self.slow_ready = 0
        #: nodes of the current drive not yet taken by a worker, and not yet done
        self.unstarted = 0
        self.remaining = 0
        self.running = 0
        #: one waker per parked worker (an asyncio future, or an anyio Event elsewhere)
        self.parked: list[Any] = []
        #: the asyncio loop (futures are cheaper to park on than events), else None
        try:
            self.loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self.loop = None
        #: workers woken but not yet running again
        self.waking = 0
        #: set when the current drive's last node is done (while the host waits)
        self.finished: anyio.Event | None = None
        #: a KeyboardInterrupt or SystemExit a worker task met, for the host to raise
        self.stopped: BaseException | None = None

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
        for d in release(self.waiting, nodes[index].dependents):
            self.ready.append(d)
            if self.slow[d]:
                self.slow_ready += 1
        if self.speculative and nodes[index].is_hard_check:
            run.settle()
            self._cancel_unneeded()
        self.remaining -= 1
        if self.remaining == 0 and self.finished is not None:
            self.finished.set()

    async def _execute(self, node: Node) -> None:
        run = self.run
        if self.speculative and node.phase == 1:
            if not node.qmask & run.open_mask:
                return  # settled already: never started, dropped later
            with anyio.CancelScope() as scope:
                self.scopes[node.index] = scope
                await run_node_async(run, node, self.slots)
            self.scopes.pop(node.index, None)
            return
        await run_node_async(run, node, self.slots)

    # -- workers -------------------------------------------------------------

    async def _worker(self) -> None:
        """Take ready nodes until none is left for this worker.

        A KeyboardInterrupt or SystemExit (from a part, never its failure) is kept for
        `run_async` to raise once the others are cancelled: out of a task of its own,
        asyncio would stop its loop on the spot, and the loop's cleanup after that left
        anyio's worker threads waiting, so the process never exited.
        """
        run = self.run
        nodes = run.program.nodes
        try:
            while True:
                ready = self.ready  # read each turn: a woken worker may serve the next drive
                if ready:
                    index = ready.popleft()
                    self.unstarted -= 1
                    if self.slow[index]:  # known: worked out when it became ready
                        self.slow_ready -= 1
                    self.running += 1
                    node = nodes[index]
                    if run.fast_async(node) and not (self.speculative and node.phase == 1):
                        # The fast path in this task's own frame: no coroutine per step
                        # beyond the part's (and the journal's start), which keeps the
                        # collector's work down. The journal and the hooks hear of the
                        # step in the order `attempts` gives.
                        start = perf_counter()
                        if run.journal is None:
                            refused = None
                        else:
                            others = self._starting_with(node) if ready else None
                            refused = await _astarting(run, node, 0, others)
                        if refused is not None:
                            run.called(node, 0, start, perf_counter(), None, refused)
                        else:
                            hooks = run.hooks
                            if hooks is not None:
                                run.step_started(node, 0, start)
                                start = perf_counter()  # the hooks' time is not the part's
                            try:
                                value = fast_call(node, run.vals)
                                if node.simple_async:
                                    value = await value
                            except BaseException as exc:
                                if not part_failed(exc):
                                    if hooks is not None and isinstance(exc, self.cancelled):
                                        end = perf_counter()
                                        run.step_ended(
                                            node, 0, start, end, "cancelled", "cancelled"
                                        )
                                    raise
                                run.fast_failed(node, start, exc)
                            else:
                                if run.journal is None and hooks is None:
                                    run.fast_ok(node, start, perf_counter(), value)
                                else:
                                    run.called(node, 0, start, perf_counter(), value, None)
                    else:
                        await self._execute(node)
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
        except (KeyboardInterrupt, SystemExit) as exc:
            if self.stopped is None:
                self.stopped = exc
            self.tg.cancel_scope.cancel()

    def _starting_with(self, node: Node) -> list[tuple[int, str]] | None:
        """The ready nodes that other workers are about to start on the fast path
        (whose starts may go out with `node`'s): none in a speculative drive, where a
        ready node may be dropped unstarted. In any other drive every ready node is
        started, and a fast-path one by its first producer."""
        if self.speculative:
            return None
        run, nodes, slow = self.run, self.run.program.nodes, self.slow
        others = [
            (i, nodes[i].first_part)
            for i in self.ready
            if slow[i] and i != node.index and run.fast_async(nodes[i])
        ]
        return others or None

    def _add_workers(self, wanted: int) -> None:
        woken = min(wanted, len(self.parked))
        self._wake(woken)
        for _ in range(wanted - woken):
            self.tg.start_soon(self._worker, name="solvi-step")

    def _wake(self, count: int) -> None:
        parked = self.parked
        for _ in range(count):
            waker = parked.pop()
            if self.loop is None:
                waker.set()
            elif not waker.done():
                waker.set_result(None)
            else:
                continue  # its worker was cancelled while parked
            self.waking += 1

    async def _park(self) -> None:
        if self.loop is not None:
            future = self.loop.create_future()
            self.parked.append(future)
            try:
                await future
            finally:
                if future.done() and not future.cancelled():
                    self.waking -= 1
                elif future in self.parked:
                    self.parked.remove(future)
            return
        event = anyio.Event()
        self.parked.append(event)
        try:
            await event.wait()
        finally:
            if event.is_set():
                self.waking -= 1
            else:
                self.parked.remove(event)

    async def drive(self, drive: Drive) -> None:
        """Run one drive to the end: every node of it done when this returns."""
        self.waiting, ready, count = readiness(self.run, drive)
        if not count:
            return
        self.speculative = drive.speculative
        slow = self.slow
        self.ready = deque(ready)
        self.slow_ready = sum(1 for i in ready if slow[i])
        self.unstarted = self.remaining = count
        self.running = 0
        self.finished = None
        for _ in range(self.slow_ready - 1):
            self.tg.start_soon(self._worker, name="solvi-step")
        await self._worker()
        if self.remaining:
            # Other workers hold the drive's last nodes: wait for them to finish.
            self.finished = anyio.Event()
            await self.finished.wait()
            self.finished = None


async def run_async(
    run: Run,
    slots: ThreadSlots,
    costs: CostBook,
    *,
    speculate: bool,
    order: Any = None,
    cost_of: Any = None,
    by_declaration: bool = False,
) -> None:
    """Run a request's flow on the running event loop, in one anyio task group.

    Parts' exceptions are recorded, never raised; what else escapes a worker (a
    BaseException, a bug) cancels the others and is raised here as it was, not
    wrapped in an exception group of one.
    """
    try:
        async with anyio.create_task_group() as tg:
            driver = _Driver(run, slots, costs, tg)
            for drive in drives(
                run, order, cost_of, by_declaration=by_declaration, speculate=speculate
            ):
                await driver.drive(drive)
    except BaseExceptionGroup as group:
        raise alone(group) from None
    if driver.stopped is not None:
        raise driver.stopped
