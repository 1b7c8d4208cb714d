"""The sync driver (`solvi._run.sync`), through `ask`: early exit, threads, fallbacks,
timeouts and errors as safeguards."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import Catalog, Question, System

GOOD = {"policy_id": "P1", "claim": {"amount": 1_000}}
LAPSED = {"policy_id": "X9", "claim": {"amount": 1_000}}
BOTH_FAIL = {"policy_id": "X9", "claim": {"amount": 1_000, "sanctioned": True}}


def test_decided_answers_when_every_check_passes(claims: System) -> None:
    """With passing checks every rule decides."""
    res = claims.ask(GOOD)
    assert res["approve"].status == "decided"
    assert res["approve"].value is True
    assert res["fast_track"].value is True
    assert res.values["fraud_score"] == 0.1
    assert res.trace.skipped == (("fraud_rules", "not needed: fraud_score came from fraud_model"),)


def test_failed_hard_check_forces_and_skips_what_only_it_needed(calls: Calls) -> None:
    """A failed hard check settles its questions; steps only they needed never run."""
    system = System(claims_catalog(calls), [Question("approve", forced=False)])
    res = system.ask(LAPSED)
    answer = res["approve"]
    assert (answer.status, answer.value, answer.guard) == ("forced", False, "policy_in_force")
    assert answer.reason == "hard check policy_in_force failed"
    assert calls.names == ["policy", "policy_in_force", "not_sanctioned"]
    assert res.trace.skipped == (
        ("fraud_model", "not needed: hard check policy_in_force failed"),
        ("fraud_rules", "not needed: hard check policy_in_force failed"),
        ("fraud_ok", "not needed: hard check policy_in_force failed"),
        ("points", "not needed: hard check policy_in_force failed"),
        ("approve", "not needed: hard check policy_in_force failed"),
    )
    assert res.trace.early_exit is True
    assert "points" not in res.values


def test_other_questions_still_run_their_steps(claims: System, calls: Calls) -> None:
    """A question the failed check does not govern still gets its steps and answer."""
    res = claims.ask(LAPSED)
    assert res["approve"].status == "forced"
    assert res["fast_track"].status == "decided"
    assert "points" in calls.names
    assert "approve" not in calls.names
    assert res.trace.skipped[-1] == ("approve", "not needed: hard check policy_in_force failed")


def test_without_forced_value_the_question_abstains(calls: Calls) -> None:
    """No `forced=`: a failed hard check makes the question abstain."""
    res = System(claims_catalog(calls), ["approve"]).ask(LAPSED)
    assert res["approve"].status == "abstained"
    assert res["approve"].value is None
    assert res["approve"].guard == "policy_in_force"


def test_first_declared_failing_check_decides(claims: System) -> None:
    """With two failing hard checks the first declared names the guard, whatever ran first."""
    res = claims.ask(BOTH_FAIL)
    assert res["approve"].guard == "policy_in_force"
    threaded = claims.ask(BOTH_FAIL, workers=4)
    assert threaded["approve"] == res["approve"]
    only_sanctions = claims.ask({"policy_id": "P1", "claim": {"sanctioned": True}})
    assert only_sanctions["approve"].guard == "not_sanctioned"


def test_whole_flow_gives_identical_answers_and_every_value(claims: System, calls: Calls) -> None:
    """`early_exit=False` runs everything; answers equal the early-exit ones."""
    early = claims.ask(LAPSED)
    calls.names.clear()
    full = claims.ask(LAPSED, early_exit=False)
    assert full.answers == early.answers
    assert full.trace.early_exit is False
    assert full.values["points"] == 2
    assert "approve" in full.values
    assert full.trace.skipped == (("fraud_rules", "not needed: fraud_score came from fraud_model"),)
    assert full.record["early_exit"] is False
    assert full.hash != early.hash


def test_hash_is_identical_across_workers_and_runs(claims: System) -> None:
    """Records are written in flow order, so threads do not change the hash."""
    for state in (GOOD, LAPSED, BOTH_FAIL, {"policy_id": "P", "claim": {"model_down": True}}):
        hashes = {claims.ask(state, workers=w).hash for w in (1, 2, 4, 8) for _ in range(3)}
        assert len(hashes) == 1


def test_failing_producer_falls_back_to_the_next_and_is_a_safeguard(claims: System) -> None:
    """A part that raises is recorded; the next producer of its fact is tried."""
    res = claims.ask({"policy_id": "P1", "claim": {"model_down": True, "amount": 20_000}})
    assert res.values["fraud_score"] == 0.5
    assert res["approve"].status == "decided"
    (guard,) = res.safeguards
    assert (guard.kind, guard.part, guard.fact) == ("error", "fraud_model", "fraud_score")
    assert guard.message == "ConnectionError: model server unreachable"
    assert claims.stats == {"requests": 1, "timeouts": 0, "errors": 1}


def _slow_catalog(sleep: float, *, part_timeout: float | None) -> Catalog:
    cat = Catalog("slow")

    @cat.fn(provides="score", timeout=part_timeout, blocking=True)
    def slow_score(x: int) -> int:
        time.sleep(sleep)
        return 100

    @cat.fn(provides="score")
    def quick_score(x: int) -> int:
        return 1

    @cat.rule
    def answer(score: int) -> int:
        return score

    return cat


def test_timeout_falls_back_and_returns_on_time() -> None:
    """A part past its timeout is abandoned on time; the next producer answers."""
    system = System(_slow_catalog(2.0, part_timeout=0.05))
    began = time.perf_counter()
    res = system.ask({"x": 1})
    assert time.perf_counter() - began < 1.0
    assert res["answer"].value == 1
    (guard,) = res.safeguards
    assert (guard.kind, guard.message) == ("timeout", "timed out after 0.05 s")
    assert system.stats["timeouts"] == 1


def test_call_timeout_applies_to_blocking_parts_without_their_own() -> None:
    """`ask(timeout=)` bounds blocking and async parts that set no timeout."""
    system = System(_slow_catalog(2.0, part_timeout=None))
    res = system.ask({"x": 1}, timeout=0.05)
    assert res["answer"].value == 1
    assert res.safeguards[0].message == "timed out after 0.05 s"


def test_call_timeout_leaves_plain_sync_parts_inline() -> None:
    """A plain sync part is never moved to a thread by a request timeout."""
    cat = Catalog("plain")

    @cat.fn
    def score(x: int) -> int:
        time.sleep(0.1)
        return 7

    @cat.rule
    def answer(score: int) -> int:
        return score

    res = System(cat, timeout=0.01).ask({"x": 1})
    assert res["answer"].value == 7
    assert res.safeguards == ()


def test_question_abstains_with_timeout_guard_when_no_producer_answers() -> None:
    """The last producer timing out leaves the fact missing: guard `timeout`."""
    cat = Catalog("slow")

    @cat.fn(timeout=0.05)
    def score(x: int) -> int:
        time.sleep(1.0)
        return 1

    @cat.fn
    def doubled(score: int) -> int:
        return score * 2

    @cat.rule
    def answer(doubled: int) -> int:
        return doubled

    res = System(cat).ask({"x": 1})
    assert res["answer"].status == "abstained"
    assert res["answer"].guard == "timeout"
    assert res["answer"].reason == "score: score timed out after 0.05 s"
    assert res.trace.skipped == (
        ("doubled", "inputs missing: score (score timed out after 0.05 s)"),
        ("answer", "inputs missing: score (score timed out after 0.05 s)"),
    )


def test_hard_check_that_raises_could_not_be_evaluated_and_never_forces() -> None:
    """A hard check that errors makes its questions abstain, never forced."""
    cat = Catalog("c")

    @cat.check(hard=True)
    def in_force(policy_id: str) -> bool:
        raise LookupError("policy service down")

    @cat.fn
    def expensive(policy_id: str) -> int:
        return 1

    @cat.rule
    def approve(in_force: bool, expensive: int) -> bool:
        return True

    res = System(cat, [Question("approve", forced=False)]).ask({"policy_id": "P"})
    answer = res["approve"]
    assert answer.status == "abstained"
    assert answer.guard == "error"
    assert answer.reason == (
        "hard check in_force could not be evaluated: in_force: in_force raised "
        "LookupError: policy service down"
    )
    assert ("expensive", "not needed: hard check in_force could not be evaluated") in (
        res.trace.skipped
    )


def test_async_parts_run_in_a_loop_of_their_own() -> None:
    """`ask` awaits async parts, one event loop per call."""
    cat = Catalog("a")

    @cat.fn
    async def remote(x: int) -> int:
        await anyio.lowlevel.checkpoint()
        return x + 1

    @cat.rule
    def answer(remote: int) -> int:
        return remote

    system = System(cat)
    assert system.is_async
    assert system.ask({"x": 1})["answer"].value == 2


def test_ask_inside_a_running_loop_uses_a_worker_thread() -> None:
    """Called from async code, `ask` still runs async parts (in another thread)."""
    cat = Catalog("a")

    @cat.fn(timeout=1.0)
    async def remote(x: int) -> int:
        return x + 1

    @cat.rule
    def answer(remote: int) -> int:
        return remote

    system = System(cat)

    async def main() -> int:
        return int(system.ask({"x": 41})["answer"].value)

    assert asyncio.run(main()) == 42


def test_bad_state_and_options_are_rejected_clearly(claims: System) -> None:
    """A non-mapping state or non-string keys get a TypeError that says what to pass."""
    with pytest.raises(TypeError, match="must be a mapping"):
        claims.ask([("claim", 1)])  # type: ignore[arg-type]  # wrong type on purpose
    with pytest.raises(TypeError, match="keys must be strings"):
        claims.ask({1: "x"})  # type: ignore[dict-item]  # wrong type on purpose
    with pytest.raises(ValueError, match="workers must be a positive whole number"):
        System(claims.catalog, workers=0)


def _arities_catalog(*, raising: bool = False) -> Catalog:
    """Parts of 0 to 5 inputs, each result telling which input came in which place."""
    cat = Catalog("arities")

    @cat.fn
    def n0() -> int:
        return 1

    @cat.fn
    def n1(x: int) -> int:
        return x * 10 + 2

    @cat.fn
    def n2(n1: int, x: int) -> int:
        return n1 * 10 + x

    @cat.fn
    def n3(n2: int, n0: int, x: int) -> int:
        if raising:
            raise ValueError("three went wrong")
        return (n2 * 10 + n0) * 10 + x

    @cat.fn
    def n5(x: int, n0: int, n1: int, n2: int, n3: int) -> tuple[int, ...]:
        return (x, n0, n1, n2, n3)

    @cat.rule
    def answer(n5: tuple[int, ...]) -> tuple[int, ...]:
        return n5

    return cat


def test_each_input_reaches_its_place_whatever_a_part_takes() -> None:
    """The fast path passes up to three inputs one by one and more through a getter:
    every part sees its inputs in its own order, as the threaded driver passes them."""
    expected = (3, 1, 32, 323, 32313)
    for workers in (1, 2):
        res = System(_arities_catalog(), workers=workers).ask({"x": 3})
        assert res["answer"].value == expected
        assert [res.values[f] for f in ("n0", "n1", "n2", "n3")] == [1, 32, 323, 32313]


def test_a_part_of_three_inputs_that_raises_is_recorded_on_the_fast_path() -> None:
    """A raise from a part called with its inputs one by one is a safeguard, like any
    other: what reads it is blocked, and the request still ends."""
    res = System(_arities_catalog(raising=True)).ask({"x": 3})
    assert (res["answer"].status, res["answer"].guard) == ("abstained", "error")
    step = res.trace.steps[-1]
    assert (step.part, step.outcome, step.message) == (
        "n3",
        "error",
        "ValueError: three went wrong",
    )
    assert res.trace.skipped[0] == (
        "n5",
        "inputs missing: n3 (n3 raised ValueError: three went wrong)",
    )


def test_closing_the_system_fails_requests_in_flight_instead_of_hanging() -> None:
    """`close()` while `ask(workers=N)` runs takes the queued steps off the pool: the
    requests in flight raise an error saying so, and none waits for ever."""
    cat = Catalog("closing")
    step_started = threading.Barrier(3)

    @cat.fn
    def a(x: int) -> int:
        if x < 2:
            step_started.wait(5)
            time.sleep(0.3)  # both threads stay busy while the third request queues
        return x + 1

    @cat.fn
    def b(a: int) -> int:  # queued once `a` is done, after the pool is shut down
        return a

    @cat.rule
    def answer(b: int) -> bool:
        return b > 0

    system = System(cat, [Question("answer", forced=False)], workers=2)
    outcomes: list[str] = []

    def ask(x: int) -> None:
        try:
            system.ask({"x": x})
        except RuntimeError as exc:
            outcomes.append(str(exc))
        else:
            outcomes.append("answered")

    # Two requests' first steps take both threads; the third one's waits in the queue.
    threads = [threading.Thread(target=ask, args=(x,), daemon=True) for x in range(3)]
    threads[0].start()
    threads[1].start()
    step_started.wait(5)
    threads[2].start()
    time.sleep(0.1)
    system.close()
    for thread in threads:
        thread.join(5)
    assert not any(thread.is_alive() for thread in threads), "a request still waits"
    assert len(outcomes) == 3
    assert all("System was closed while this request ran" in o for o in outcomes), outcomes


def test_workers_per_request_share_a_few_pools_and_bound_each_request() -> None:
    """`ask(workers=w)` for 60 different w keeps pools of power-of-two sizes (7, not
    60), and no request runs more than its own `workers` steps at once."""
    cat = Catalog("wide")
    running = [0]
    most: list[int] = []
    lock = threading.Lock()

    def step_named(name: str) -> Any:
        def step(x: int) -> int:
            with lock:
                running[0] += 1
                most.append(running[0])
            time.sleep(0.002)
            with lock:
                running[0] -= 1
            return x

        step.__name__ = step.__qualname__ = name
        return step

    for i in range(8):
        cat.fn(step_named(f"s{i}"))

    @cat.rule
    def total(s0: int, s1: int, s2: int, s3: int, s4: int, s5: int, s6: int, s7: int) -> int:
        return s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7

    system = System(cat)
    for workers in range(2, 62):
        most.clear()
        assert system.ask({"x": 1}, workers=workers)["total"].value == 8
        assert max(most) <= workers
    assert sorted(system._pools) == [2, 4, 8, 16, 32, 64]
    system.close()


def test_calls_given_up_under_ask_hold_at_most_threads_threads() -> None:
    """A part that hangs for good, under its own timeout: each request gives its call
    up and the thread runs on. Those threads count against System(threads=N), as under
    aask: once N run, the next call waits for one within its timeout, then says so,
    and starts no thread; once they end, calls run again."""
    release = threading.Event()
    cat = Catalog("stuck")

    @cat.fn(timeout=0.02)
    def quote(item: str) -> float:
        release.wait(30)
        return 1.0

    @cat.rule
    def price(quote: float) -> float:
        return quote

    def part_threads() -> int:
        return sum(t.name == "solvi-part" and t.is_alive() for t in threading.enumerate())

    before = part_threads()
    system = System(cat, threads=2)
    try:
        causes = []
        for _ in range(6):
            answer = system.ask({"item": "lamp"})["price"]
            assert (answer.status, answer.guard) == ("abstained", "timeout")
            causes.append(answer.reason)
        assert part_threads() - before == 2
        assert len(set(causes[:2])) == 1
        assert "waiting" not in causes[0]
        assert causes[2:] == [causes[2]] * 4
        assert "timed out after 0.02 s, waiting for one of the System's 2 threads" in causes[2]
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while part_threads() > before:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert system.ask({"item": "lamp"})["price"].value == 1.0
    system.close()


class _Told:
    """A hook that keeps every event in order, with a mark where the request ended."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str | None]] = []

    def step_started(self, event: Any) -> None:
        self.events.append(("step_started", event.part, None))

    def step_finished(self, event: Any) -> None:
        self.events.append(("step_finished", event.part, event.outcome))

    def request_finished(self, event: Any) -> None:
        self.events.append(("request_finished", "", event.outcome))


def _interrupted_catalog(ran: list[str]) -> Catalog:
    """Siblings of a part that raises KeyboardInterrupt at 0.1 s: two still running
    then, and a fact whose first producer fails at 0.15 s, so its second would start."""
    cat = Catalog("interrupt_siblings")

    @cat.fn
    def base(x: int) -> int:
        return x

    @cat.fn(blocking=True)
    def boom(base: int) -> int:
        time.sleep(0.1)
        raise KeyboardInterrupt

    @cat.fn(blocking=True)
    def slow(base: int) -> int:
        time.sleep(0.4)
        ran.append("slow")
        return base

    @cat.fn(blocking=True, provides="q")
    def q_first(base: int) -> int:
        time.sleep(0.15)
        ran.append("q_first")
        raise ValueError("down")

    @cat.fn(provides="q")
    def q_second(base: int) -> int:
        ran.append("q_second")
        return base

    @cat.rule
    def ok(boom: int, slow: int, q: int) -> bool:
        return True

    return cat


def test_an_interrupt_under_workers_stops_the_request_at_once(tmp_path: Any) -> None:
    """Under ask(workers=N) an interrupt gives the request up as aask does: no call
    starts after it (not even a fallback producer), the hooks hear each call still
    running end as cancelled, then the request's end, and nothing after; nothing more
    is journaled, though the calls' threads finish later."""
    ran: list[str] = []
    told = _Told()
    system = System(
        _interrupted_catalog(ran),
        [Question("ok")],
        hooks=[told],
        journal=str(tmp_path / "journal.db"),
    )
    with pytest.raises(KeyboardInterrupt):
        system.ask({"x": 1}, request_id="r", workers=4)
    at_raise = list(told.events)
    assert system.journal is not None
    entries_at_raise = [(e.kind, e.part) for e in system.journal.load("r").entries]
    time.sleep(0.6)  # the threads of slow and q_first end meanwhile
    assert told.events == at_raise
    assert at_raise[-1] == ("request_finished", "", "interrupted")
    ended = {(part, outcome) for kind, part, outcome in at_raise if kind == "step_finished"}
    assert {("slow", "cancelled"), ("q_first", "cancelled")} <= ended
    assert sorted(ran) == ["q_first", "slow"]  # they ran to their end; q_second never began
    assert [(e.kind, e.part) for e in system.journal.load("r").entries] == entries_at_raise
    assert ("started", "q_second") not in entries_at_raise
    system.close()
