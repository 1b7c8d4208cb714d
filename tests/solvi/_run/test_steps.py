"""How each step is called, fixed when a flow is compiled: arity and getters, the fast-path
flags, which timeout bounds a call, and the calls themselves."""

from __future__ import annotations

import time
from typing import Any

import pytest

from solvi import Catalog, Question, System
from solvi._run.steps import (
    ARITY_MANY,
    ARITY_NONE,
    ARITY_ONE,
    NOT_IN_DRIVE,
    Cause,
    Node,
    PartTimeout,
    Program,
    call_sync,
    cause_of,
    compile_flow,
    effective_timeout,
    fast_call,
    waiting_counts,
)


def _catalog() -> Catalog:
    cat = Catalog("steps")

    @cat.fn
    def zero() -> int:
        return 7

    @cat.fn
    def one(a: int) -> int:
        return a + 1

    @cat.fn
    def many(a: int, b: int, zero: int) -> int:
        return a * 100 + b * 10 + zero

    @cat.fn
    async def waited(one: int) -> int:
        return one * 2

    @cat.fn(timeout=0.5)
    async def bounded(one: int) -> int:
        return one * 3

    @cat.fn(blocking=True)
    def threaded(one: int) -> int:
        return one * 4

    @cat.fn(timeout=1.5)
    def timed(one: int) -> int:
        return one * 5

    @cat.fn(provides="pair")
    async def pair_remote(a: int) -> int:
        return a

    @cat.fn(provides="pair")
    def pair_local(a: int) -> int:
        return -a

    @cat.check(hard=True)
    def positive(a: int) -> bool:
        return a > 0

    @cat.rule
    def total(
        positive: bool,
        many: int,
        waited: int,
        bounded: int,
        threaded: int,
        timed: int,
        pair: int,
    ) -> int:
        return many + waited + bounded + threaded + timed + pair

    return cat


@pytest.fixture(scope="module")
def program() -> Program:
    """The compiled flow of the steps catalog for requests bringing a and b."""
    return compile_flow(System(_catalog(), [Question("total")]).plan({"a", "b"}))


def node(program: Program, fact: str) -> Node:
    """The node of `fact`."""
    return next(n for n in program.nodes if n.fact == fact)


def test_arity_is_fixed_by_the_number_of_inputs(program: Program) -> None:
    """No inputs, one, or several (read by one itemgetter in declaration order)."""
    assert node(program, "zero").arity == ARITY_NONE
    assert node(program, "one").arity == ARITY_ONE
    many = node(program, "many")
    assert many.arity == ARITY_MANY
    assert many.getter({"a": 1, "b": 2, "zero": 7, "x": 0}) == (1, 2, 7)
    assert node(program, "one").getter is None


def test_fast_call_calls_by_arity(program: Program) -> None:
    """fast_call hands each arity its inputs from the values, nothing else."""
    vals = {"a": 1, "b": 2, "zero": 7}
    assert fast_call(node(program, "zero"), vals) == 7
    assert fast_call(node(program, "one"), vals) == 2
    assert fast_call(node(program, "many"), vals) == 127


@pytest.mark.parametrize(
    ("fact", "simple", "simple_async", "fast_path", "inline_unless_slow"),
    [
        ("one", True, False, True, ()),
        ("waited", False, True, True, ("waited",)),
        ("bounded", False, False, False, None),
        ("threaded", False, False, False, None),
        ("timed", False, False, False, None),
        ("pair", False, False, False, ("pair_remote",)),
    ],
)
def test_fast_path_flags_follow_each_producers_options(
    program: Program,
    fact: str,
    simple: bool,
    simple_async: bool,
    fast_path: bool,
    inline_unless_slow: tuple[str, ...] | None,
) -> None:
    """Only one plain producer is simple; one async producer without a timeout of its own
    may be awaited inline; a blocking or timed producer always runs apart."""
    n = node(program, fact)
    assert (n.simple, n.simple_async, n.fast_path, n.inline_unless_slow) == (
        simple,
        simple_async,
        fast_path,
        inline_unless_slow,
    )


def test_a_node_of_several_producers_has_no_single_function(program: Program) -> None:
    """Two producers: no func to call directly, the first named, both kept in order."""
    pair = node(program, "pair")
    assert pair.func is None
    assert pair.first_part == "pair_remote"
    assert [p.name for p in pair.parts] == ["pair_remote", "pair_local"]
    assert pair.has_async


def test_compiling_fixes_phases_dependents_and_masks(program: Program) -> None:
    """The hard check is phase 0; the rest wait for phase 1 with their readers listed."""
    phase0, phase1 = program.phases
    assert [program.nodes[i].fact for i in phase0] == ["positive"]
    assert "total" in [program.nodes[i].fact for i in phase1]
    one = node(program, "one")
    assert sorted(program.nodes[d].fact for d in one.dependents) == [
        "bounded",
        "threaded",
        "timed",
        "waited",
    ]
    positive = node(program, "positive")
    assert (positive.is_check, positive.is_hard_check, positive.qmask) == (True, True, 1)
    assert program.all_questions_mask == 1
    assert program.has_async is True
    assert program.questions[0].governing == (positive.index,)


def test_each_producer_has_a_rank_in_flow_order(program: Program) -> None:
    """part_rank numbers producers node by node, producers in their order."""
    names = [p.name for n in program.nodes for p in n.parts]
    assert [program.part_rank[name] for name in names] == list(range(len(names)))


@pytest.mark.parametrize(
    ("fact", "request_timeout", "seconds"),
    [
        ("one", 2.0, None),  # plain sync: inline, never bounded by the request
        ("waited", 2.0, 2.0),  # async: the request's timeout
        ("waited", None, None),
        ("bounded", 2.0, 0.5),  # its own timeout wins
        ("threaded", 2.0, 2.0),  # blocking: in a thread, so the request's applies
        ("timed", 9.0, 1.5),  # sync with its own timeout
    ],
)
def test_effective_timeout_of_each_kind_of_part(
    program: Program, fact: str, request_timeout: float | None, seconds: float | None
) -> None:
    """A part's own timeout always applies; the request's only to what can be abandoned."""
    part = node(program, fact).parts[0]
    assert effective_timeout(part, request_timeout) == seconds


def test_waiting_counts_only_count_members() -> None:
    """Each member waits for the members it reads, not for nodes outside."""
    cat = Catalog("w")

    @cat.fn
    def x(a: int) -> int:
        return a

    @cat.fn
    def y(x: int) -> int:
        return x

    @cat.rule
    def z(x: int, y: int) -> int:
        return x + y

    nodes = compile_flow(System(cat, ["z"]).plan({"a"})).nodes
    assert waiting_counts(nodes, [0, 1, 2]) == [0, 1, 2]
    assert waiting_counts(nodes, [1, 2]) == [NOT_IN_DRIVE, 0, 1]


def test_call_sync_runs_async_parts_and_times_out_sync_ones(program: Program) -> None:
    """An async part runs in a loop of its own; a timed sync part past its time raises
    PartTimeout, which becomes a timeout Cause."""
    assert call_sync(node(program, "waited").parts[0], (3,), None) == 6

    slow_cat = Catalog("slow")

    @slow_cat.fn(timeout=0.05)
    def slow(a: int) -> int:
        time.sleep(0.5)
        return a

    part = slow_cat.parts[0]
    started = time.perf_counter()
    with pytest.raises(PartTimeout) as caught:
        call_sync(part, (1,), 0.05)
    assert time.perf_counter() - started < 0.4
    assert cause_of(caught.value, "slow", "slow") == Cause(
        "timeout", "slow", "slow", "timed out after 0.05 s"
    )


@pytest.mark.parametrize(
    ("cause", "text"),
    [
        (Cause("timeout", "p", "f", "timed out after 2 s"), "p timed out after 2 s"),
        (Cause("error", "p", "f", "ValueError: bad"), "p raised ValueError: bad"),
        (Cause("interrupted", "p", "f", "interrupted by a crash"), "p was interrupted by a crash"),
    ],
)
def test_a_cause_describes_the_part_and_what_it_did(cause: Cause, text: str) -> None:
    """describe() reads as a sentence for skips and reasons."""
    assert cause.describe() == text


def test_an_exception_becomes_an_error_cause_with_its_type() -> None:
    """cause_of keeps the exception's type name and message."""
    exc: Any = KeyError("k")
    assert cause_of(exc, "p", "f") == Cause("error", "p", "f", "KeyError: 'k'")


@pytest.mark.parametrize("seconds", [1e10, 10**20, 1e300])
def test_a_timeout_past_what_a_thread_can_wait_is_no_limit(seconds: float) -> None:
    """A timeout of centuries (past threading.TIMEOUT_MAX) made `ask` record an
    OverflowError where `aask` decided: it is waited for without an end, the same way
    by every driver."""
    import anyio

    cat = Catalog("long")

    @cat.fn(blocking=True, timeout=seconds)
    def slow(x: int) -> int:
        time.sleep(0.01)
        return x

    @cat.rule
    def approve(slow: int) -> bool:
        return slow > 0

    system = System(cat)
    hashes = set()
    for res in (
        system.ask({"x": 1}),
        system.ask({"x": 1}, workers=2),
        anyio.run(system.aask, {"x": 1}),
    ):
        assert (res["approve"].status, res.safeguards) == ("decided", ())
        hashes.add(res.hash)
    assert len(hashes) == 1


@pytest.mark.parametrize("seconds", [float("inf"), float("nan"), 10**400])
def test_a_request_timeout_must_be_finite(seconds: float) -> None:
    """`ask(timeout=inf)` and `System(timeout=inf)` are refused as `@cat.fn(timeout=inf)`
    is: an infinite timeout is no timeout, which None says."""
    cat = Catalog("t")

    @cat.rule
    def approve(x: int) -> bool:
        return x > 0

    with pytest.raises(ValueError, match="timeout must be a positive finite number"):
        System(cat, timeout=seconds)
    with pytest.raises(ValueError, match="timeout must be a positive finite number"):
        System(cat).ask({"x": 1}, timeout=seconds)
