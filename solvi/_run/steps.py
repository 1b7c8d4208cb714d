"""How each step is called: a flow compiled into flat tuples the drivers read without
lookups by name, and the calls themselves (inline, under a timeout, in a thread or an
event loop of their own)."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from operator import itemgetter
from types import MappingProxyType
from typing import Any, Final

import anyio
import attrs

from solvi.catalog import Part
from solvi.errors import _described
from solvi.flow import Flow
from solvi.question import UNSET, Fail
from solvi.record import NO_JSON_FORM

__all__ = [
    "NOT_IN_DRIVE",
    "NOT_JOURNALED",
    "NOT_STARTED",
    "NO_VERDICT",
    "OWN_WORDS",
    "Cause",
    "Drive",
    "GivenUp",
    "Node",
    "PartTimeout",
    "Program",
    "QuestionSlot",
    "call_sync",
    "cause_of",
    "check_verdict",
    "compile_flow",
    "current_loop",
    "effective_timeout",
    "fast_call",
    "in_event_loop",
    "waiting_counts",
]


#: how the message begins of a step that failed without raising: its value had no
#: JSON form, the journal could not record its start or its result, or a check's
#: value was neither true nor false
NOT_STARTED: Final = "was not started: journal could not record the start: "
NOT_JOURNALED: Final = "returned a value the journal could not record: "
NO_VERDICT: Final = "returned a value that is neither true nor false: "
OWN_WORDS: Final = (NO_JSON_FORM, NOT_STARTED, NOT_JOURNALED, NO_VERDICT)


@attrs.frozen
class Cause:
    """Why a fact is missing at run time: a part timed out or raised."""

    kind: str  # "timeout" | "error"
    part: str
    fact: str
    message: str

    def describe(self) -> str:
        """What went wrong, for a reason or a skip: the part and what it did."""
        if self.kind == "timeout":
            return f"{self.part} {self.message}"
        if self.kind == "interrupted":
            return f"{self.part} was {self.message}"
        if self.message.startswith(OWN_WORDS):
            return f"{self.part} {self.message}"
        return f"{self.part} raised {self.message}"


def check_verdict(value: Any) -> tuple[bool | Fail | None, str | None]:
    """A check's value as its verdict: True, False or the `Fail` itself; or None and
    why, for a value that cannot be read as true or false (its ``__bool__`` raised),
    and for None: what a check without a ``return`` gives, which must not pass for a
    failed check that forces every request."""
    if type(value) is bool or type(value) is Fail:
        return value, None
    if value is None:
        return None, NO_VERDICT + "None; return True or False (did the check forget its return?)"
    try:
        return bool(value), None
    except Exception as exc:
        return None, NO_VERDICT + _described(exc)


def effective_timeout(part: Part, request_timeout: float | None) -> float | None:
    """The seconds a call of `part` may take.

    A part's own `timeout=` always applies. The request's (or System's) timeout
    applies only to parts that can be abandoned cheaply: async parts and
    `blocking=True` parts, which run in a worker thread. A plain sync part runs
    inline and is bounded only by a `timeout=` of its own.
    """
    if part.timeout is not None:
        return part.timeout
    if part.is_async or part.blocking:
        return request_timeout
    return None


#: How a node is called on the fast path: no inputs, one input, or several.
ARITY_NONE, ARITY_ONE, ARITY_MANY = 0, 1, 2


@attrs.frozen
class Node:
    """A fact to compute, with everything a driver needs precomputed."""

    index: int
    fact: str
    parts: tuple[Part, ...]
    inputs: tuple[str, ...]
    computed_inputs: tuple[str, ...]
    deps: tuple[int, ...]
    dependents: tuple[int, ...]
    phase: int
    qmask: int
    is_check: bool
    is_hard_check: bool
    #: one plain sync producer (not async, not blocking, no timeout of its own):
    #: called inline on the fast path, never interrupted
    simple: bool
    #: one async producer with no timeout of its own: awaited directly on the
    #: fast path of `aask` (when the request sets no timeout either)
    simple_async: bool
    has_async: bool
    func: Any
    #: simple or simple_async: the node may take a driver's fast path
    fast_path: bool
    #: the async producers whose measured times decide whether `aask` may await
    #: the node inline (none: it always may); None when a producer always runs
    #: apart from the others (it blocks a thread or has a timeout of its own)
    inline_unless_slow: tuple[str, ...] | None
    #: the name of the first producer (the only one, on the fast path)
    first_part: str
    arity: int
    getter: Any


@attrs.frozen
class QuestionSlot:
    """A question as the scheduler sees it."""

    index: int
    name: str
    rule_node: int | None
    answer_nodes: tuple[int, ...]
    answer_facts: tuple[str, ...]
    targets: tuple[str, ...]
    governing: tuple[int, ...]
    blocked: str | None
    blocked_guard: str | None
    forced: Any
    has_forced: bool
    is_ruleless: bool


@attrs.frozen
class Drive:
    """A batch of nodes a driver runs to the end before it asks for the next one."""

    indices: tuple[int, ...]
    #: skip, here and now, the nodes no open question needs
    filter_wanted: bool = False
    #: the whole phase `phase` of the program (its ready lists were worked out at compile time)
    phase: int | None = None
    #: start everything as soon as its inputs are ready; cancel what becomes unnecessary
    speculative: bool = False


@attrs.frozen
class Program:
    """Everything about a flow the drivers need, computed once per key set."""

    flow: Flow
    nodes: tuple[Node, ...]
    phases: tuple[tuple[int, ...], tuple[int, ...]]
    #: per phase, how many nodes of the same phase each node waits for
    phase_waiting: tuple[tuple[int, ...], tuple[int, ...]]
    #: per phase, the nodes that wait for no other node of the phase
    phase_ready: tuple[tuple[int, ...], tuple[int, ...]]
    questions: tuple[QuestionSlot, ...]
    all_questions_mask: int
    has_async: bool
    step_names: tuple[str, ...]
    #: each producer's place in the flow (node by node, producers in order):
    #: how a record sorts the attempts of a request, however they finished
    part_rank: Mapping[str, int]
    #: per node, what the sequential driver's fast path reads, unpacked in one step:
    #: (func, how it is called (`BY_GETTER`, or its number of inputs up to three),
    #: its input's name, or the names of its two or three, or the getter of more,
    #: fact, part, whether its value is kept as it is); None for a node off the fast path
    inline: tuple[InlineRow | None, ...]
    #: the drives of a request run phase by phase: phase 0, phase 1 whole, and
    #: phase 1 skipping what no open question needs (made once, not per request)
    phase_drives: tuple[Drive, Drive, Drive]
    #: the async driver's flags of which nodes may overlap with others, as the
    #: measured costs last said, and how many requests may reuse them (see
    #: `solvi._run.async_.slow_flags`)
    slow_memo: list[Any] = attrs.field(factory=lambda: [None, 0, 1], eq=False)


#: see `Program.inline`
InlineRow = tuple[Any, int, Any, str, str, bool]


#: An inline row whose part takes more inputs than the sequential driver passes one by
#: one: it is called with what the node's getter returns. Up to three, each input is
#: looked up and passed as it is, which saves building and unpacking a tuple per step.
BY_GETTER = -1


def _inline_row(node: Node) -> InlineRow | None:
    if not node.simple:
        return None
    inputs = node.parts[0].inputs  # simple: its one producer
    count = len(inputs)
    arg: Any
    if count == 1:
        arg = inputs[0]
    elif count <= 3:
        arg = inputs or None
    else:
        count, arg = BY_GETTER, node.getter
    return (node.func, count, arg, node.fact, node.first_part, not node.is_check)


def compile_flow(flow: Flow) -> Program:
    """Turn a planned flow into a Program."""
    node_of = {n.fact: n.index for n in flow.nodes}
    dependents: dict[int, list[int]] = {n.index: [] for n in flow.nodes}
    for n in flow.nodes:
        for d in n.deps:
            dependents[d].append(n.index)
    nodes: list[Node] = []
    for n in flow.nodes:
        only = n.parts[0] if len(n.parts) == 1 else None
        simple = (
            only is not None and not only.is_async and not only.blocking and only.timeout is None
        )
        inputs = only.inputs if only is not None else n.inputs
        arity = ARITY_NONE if not inputs else ARITY_ONE if len(inputs) == 1 else ARITY_MANY
        getter = itemgetter(*inputs) if arity == ARITY_MANY else None
        simple_async = only is not None and only.is_async and only.timeout is None
        apart = any(p.blocking or p.timeout is not None for p in n.parts)
        measured = None if apart else tuple(p.name for p in n.parts if p.is_async)
        nodes.append(
            Node(
                index=n.index,
                fact=n.fact,
                parts=n.parts,
                inputs=n.inputs,
                computed_inputs=tuple(i for i in n.inputs if i in node_of),
                deps=n.deps,
                dependents=tuple(dependents[n.index]),
                phase=n.phase,
                qmask=sum(1 << q for q in n.questions),
                is_check=any(p.kind == "check" for p in n.parts),
                is_hard_check=n.is_hard_check,
                simple=simple,
                simple_async=simple_async,
                has_async=any(p.is_async for p in n.parts),
                func=only.func if only is not None else None,
                fast_path=simple or simple_async,
                inline_unless_slow=measured,
                first_part=n.parts[0].name,
                arity=arity,
                getter=getter,
            )
        )
    slots: list[QuestionSlot] = []
    for q in flow.questions:
        rule_node = node_of.get(q.rule) if q.rule is not None else None
        if q.rule is not None:
            answer_facts: tuple[str, ...] = (q.rule,)
        else:
            answer_facts = q.targets
        slots.append(
            QuestionSlot(
                index=q.index,
                name=q.name,
                rule_node=rule_node,
                answer_nodes=tuple(node_of[f] for f in answer_facts if f in node_of),
                answer_facts=answer_facts,
                targets=q.targets,
                governing=tuple(node_of[_fact_of(flow, g)] for g in q.governing),
                blocked=q.blocked,
                blocked_guard=q.blocked_guard,
                forced=q.forced,
                has_forced=q.forced is not UNSET,
                is_ruleless=q.rule is None,
            )
        )
    phase0 = tuple(n.index for n in nodes if n.phase == 0)
    phase1 = tuple(n.index for n in nodes if n.phase == 1)
    phases = (phase0, phase1)
    waiting = tuple(tuple(waiting_counts(nodes, list(phase))) for phase in phases)
    ready = tuple(tuple(i for i in phases[p] if waiting[p][i] == 0) for p in (0, 1))
    return Program(
        flow=flow,
        nodes=tuple(nodes),
        phases=(phase0, phase1),
        phase_waiting=(waiting[0], waiting[1]),
        phase_ready=(ready[0], ready[1]),
        questions=tuple(slots),
        all_questions_mask=(1 << len(slots)) - 1,
        has_async=any(n.has_async for n in nodes),
        step_names=flow.steps,
        part_rank=MappingProxyType(
            {p.name: rank for rank, p in enumerate(p for n in nodes for p in n.parts)}
        ),
        inline=tuple(_inline_row(n) for n in nodes),
        phase_drives=(
            Drive(phase0, phase=0),
            Drive(phase1, phase=1),
            Drive(phase1, filter_wanted=True, phase=1),
        ),
    )


def fast_call(node: Node, vals: Mapping[str, Any]) -> Any:
    """Call a fast-path node's one producer on `vals` (an async one's coroutine is
    returned, to be awaited)."""
    arity = node.arity
    if arity == ARITY_NONE:
        return node.func()
    if arity == ARITY_ONE:
        return node.func(vals[node.inputs[0]])
    return node.func(*node.getter(vals))


#: `waiting_counts`'s count for a node outside the drive: never counted down to 0
NOT_IN_DRIVE = 1 << 40


def waiting_counts(nodes: Sequence[Node], members: list[int]) -> list[int]:
    """Per node of the flow, how many of `members` it reads (what it waits for), or
    NOT_IN_DRIVE when it is not one of them: a list, which a request copies in one go
    (a dict of the same counts took four times the memory and the time)."""
    among = set(members)
    counts = [NOT_IN_DRIVE] * len(nodes)
    for i in members:
        counts[i] = sum(1 for d in nodes[i].deps if d in among)
    return counts


def _fact_of(flow: Flow, part_name: str) -> str:
    for n in flow.nodes:
        for p in n.parts:
            if p.name == part_name:
                return n.fact
    raise KeyError(part_name)


class PartTimeout(Exception):
    """A part ran past its timeout."""

    def __init__(self, seconds: float, *, waiting_for: int | None = None) -> None:
        said = f"timed out after {seconds:g} s"
        if waiting_for is not None:
            said += (
                f", waiting for one of the System's {waiting_for} threads (all busy): "
                f"raise System(threads=...) or the timeout"
            )
        super().__init__(said)
        self.seconds = seconds


def in_event_loop() -> bool:
    """Whether this thread is running an asyncio or trio event loop right now."""
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return True
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_trio_token()
        except RuntimeError:
            return False
        return True
    return False


def current_loop() -> object:
    """An object standing for the running event loop (asyncio's loop, or trio's token)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        trio = sys.modules.get("trio")
        if trio is None:
            raise
        token: object = trio.lowlevel.current_trio_token()
        return token


class GivenUp:
    """The threads of sync calls under `ask` that timed out and still run, at most
    ``threads`` (a System's) at once, as `solvi._run.threads` keeps them under `aask`:
    a part that hangs for good cannot pile up a thread per request without end. While
    that many run, a timed call first waits for one of them to end, within its timeout.
    """

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.running = 0
        self._changed = threading.Condition()

    def wait_for_room(self, seconds: float | None) -> bool:
        """Whether fewer than ``threads`` run, at once or within `seconds`."""
        with self._changed:
            return self._changed.wait_for(lambda: self.running < self.threads, seconds)

    def add(self) -> None:
        """A call was given up; its thread runs on."""
        with self._changed:
            self.running += 1

    def ended(self) -> None:
        """A given-up call's thread has ended."""
        with self._changed:
            self.running -= 1
            self._changed.notify()


def _bounded(seconds: float | None) -> float | None:
    # A wait past threading.TIMEOUT_MAX (about 292 years) raises OverflowError; it is no
    # wait with an end, so it is waited for as such (as anyio does under aask).
    return None if seconds is None or seconds >= threading.TIMEOUT_MAX else seconds


def _run_in_daemon_thread(
    func: Callable[[], Any], timeout: float | None, given_up: GivenUp | None = None
) -> Any:
    """Run `func` in a daemon thread and wait at most `timeout` seconds for it.

    A thread cannot be stopped; on timeout it finishes in the background, its result
    dropped, and counts in `given_up` until it ends. The wait for room there counts
    against the timeout. Daemon threads keep a stuck part from holding up exit.
    """
    began = time.monotonic()
    if given_up is not None and not given_up.wait_for_room(_bounded(timeout)):
        assert timeout is not None  # an endless wait only returns once there is room
        raise PartTimeout(timeout, waiting_for=given_up.threads)
    box: list[Any] = []
    failure: list[BaseException] = []
    done = threading.Event()
    lock = threading.Lock()
    abandoned = False

    def target() -> None:
        try:
            box.append(func())
        except BaseException as exc:  # handed over to the waiting thread
            failure.append(exc)
        finally:
            with lock:
                done.set()
                if abandoned and given_up is not None:
                    given_up.ended()

    thread = threading.Thread(target=target, name="solvi-part", daemon=True)
    thread.start()
    left = None if timeout is None else max(0.0, timeout - (time.monotonic() - began))
    if not done.wait(_bounded(left)):
        with lock:
            if not done.is_set():
                abandoned = True
                if given_up is not None:
                    given_up.add()
        if abandoned:
            assert timeout is not None  # done.wait(None) only returns once set
            raise PartTimeout(timeout)
    if failure:
        raise failure[0]
    return box[0]


async def await_part(func: Callable[..., Any], args: tuple[Any, ...], seconds: float | None) -> Any:
    """Await an async part, raising PartTimeout once it runs past `seconds`.

    Only the deadline makes a timeout: a TimeoutError the part raises itself is its
    own error, recorded as such (as `ask` records it from a sync part).
    """
    if seconds is None:
        return await func(*args)
    with anyio.move_on_after(seconds):
        return await func(*args)
    raise PartTimeout(seconds)


class PartRaised(Exception):
    """Carries what a part raised that cannot travel as itself: a StopIteration from a
    worker thread would turn into a RuntimeError on its way out of a coroutine, and a
    CancelledError of the part's own would pass for a cancellation. `cause_of` records
    the part's own exception."""

    def __init__(self, raised: BaseException) -> None:
        super().__init__(str(raised))
        self.raised = raised


def cancelled_by_caller(exc: BaseException) -> bool:
    """Whether a cancellation out of a part is its task's (its request, or the request's
    caller, was cancelled), not a CancelledError the part raised by itself (it awaited a
    future that something else cancelled), which is the part's error. Only asyncio lets
    a part raise one; trio's comes from a cancel scope only."""
    if not isinstance(exc, asyncio.CancelledError):
        return True
    try:
        task = asyncio.current_task()
    except RuntimeError:
        return False  # no asyncio loop here (a sync driver, or trio): the part's own
    return task is None or task.cancelling() > 0


def part_failed(exc: BaseException) -> bool:
    """Whether what a call of a part raised is the part's failure, to record: any
    Exception, and a CancelledError of its own (a BaseException, which only asyncio's
    cancellation of the request may carry on). A cancellation of the request, or
    KeyboardInterrupt and the like, go on up."""
    if isinstance(exc, Exception):
        return True
    return isinstance(exc, asyncio.CancelledError) and not cancelled_by_caller(exc)


def call_in_thread(func: Callable[..., Any], *args: Any) -> Any:
    """Call a sync part in a worker thread for the event loop (see PartRaised)."""
    try:
        return func(*args)
    except StopIteration as exc:
        raise PartRaised(exc) from None


def _run_part_loop(func: Callable[..., Any], args: tuple[Any, ...], timeout: float | None) -> Any:
    """Run an async part on an event loop of its own (nothing else can cancel it there,
    so a CancelledError out of it is its own error, see PartRaised)."""
    try:
        return anyio.run(await_part, func, args, timeout)
    except asyncio.CancelledError as exc:
        raise PartRaised(exc) from None


def call_sync(
    part: Part, args: tuple[Any, ...], timeout: float | None, given_up: GivenUp | None = None
) -> Any:
    """Call a part from sync code; raise PartTimeout when it runs past `timeout` (a
    call given up counts in `given_up` until its thread ends)."""
    if part.is_async:
        run = partial(_run_part_loop, part.func, args, timeout)
        if in_event_loop():
            return _run_in_daemon_thread(run, None)
        return run()
    if timeout is None:
        return part.func(*args)
    return _run_in_daemon_thread(partial(part.func, *args), timeout, given_up)


def cause_of(exc: BaseException, part_name: str, fact: str) -> Cause:
    """The Cause a part's exception becomes: a timeout, or an error with its type."""
    if isinstance(exc, PartTimeout):
        return Cause("timeout", part_name, fact, str(exc))
    if isinstance(exc, PartRaised):
        exc = exc.raised
    return Cause("error", part_name, fact, _described(exc))
