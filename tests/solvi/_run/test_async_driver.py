"""The async driver (`solvi._run.async_`), through `aask`: phases, speculation, timeouts,
cancellation and identical records."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog
from hypothesis import HealthCheck, given, settings
from strategies import CatalogSpec, Log, build, catalogs, states, system_of

from solvi import Catalog, Question, Response, StepEvent, System
from solvi._run.steps import current_loop


def _gated_catalog(started: list[str], cancelled: list[str], *, check_delay: float) -> Catalog:
    """A hard check that fails after `check_delay`, and a slow lookup behind it."""
    cat = Catalog("gated")

    @cat.check(hard=True)
    async def eligible(customer: str) -> bool:
        started.append("eligible")
        await anyio.sleep(check_delay)
        return False

    @cat.fn
    async def credit_report(customer: str) -> int:
        started.append("credit_report")
        try:
            await anyio.sleep(3)
        except anyio.get_cancelled_exc_class():
            cancelled.append("credit_report")
            raise
        return 700

    @cat.rule
    def approve(eligible: bool, credit_report: int) -> bool:
        return credit_report > 600

    return cat


@pytest.mark.asyncio
async def test_phases_never_start_what_a_failed_check_makes_unnecessary() -> None:
    """By default the lookup behind a failed hard check is never called."""
    started: list[str] = []
    cancelled: list[str] = []
    system = System(
        _gated_catalog(started, cancelled, check_delay=0.01), [Question("approve", forced=False)]
    )
    res = await system.aask({"customer": "c1"})
    assert res["approve"].status == "forced"
    assert started == ["eligible"]
    assert res.trace.skipped == (
        ("credit_report", "not needed: hard check eligible failed"),
        ("approve", "not needed: hard check eligible failed"),
    )


@pytest.mark.asyncio
async def test_speculation_starts_everything_and_cancels_the_unnecessary() -> None:
    """With speculate=True the lookup starts at once and is cancelled when the check fails."""
    started: list[str] = []
    cancelled: list[str] = []
    system = System(
        _gated_catalog(started, cancelled, check_delay=0.01), [Question("approve", forced=False)]
    )
    began = time.perf_counter()
    res = await system.aask({"customer": "c1"}, speculate=True)
    assert time.perf_counter() - began < 1.5  # far below the lookup's 3 s
    assert sorted(started) == ["credit_report", "eligible"]
    assert cancelled == ["credit_report"]
    plain = system.ask({"customer": "c1"})
    assert res.hash == plain.hash
    assert res.trace.skipped == plain.trace.skipped


@pytest.mark.asyncio
async def test_speculation_drops_steps_that_finished_anyway() -> None:
    """A step that finished before the check failed is left out of the record."""
    cat = Catalog("fast")

    @cat.check(hard=True)
    async def eligible(customer: str) -> bool:
        await anyio.sleep(0.05)
        return False

    @cat.fn
    async def quick(customer: str) -> int:
        return 1

    @cat.rule
    def approve(eligible: bool, quick: int) -> bool:
        return True

    system = System(cat, [Question("approve", forced=False)])
    res = await system.aask({"customer": "c"}, speculate=True)
    assert "quick" not in res.values
    assert [s.part for s in res.trace.steps] == ["eligible"]
    assert res.hash == system.ask({"customer": "c"}).hash


@pytest.mark.asyncio
async def test_async_timeout_falls_back_to_the_next_producer() -> None:
    """A slow async producer times out; the next one answers; a safeguard is recorded."""
    cat = Catalog("t")

    @cat.fn(provides="score", timeout=0.05)
    async def bureau(customer: str) -> int:
        await anyio.sleep(5)
        return 800

    @cat.fn(provides="score")
    async def internal(customer: str) -> int:
        return 600

    @cat.rule
    def approve(score: int) -> bool:
        return score > 500

    system = System(cat)
    began = time.perf_counter()
    res = await system.aask({"customer": "c"})
    assert time.perf_counter() - began < 1.0
    assert res.values["score"] == 600
    assert [(g.kind, g.part, g.message) for g in res.safeguards] == [
        ("timeout", "bureau", "timed out after 0.05 s")
    ]
    assert system.stats["timeouts"] == 1


@pytest.mark.asyncio
async def test_blocking_sync_part_times_out_on_time() -> None:
    """A blocking=True part returns on time; its thread finishes in the background."""
    cat = Catalog("b")
    finished = threading.Event()

    @cat.fn(blocking=True)
    def screening(name: str) -> bool:
        time.sleep(1.5)
        finished.set()
        return True

    @cat.rule
    def clear(screening: bool) -> bool:
        return screening

    system = System(cat)
    began = time.perf_counter()
    res = await system.aask({"name": "n"}, timeout=0.05)
    elapsed = time.perf_counter() - began
    assert elapsed < 1.0  # the 0.05 s timeout, not the part's 1.5 s
    assert res["clear"].status == "abstained"
    assert res["clear"].guard == "timeout"
    assert not finished.is_set()
    assert finished.wait(5)


@pytest.mark.asyncio
async def test_cancelling_aask_cancels_every_pending_call() -> None:
    """Cancelling the request cancels all its in-flight calls and leaves nothing running."""
    cat = Catalog("c")
    running: set[str] = set()
    cancelled: list[str] = []

    def slow(name: str) -> Any:
        async def part(x: int) -> int:
            running.add(name)
            try:
                await anyio.sleep(5)
            except anyio.get_cancelled_exc_class():
                cancelled.append(name)
                raise
            finally:
                running.discard(name)
            return x

        part.__name__ = name
        return part

    for name in ("a", "b", "c"):
        cat.fn(slow(name))

    @cat.rule
    def answer(a: int, b: int, c: int) -> int:
        return a + b + c

    system = System(cat)
    with anyio.move_on_after(0.05) as scope:
        await system.aask({"x": 1})
    assert scope.cancelled_caught
    assert sorted(cancelled) == ["a", "b", "c"]
    assert running == set()
    await anyio.sleep(0.01)
    assert system.stats["requests"] == 0


@pytest.mark.asyncio
async def test_thousand_concurrent_requests_match_sequential_ask() -> None:
    """1,000 concurrent aask calls on one loop answer as sequential ask does."""
    calls = Calls()
    system = System(claims_catalog(calls), [Question("approve", forced=False), "fast_track"])
    states = [
        {
            "policy_id": ("X" if i % 7 == 0 else "P") + str(i),
            "claim": {"amount": i * 37 % 20_000, "risk": (i % 10) / 10},
        }
        for i in range(1000)
    ]
    expected = [system.ask(s) for s in states]
    results: list[Any] = [None] * len(states)

    async def one(i: int) -> None:
        results[i] = await system.aask(states[i])

    async with anyio.create_task_group() as tg:
        for i in range(len(states)):
            tg.start_soon(one, i)
    for got, want in zip(results, expected, strict=True):
        assert got.answers == want.answers
        assert got.hash == want.hash
    assert system.stats["requests"] == 2000


@pytest.mark.asyncio
async def test_ask_and_aask_share_records_under_errors(claims: System) -> None:
    """A part that raises is the same safeguard under ask and aask."""
    state = {"policy_id": "P1", "claim": {"model_down": True}}
    res = await claims.aask(state)
    assert res.hash == claims.ask(state).hash
    assert res.safeguards[0].kind == "error"


@pytest.mark.asyncio
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=catalogs(), state=states())
async def test_four_ways_of_running_give_one_hash(spec: CatalogSpec, state: dict[str, int]) -> None:
    """ask, ask(workers=8), aask and aask(speculate=True) agree on answers and hash."""
    cat, questions = build(spec, Log(), async_parts=True)
    system = system_of(cat, questions)
    base = system.ask(state)
    others = [
        system.ask(state, workers=8),
        await system.aask(state),
        await system.aask(state, speculate=True),
    ]
    for other in others:
        assert other.answers == base.answers
        assert other.hash == base.hash
    system.close()


def test_aask_runs_on_trio_too(claims: System) -> None:
    """The async driver is anyio all through, so it runs on trio as well."""
    state = {"policy_id": "X1", "claim": {"amount": 5}}

    async def main() -> str:
        res = await claims.aask(state, speculate=True)
        return res.hash

    assert anyio.run(main, backend="trio") == claims.ask(state).hash


def test_blocking_parts_work_after_a_change_of_event_loop_backend() -> None:
    """Thread limiters belong to one event loop: asyncio then trio both run blocking parts."""
    cat = Catalog("b")

    @cat.fn(blocking=True)
    def slow(x: int) -> int:
        return x + 1

    @cat.rule
    def positive(slow: int) -> bool:
        return slow > 0

    system = System(cat)
    first = anyio.run(system.aask, {"x": 1})
    second = anyio.run(system.aask, {"x": 1}, backend="trio")
    assert first["positive"].status == second["positive"].status == "decided"


def _solvi_tasks() -> list[str]:
    import asyncio

    return [t.get_name() for t in asyncio.all_tasks() if t.get_name() == "solvi-step"]


class _Overlap:
    """Counts the calls running at once across threads, the most there were, and the
    names of those that ended."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.finished: list[str] = []

    def run(self, name: str, seconds: float) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(seconds)
        with self.lock:
            self.now -= 1
            self.finished.append(name)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_cancelling_aask_gives_up_on_threads_but_counts_them_until_they_end(
    backend: str,
) -> None:
    """A `blocking=True` part without a timeout is given up at once on cancel: the
    caller has its control back, hooks hear "cancelled". Its thread cannot be stopped,
    so it holds its slot of `threads=` until it ends: the next request's calls wait
    for those threads rather than run beside them."""
    cat = Catalog("threads")
    overlap = _Overlap()
    finished = overlap.finished

    def slow(name: str) -> Any:
        def part(x: int) -> int:
            overlap.run(name, 0.3)
            return x

        part.__name__ = name
        return part

    for name in ("a", "b"):
        cat.fn(blocking=True)(slow(name))

    @cat.rule
    def answer(a: int, b: int) -> int:
        return a + b

    told: list[tuple[str, str | None]] = []

    class Told:
        def step_finished(self, event: StepEvent) -> None:
            told.append((event.part, event.outcome))

    system = System(cat, [Question("answer")], threads=2, hooks=[Told()])

    async def main() -> tuple[float, Response]:
        start = time.perf_counter()
        with anyio.move_on_after(0.05):
            await system.aask({"x": 1})
        back = time.perf_counter() - start
        assert finished == []  # both threads still run, given up
        assert system._thread_slots.of(current_loop()).running == 2
        return back, await system.aask({"x": 2})

    back, res = anyio.run(main, backend=backend)
    assert back < 0.25
    assert res["answer"].value == 4
    assert overlap.peak == 2  # the second request's calls waited for the first's threads
    assert sorted(finished) == ["a", "a", "b", "b"]
    assert sorted(told) == [
        ("a", "cancelled"),
        ("a", "ok"),
        ("answer", "ok"),
        ("b", "cancelled"),
        ("b", "ok"),
    ]


class _Crash(BaseException):
    """Not an Exception: a part raising it is not a recorded failure but a crash."""


@pytest.mark.asyncio
async def test_a_crashing_worker_cancels_the_others_and_the_crash_is_raised() -> None:
    """Something escaping a worker (never a part's Exception) stops the whole request."""
    cat = Catalog("crash")
    cancelled: list[str] = []

    def sleeper(name: str) -> Any:
        async def part(x: int) -> int:
            try:
                await anyio.sleep(5)
            except anyio.get_cancelled_exc_class():
                cancelled.append(name)
                raise
            return x

        part.__name__ = name
        return part

    cat.fn(sleeper("first"))  # the request's own worker takes this one

    @cat.fn
    async def crashes(x: int) -> int:
        await anyio.sleep(0.01)
        raise _Crash

    cat.fn(sleeper("third"))

    @cat.rule
    def answer(first: int, crashes: int, third: int) -> int:
        return first + crashes + third

    system = System(cat)
    start = time.perf_counter()
    with pytest.raises(_Crash):
        await system.aask({"x": 1})
    assert time.perf_counter() - start < 2
    assert sorted(cancelled) == ["first", "third"]
    assert _solvi_tasks() == []


@pytest.mark.asyncio
async def test_no_worker_outlives_its_request() -> None:
    """Extra workers end with the request, including the ones that ended early."""
    cat = Catalog("wide")

    def adds(i: int) -> Any:
        async def part(x: int) -> int:
            await anyio.sleep(0.001)
            return x + i

        part.__name__ = f"p{i}"
        return part

    for i in range(6):
        cat.fn(adds(i))

    @cat.rule
    def total(p0: int, p1: int, p2: int, p3: int, p4: int, p5: int) -> int:
        return p0 + p1 + p2 + p3 + p4 + p5

    system = System(cat)
    for _ in range(3):
        res = await system.aask({"x": 1})
        assert res["total"].value == 21
        assert _solvi_tasks() == []


def test_a_flows_slow_flags_are_reused_and_worked_out_again_ever_less_often() -> None:
    """The cost book is asked after the 1st, 2nd, 4th, ... request of a flow, then every
    32nd: a part measured fast is soon awaited inline, and later requests ask nothing."""
    from solvi._run.async_ import SLOW_RECHECK, slow_flags
    from solvi._run.steps import compile_flow

    cat = Catalog("flags")

    @cat.fn
    async def quote(x: int) -> int:
        return x

    @cat.rule
    def answer(quote: int) -> int:
        return quote

    program = compile_flow(System(cat).plan({"x"}))

    class Costs:
        """Says `quote` is fast from the third time it is asked; counts the asking."""

        asked = 0

        def all_below(self, parts: tuple[str, ...], ms: float) -> bool:
            self.asked += 1
            return self.asked >= 3

    costs = Costs()
    seen = []
    for request in range(1, 101):
        before = costs.asked
        flags = slow_flags(program, costs)  # type: ignore[arg-type]  # a stand-in book
        if costs.asked > before:
            seen.append(request)
        assert flags[0] is (costs.asked < 3)  # `quote` (node 0) is slow until proven fast
    assert SLOW_RECHECK == 32
    assert seen == [1, 2, 4, 8, 16, 32, 64, 96]


def test_a_timeout_error_a_part_raises_itself_is_its_error_not_a_timeout() -> None:
    """Only the deadline makes a timeout: a part that raises TimeoutError (its client
    gave up) is recorded as an error, by `ask` and `aask` alike, and a blocking part's
    StopIteration reaches the record as itself."""
    cat = Catalog("own_errors")

    @cat.fn(timeout=5)
    def score(x: int) -> int:
        raise TimeoutError("model server did not answer")

    @cat.fn(timeout=5)
    async def history(x: int) -> int:
        raise TimeoutError("archive did not answer")

    @cat.fn(blocking=True)
    def ledger(x: int) -> int:
        raise StopIteration

    @cat.rule
    def approve(score: int, history: int, ledger: int) -> bool:
        return True

    system = System(cat, [Question("approve", forced=False)])
    asked = system.ask({"x": 1})
    awaited = anyio.run(system.aask, {"x": 1})
    for res in (asked, awaited):
        steps = {s.part: (s.outcome, s.message) for s in res.trace.steps}
        assert steps == {
            "score": ("error", "TimeoutError: model server did not answer"),
            "history": ("error", "TimeoutError: archive did not answer"),
            "ledger": ("error", "StopIteration: "),
        }
    assert asked.hash == awaited.hash


@pytest.mark.parametrize("timeout", [None, 5])
def test_a_cancelled_error_a_part_raises_by_itself_is_its_error(timeout: float | None) -> None:
    """A part that awaits a future something else cancelled raises CancelledError though
    nobody cancelled its request: that is the part's error, recorded as such by `ask`
    and `aask` alike (on the fast path and, with a timeout, the general one)."""
    cat = Catalog("own_cancel")

    @cat.fn(timeout=timeout)
    async def remote(x: int) -> int:
        inner: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        inner.cancel()  # as a client library's inner call may be
        return await inner

    @cat.rule
    def approve(remote: int) -> bool:
        return True

    system = System(cat, [Question("approve", forced=False)])
    asked = system.ask({"x": 1})
    awaited = asyncio.run(system.aask({"x": 1}))
    for res in (asked, awaited):
        assert [(s.part, s.outcome, s.message) for s in res.trace.steps] == [
            ("remote", "error", "CancelledError: ")
        ]
        assert res["approve"].status == "abstained"
    assert asked.hash == awaited.hash


@pytest.mark.parametrize("blocking", [False, True])
def test_a_sync_part_raising_its_own_cancelled_error_is_its_error_on_every_driver(
    blocking: bool,
) -> None:
    """A sync part can raise CancelledError, a BaseException (a client that runs an
    event loop of its own lets one out): it is the part's error under `ask`,
    `ask(workers=2)` and `aask` on asyncio and trio alike, never a crash of the
    request nor a cancellation of it."""
    cat = Catalog("own_cancel_sync")

    @cat.fn(blocking=blocking)
    def helper(x: int) -> int:
        raise asyncio.CancelledError

    @cat.rule
    def approve(helper: int) -> bool:
        return True

    system = System(cat, [Question("approve", forced=False)])
    answers = [
        system.ask({"x": 1}),
        system.ask({"x": 1}, workers=2),
        anyio.run(system.aask, {"x": 1}),
        anyio.run(system.aask, {"x": 1}, backend="trio"),
    ]
    for res in answers:
        assert [(s.part, s.outcome, s.message) for s in res.trace.steps] == [
            ("helper", "error", "CancelledError: ")
        ]
        assert res["approve"].status == "abstained"
    assert len({res.hash for res in answers}) == 1


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_calls_given_up_on_timeout_hold_their_threads_until_they_end(backend: str) -> None:
    """Timed-out calls go on in their threads; `threads=2` still means at most two such
    calls at once across requests, where anyio's limiter on asyncio let each wave
    of requests start two more beside the ones it had given up on."""
    cat = Catalog("slow_client")
    overlap = _Overlap()

    @cat.fn(blocking=True, timeout=0.02)
    def client(x: int) -> int:
        overlap.run("client", 0.1)
        return x

    @cat.rule
    def approve(client: int) -> bool:
        return True

    system = System(cat, [Question("approve", forced=False)], threads=2)

    async def main() -> list[str]:
        statuses: list[str] = []

        async def one(i: int) -> None:
            statuses.append((await system.aask({"x": i}))["approve"].status)

        for wave in range(3):  # each wave starts while the last one's threads still run
            async with anyio.create_task_group() as tg:
                for i in range(4):
                    tg.start_soon(one, 4 * wave + i)
        await anyio.sleep(0.25)  # the last threads end
        return statuses

    statuses = anyio.run(main, backend=backend)
    assert statuses == ["abstained"] * 12
    assert overlap.peak <= 2
    assert overlap.now == 0


#: a request whose part raises KeyboardInterrupt in a worker thread while five more
#: run in theirs, under the backend named on the command line
_INTERRUPTED_SCRIPT = """
import sys, time
import anyio
from solvi import Catalog, Question, System

cat = Catalog("interrupted")

def make(i):
    def slow(x: int) -> int:
        time.sleep(0.3)
        return x
    slow.__name__ = f"slow{i}"
    cat.fn(blocking=True, provides=f"s{i}")(slow)

for i in range(5):
    make(i)

@cat.fn(blocking=True)
def boom(x: int) -> int:
    time.sleep(0.1)
    raise KeyboardInterrupt

@cat.rule
def ok(s0: int, s1: int, s2: int, s3: int, s4: int, boom: int) -> bool:
    return True

system = System(cat, [Question("ok")])
try:
    anyio.run(system.aask, {"x": 1}, backend=sys.argv[1])
except KeyboardInterrupt:
    print("KeyboardInterrupt", flush=True)
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_keyboard_interrupt_in_a_worker_task_lets_the_process_exit(
    backend: str, tmp_path: Any
) -> None:
    """A part's KeyboardInterrupt in another worker task than the request's own comes
    out of aask as itself; on asyncio it used to escape that task, stop the loop on
    the spot, and leave anyio's worker threads waiting, so the process never exited."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPTED_SCRIPT, backend],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert (done.returncode, done.stdout) == (0, "KeyboardInterrupt\n"), done.stderr
