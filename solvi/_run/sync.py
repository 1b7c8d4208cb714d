"""The synchronous drivers of the scheduler: a plain loop, or a pool of worker threads."""

from __future__ import annotations

import queue
from concurrent.futures import Executor
from time import perf_counter
from typing import Any

from solvi._run.scheduler import (
    OK,
    PENDING,
    Cause,
    Run,
    learned_batches,
    rest_after_learned,
)
from solvi._run.steps import (
    ARITY_NONE,
    ARITY_ONE,
    Node,
    call_sync,
    cause_of,
    effective_timeout,
    waiting_counts,
)

__all__ = ["run_node", "run_sequential", "run_sequential_subset", "run_threaded"]


def run_node(run: Run, node: Node) -> None:
    """Compute one node: try its producers in order until one succeeds."""
    vals = run.vals
    for tried in run.producers_to_try(node):
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
            value = call_sync(part, args, effective_timeout(part, run.timeout))
        except Exception as exc:
            cause = cause_of(exc, part.name, node.fact)
            if run.called(node, tried, start, perf_counter(), None, cause):
                return
        else:
            if run.called(node, tried, start, perf_counter(), value, None):
                return


def _phase_sequential(run: Run, phase: tuple[int, ...], filter_wanted: bool) -> None:
    nodes = run.program.nodes
    vals = run.vals
    attempts = run.attempts
    status = run.status
    plain = run.journal is None and not run.resume_from
    for index in phase:
        node = nodes[index]
        if status[index] != PENDING:
            continue  # settled before a resume
        if filter_wanted and not node.qmask & run.open_mask:
            run.skip_unneeded(node)
            continue
        if plain and node.simple and not run.causes:
            # The fast path: one plain sync producer and nothing missing.
            arity = node.arity
            func = node.func
            start = perf_counter()
            try:
                if arity == ARITY_NONE:
                    value = func()
                elif arity == ARITY_ONE:
                    value = func(vals[node.inputs[0]])
                else:
                    value = func(*node.getter(vals))
            except Exception as exc:
                end = perf_counter()
                part = node.parts[0]
                message = f"{type(exc).__name__}: {exc}"
                run.failures += 1
                attempts.append((index, part.name, node.fact, start, end, "error", message))
                run.fail(node, Cause("error", part.name, node.fact, message))
                continue
            attempts.append((index, node.first_part, node.fact, start, perf_counter(), "ok", None))
            vals[node.fact] = bool(value) if node.is_check else value
            status[index] = OK
            continue
        run_node(run, node)


def run_sequential_subset(run: Run, indices: tuple[int, ...]) -> None:
    """Run only these nodes, in flow order (for learning from examples)."""
    _phase_sequential(run, indices, False)


def run_sequential(
    run: Run, order: Any = None, cost_of: Any = None, *, by_declaration: bool = False
) -> None:
    """Run a request's flow one node after another, in flow order.

    With an `order` policy (and early exit), hard checks run one at a time in
    the order it ranks them, each after what it reads.
    """
    program = run.program
    if order is not None and run.early_exit:
        for batch in learned_batches(run, order, cost_of, by_declaration=by_declaration):
            _phase_sequential(run, batch, False)
        _phase_sequential(run, rest_after_learned(run), True)
        return
    phase0, phase1 = program.phases
    _phase_sequential(run, phase0, False)
    if run.early_exit:
        run.settle()
        _phase_sequential(run, phase1, run.open_mask != program.all_questions_mask)
    else:
        _phase_sequential(run, phase1, False)
        run.settle()


def _phase_threaded(run: Run, phase: tuple[int, ...], filter_wanted: bool, pool: Executor) -> None:
    """Run one phase on a pool: each node starts as soon as the nodes it reads are done."""
    nodes = run.program.nodes
    todo = run.still_to_run(phase, filter_wanted)
    if not todo:
        return
    waiting = waiting_counts(nodes, todo)
    done: queue.SimpleQueue[tuple[int, BaseException | None]] = queue.SimpleQueue()

    def work(index: int) -> None:
        try:
            run_node(run, nodes[index])
        except BaseException as exc:  # handed back to the driving thread
            done.put((index, exc))
        else:
            done.put((index, None))

    outstanding = 0
    for i in todo:
        if waiting[i] == 0:
            pool.submit(work, i)
            outstanding += 1
    while outstanding:
        index, error = done.get()
        outstanding -= 1
        if error is not None:
            raise error
        for d in nodes[index].dependents:
            if d in waiting:
                waiting[d] -= 1
                if waiting[d] == 0:
                    pool.submit(work, d)
                    outstanding += 1


def run_threaded(
    run: Run,
    pool: Executor,
    order: Any = None,
    cost_of: Any = None,
    *,
    by_declaration: bool = False,
) -> None:
    """Run a request's flow on worker threads, phase by phase.

    Under an `order` policy the hard checks run one after another, the steps
    each one reads still in parallel.
    """
    program = run.program
    if order is not None and run.early_exit:
        for batch in learned_batches(run, order, cost_of, by_declaration=by_declaration):
            _phase_threaded(run, batch, False, pool)
        _phase_threaded(run, rest_after_learned(run), True, pool)
        return
    phase0, phase1 = program.phases
    _phase_threaded(run, phase0, False, pool)
    if run.early_exit:
        run.settle()
        _phase_threaded(run, phase1, run.open_mask != program.all_questions_mask, pool)
    else:
        _phase_threaded(run, phase1, False, pool)
        run.settle()
