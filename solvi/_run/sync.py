"""The synchronous drivers of the scheduler: a plain loop, or a pool of worker threads."""

from __future__ import annotations

import collections
import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from time import perf_counter
from typing import Any

from solvi._run.scheduler import (
    OK,
    START,
    Drive,
    Run,
    attempts,
    drives,
    readiness,
    release,
)
from solvi._run.steps import (
    BY_GETTER,
    Cause,
    Node,
    call_sync,
    cause_of,
    effective_timeout,
    part_failed,
)
from solvi.catalog import Part
from solvi.record import HUGE_INT, NEGATIVE_HUGE_INT, PLAIN_TYPES

__all__ = [
    "Caller",
    "call_here",
    "run_node",
    "run_sequential",
    "run_sequential_subset",
    "run_threaded",
]

#: a call's value, or the Cause of its failure
Outcome = tuple[Any, Cause | None]


def call_here(run: Run, node: Node, part: Part, args: tuple[Any, ...]) -> Outcome:
    """Call one producer in this thread: its value, or the Cause of its failure."""
    try:
        return call_sync(part, args, effective_timeout(part, run.timeout), run.given_up), None
    except BaseException as exc:
        if not part_failed(exc):
            raise
        return None, cause_of(exc, part.name, node.fact)


#: how a sync driver makes one call: `call_here`, or (replay) a recorded outcome
Caller = Callable[[Run, Node, Part, tuple[Any, ...]], Outcome]


def run_node(run: Run, node: Node, call: Caller = call_here) -> None:
    """Compute one node: carry out its `attempts`, each call made by `call`."""
    plan = attempts(run, node)
    try:
        action, arg = next(plan)
        while True:
            if action == START:
                reply: Any = run.starting(node, arg)
            else:
                part, args, _ = arg
                reply = call(run, node, part, args)
            action, arg = plan.send(reply)
    except StopIteration:
        return


def _told_start(run: Run, node: Node, start: float) -> float | None:
    """Before a fast-path call of a request with a journal or hooks: journal its start
    (durable before the call) and tell the hooks, in the order `attempts` gives. The
    call's start (after the hooks, whose time is not the part's), or None when the
    start cannot be written: the call is then recorded as refused."""
    if run.journal is not None:
        refused = run.starting(node, 0)
        if refused is not None:
            run.called(node, 0, start, perf_counter(), None, refused)
            return None
    if run.hooks is not None:
        run.step_started(node, 0, start)
        return perf_counter()
    return start


#: the plain types but int, whose values a record holds only below HUGE_INT
_PLAIN_BUT_INT = PLAIN_TYPES - {int}


def _drive_sequential(run: Run, indices: Sequence[int], filter_wanted: bool) -> None:
    """Run `indices` one after another, in flow order.

    This loop is the per-step cost of `ask`, so the fast path is written out here:
    one clock reading per step (a step starts when the one before ended), what the
    step needs unpacked from one precomputed row (`Program.inline`), the call by
    the number of its inputs (up to three passed one by one), and `Run.fast_ok`'s
    common case (a plain value kept as it is) inline.
    With a journal or hooks the same call is made between `_told_start` and
    `Run.called`, which tell them; a resumed request takes the general path throughout.
    """
    program = run.program
    nodes = program.nodes
    if run.resumed or filter_wanted:
        # Leave out the nodes settled before a resume, and skip the unneeded ones
        # now, as the other drivers do: a node of the drive stays pending until the
        # loop reaches it, so the loop itself checks neither.
        indices = run.still_to_run(indices, filter_wanted)
    told = not run.bare
    rows = (None,) * len(nodes) if run.resumed else program.inline
    vals = run.vals
    status = run.status
    record = run.attempts.append
    causes = run.causes  # the same dict all along: a failure adds to it
    plain, low, high = _PLAIN_BUT_INT, NEGATIVE_HUGE_INT, HUGE_INT
    start = perf_counter()
    for index in indices:
        row = rows[index]
        if row is None or causes:
            run_node(run, nodes[index])
            start = perf_counter()
            continue
        if told:
            began = _told_start(run, nodes[index], start)
            if began is None:
                start = perf_counter()
                continue
            start = began
        func, count, arg, fact, part, as_is = row
        try:
            if count == 1:
                value = func(vals[arg])
            elif count == 2:
                a, b = arg
                value = func(vals[a], vals[b])
            elif count == 3:
                a, b, c = arg
                value = func(vals[a], vals[b], vals[c])
            elif count == BY_GETTER:
                value = func(*arg(vals))
            else:
                value = func()
        except BaseException as exc:
            if not part_failed(exc):
                raise
            run.fast_failed(nodes[index], start, exc)
            start = perf_counter()
            continue
        end = perf_counter()
        if told:
            run.called(nodes[index], 0, start, end, value, None)
            end = perf_counter()  # the next step starts after this one's hooks
        # One type() call, as this runs on every step: a plain value, or an int a
        # record can hold.
        elif as_is and (((kind := type(value)) is int and low < value < high) or kind in plain):
            record((index, part, fact, start, end, "ok", None))
            vals[fact] = value
            status[index] = OK
        else:
            run.fast_ok(nodes[index], start, end, value)
        start = end


def run_sequential_subset(run: Run, indices: tuple[int, ...]) -> None:
    """Run only these nodes, in flow order (for learning from examples)."""
    _drive_sequential(run, indices, False)


def run_sequential(
    run: Run, order: Any = None, cost_of: Any = None, *, by_declaration: bool = False
) -> None:
    """Run a request's flow one node after another, in flow order."""
    for drive in drives(run, order, cost_of, by_declaration=by_declaration):
        if drive.indices:
            _drive_sequential(run, drive.indices, drive.filter_wanted)


class _Gate:
    """What a threaded drive's workers and its driving thread share, so that a drive
    given up (an interrupt, a part's `KeyboardInterrupt`) is given up at once, as `aask`
    gives up its tasks: no worker starts a call or a fallback producer after it, nor
    journals or tells the hooks anything. A worker holds the gate open (`busy`) while it
    journals and tells; the driving thread waits for that to end, then tells the hooks
    that each call still running was cancelled, before the request's end is told."""

    __slots__ = ("busy", "calling", "given_up", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.busy = 0
        self.given_up = False
        #: node index -> (node, part, start) of each call running now (with hooks)
        self.calling: dict[int, tuple[Node, Part, float]] = {}

    def work(self, run: Run, node: Node) -> None:
        """Carry out the node's `attempts` in this worker thread, while the drive lasts."""
        lock = self.lock
        told = run.hooks is not None
        plan = attempts(run, node)
        reply: Any = None
        while True:
            with lock:
                if self.given_up:
                    return
                self.busy += 1
            calling: tuple[Part, tuple[Any, ...], float] | None = None
            try:
                action, arg = plan.send(reply)
                while action == START:
                    action, arg = plan.send(run.starting(node, arg))
                calling = arg
            except StopIteration:
                return
            finally:
                with lock:
                    self.busy -= 1
                    if told and calling is not None:
                        self.calling[node.index] = (node, calling[0], calling[2])
            part, args, _ = calling
            if not told:
                reply = call_here(run, node, part, args)
                continue
            try:
                reply = call_here(run, node, part, args)
            finally:
                with lock:
                    self.calling.pop(node.index, None)

    def give_up(self, run: Run) -> None:
        """Let no worker go on; tell the hooks each call still running was cancelled."""
        with self.lock:
            self.given_up = True
        while True:  # a worker journaling or telling finishes that first (rare: poll)
            with self.lock:
                if not self.busy:
                    running = list(self.calling.values())
                    self.calling.clear()
                    break
            time.sleep(0.0005)
        if run.hooks is not None:
            end = perf_counter()
            for node, part, start in running:
                tried = node.parts.index(part)
                run.step_ended(node, tried, start, end, "cancelled", "cancelled")


def _drive_threaded(run: Run, drive: Drive, pool: Executor, workers: int) -> None:
    """Run one drive on a pool: each node starts as soon as the nodes it reads are done
    and fewer than `workers` of the drive's nodes are running."""
    nodes = run.program.nodes
    waiting, ready, count = readiness(run, drive)
    if not count:
        return
    done: queue.SimpleQueue[tuple[int, BaseException | None]] = queue.SimpleQueue()
    gate = _Gate()
    futures: list[Future[None]] = []

    def work(index: int) -> None:
        try:
            gate.work(run, nodes[index])
        except BaseException as exc:  # handed back to the driving thread
            done.put((index, exc))
        else:
            done.put((index, None))

    def submit(index: int) -> None:
        try:
            future = pool.submit(work, index)
        except RuntimeError as exc:  # the pool is shut down
            raise RuntimeError(CLOSED) from exc
        future.add_done_callback(functools.partial(_tell_if_dropped, done, index))
        futures.append(future)

    def pump() -> None:
        queued = collections.deque(ready)
        outstanding = 0
        while queued or outstanding:
            while queued and outstanding < workers:
                submit(queued.popleft())
                outstanding += 1
            index, error = done.get()
            outstanding -= 1
            if error is not None:
                raise error
            queued.extend(release(waiting, nodes[index].dependents))

    try:
        pump()
    except BaseException:
        for future in futures:
            future.cancel()  # those not started yet never start
        gate.give_up(run)
        raise


CLOSED = (
    "the System was closed while this request ran: System.close() stopped its worker "
    "threads; close a System only once its requests have returned"
)


def _tell_if_dropped(
    done: queue.SimpleQueue[tuple[int, BaseException | None]], index: int, future: Future[None]
) -> None:
    """Hand the driving thread an error for a step `System.close()` took off the pool
    before it started (it would otherwise wait for it for ever)."""
    if future.cancelled():
        done.put((index, RuntimeError(CLOSED)))


def run_threaded(
    run: Run,
    pool: Executor,
    order: Any = None,
    cost_of: Any = None,
    *,
    by_declaration: bool = False,
    workers: int,
) -> None:
    """Run a request's flow on worker threads, drive by drive, at most `workers` of its
    steps at once (the pool may be larger, and shared with other requests).

    Under an `order` policy the hard checks run one after another, the steps
    each one reads still in parallel.
    """
    for drive in drives(run, order, cost_of, by_declaration=by_declaration):
        _drive_threaded(run, drive, pool, workers)
