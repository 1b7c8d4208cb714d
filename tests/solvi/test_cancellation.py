"""Cancelled `aask` calls with a journal and a store in the same database: once a
cancelled call has returned, its request is closed as cancelled by its caller.

A theme file, kept here because it crosses modules: the async driver, hooks, recovery,
the journal backends and the store."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import random
import threading
import time
from typing import Any

import anyio
import pytest
from stores import Backend

from solvi import Catalog, Question, ResumeRefused, Store, System
from solvi.errors import MissingRecordError

#: the issue asks for 500 calls cancelled at random moments, per loop and database
CANCELLED = 500
#: calls started together: one runs to its end, the others get a random deadline
WAVE = 20
#: a bound on the waves, far above what 500 cancellations need
MAX_WAVES = 200
#: deadlines are drawn from [0, MAX_DELAY] seconds
MAX_DELAY = 0.005
#: native cancellations also reach the end of a call, where its answer is kept
NATIVE_MAX_DELAY = 0.015
#: each backend combination must finish well within this
BUDGET = 30.0
QUESTIONS = [Question("approve", forced=False), "limit"]


def _ms(x: int, salt: int) -> float:
    """A sleep of 0 to 3 ms, fixed by the input (so answers stay deterministic)."""
    return ((x * 7 + salt * 3) % 4) / 1000


def _catalog() -> Catalog:
    """Three layers of async parts with short sleeps, two hard checks (one async, one
    sync) that fail for some inputs, and a `blocking=True` part run in a thread."""
    cat = Catalog("cancellations")

    @cat.fn
    async def profile(x: int) -> int:
        await anyio.sleep(_ms(x, 1))
        return x % 50

    @cat.fn
    async def history(x: int) -> list[int]:
        await anyio.sleep(_ms(x, 2))
        return [x % 3, x % 5]

    @cat.check(hard=True)
    async def known(profile: int) -> bool:
        await anyio.sleep(_ms(profile, 3))
        return profile % 9 != 0

    @cat.check(hard=True)
    def adult(age: int) -> bool:
        return age >= 18

    @cat.fn(blocking=True)
    def ledger(x: int) -> int:
        time.sleep(_ms(x, 4))
        return x * 2

    @cat.fn
    async def score(profile: int, history: list[int], ledger: int) -> int:
        await anyio.sleep(_ms(ledger, 5))
        return profile + sum(history) + ledger % 7

    @cat.check
    async def affordable(score: int) -> bool:
        await anyio.sleep(_ms(score, 6))
        return score < 60

    @cat.rule
    def approve(known: bool, adult: bool, affordable: bool) -> bool:
        return affordable

    @cat.rule
    def limit(score: int) -> int:
        return score * 10

    return cat


def _stored(store: Store, request_id: str) -> bool:
    try:
        store.get_record(request_id)
    except MissingRecordError:
        return False
    return True


def _state(i: int) -> dict[str, Any]:
    return {"x": i, "age": 16 if i % 13 == 0 else 30}


class Problems:
    """Broken promises, grouped by what was promised, with a few examples of each."""

    def __init__(self) -> None:
        self.found: dict[str, list[str]] = {}

    def add(self, promise: str, example: str) -> None:
        self.found.setdefault(promise, []).append(example)

    def __bool__(self) -> bool:
        return bool(self.found)

    def __str__(self) -> str:
        lines = [
            f"{len(examples)} x {promise}; e.g. {'; '.join(examples[:3])}"
            for promise, examples in self.found.items()
        ]
        return "broken promises:\n  " + "\n  ".join(lines)


class Outcome:
    """What the calls did, and every broken promise seen while they ran."""

    def __init__(self) -> None:
        self.cancelled: list[str] = []
        self.completed: dict[str, str] = {}
        self.problems = Problems()


async def _one(
    system: System,
    request_id: str,
    state: dict[str, Any],
    delay: float | None,
    out: Outcome,
    *,
    native: bool,
) -> None:
    response = None
    if native:  # `Task.cancel()`, which goes through anyio's shields
        with contextlib.suppress(TimeoutError):  # the deadline passed: response stays None
            async with asyncio.timeout(delay):
                response = await system.aask(state, request_id=request_id)
    else:
        with anyio.move_on_after(delay):
            response = await system.aask(state, request_id=request_id)
    if response is not None:
        out.completed[request_id] = response.hash
        return
    out.cancelled.append(request_id)
    listed = {r.request_id for r in system.journal_status()}
    if request_id in listed:
        out.problems.add("cancelled call listed by journal_status() once it returned", request_id)


async def _cancel_at_random(system: System, rng: random.Random, native: bool) -> Outcome:
    out = Outcome()
    n = 0
    for wave in range(MAX_WAVES):
        if len(out.cancelled) >= CANCELLED:
            break
        async with anyio.create_task_group() as tg:
            for k in range(WAVE):
                longest = NATIVE_MAX_DELAY if native else MAX_DELAY
                delay = None if k == 0 else rng.uniform(0, longest)
                call = functools.partial(_one, native=native)
                tg.start_soon(call, system, f"w{wave}-{k}", _state(n), delay, out)
                n += 1
        listed = [r.request_id for r in system.journal_status()]
        if listed:
            out.problems.add(
                "wave whose calls have all returned, yet journal_status() lists requests",
                f"wave {wave}: {len(listed)} listed",
            )
    return out


@pytest.mark.parametrize(
    ("loop", "native"), [("asyncio", False), ("trio", False), ("asyncio", True)]
)
def test_cancelled_calls_are_closed_as_cancelled(db: Backend, loop: str, native: bool) -> None:
    """500 randomly cancelled `aask` calls: none listed or recovered, each refused as
    cancelled, or stored when it was cancelled while its answer was being kept.

    `native` cancels with `asyncio.timeout` (a plain `Task.cancel()`, as a framework
    does when its client goes away) instead of an anyio cancel scope."""
    began = time.monotonic()
    system = System(_catalog(), QUESTIONS, journal=db.spec, store=db.spec)
    rng = random.Random(f"cancellation-{db.kind}-{loop}-{native}")
    try:
        out = anyio.run(_cancel_at_random, system, rng, native, backend=loop)
        ran_for = time.monotonic() - began
        assert len(out.cancelled) >= CANCELLED, (
            f"only {len(out.cancelled)} of the calls were cancelled (the parts are too fast "
            f"for the deadlines)"
        )
        assert out.completed, "no call finished: nothing checks the stored responses"
        problems = out.problems
        if ran_for > BUDGET:
            problems.add(f"the calls took longer than {BUDGET} s", f"{ran_for:.1f} s")
        listed = [r.request_id for r in system.journal_status()]
        if listed:
            problems.add("journal_status() at the end lists requests", f"{len(listed)} listed")
        claimed = [r.request_id for r in system.recover()]
        if claimed:
            problems.add("recover() on the same System claims requests", f"{len(claimed)}")
    finally:
        system.close()

    fresh = System(_catalog(), QUESTIONS, journal=db.spec, store=db.spec)
    try:
        listed = [r.request_id for r in fresh.journal_status()]
        if listed:
            problems.add("a new System's journal_status() lists requests", f"{len(listed)} listed")
        claimed = {r.request_id for r in fresh.recover()}
        if claimed:
            problems.add(
                "a new System's recover() claims requests",
                f"{len(claimed)} claimed, {len(claimed & set(out.cancelled))} of them cancelled",
            )
        assert fresh.store is not None
        wrong_resumes = 0
        for request_id in out.cancelled:
            if wrong_resumes >= 20:
                problems.add("resume checks stopped after 20 wrong answers", "the rest untried")
                break
            if native and _stored(fresh.store, request_id):
                continue  # cancelled while its answer was kept: the keeping went on to its end
            try:
                fresh.resume(request_id)
            except ResumeRefused as exc:
                if "cancel" not in str(exc).lower():
                    wrong_resumes += 1
                    problems.add("resume refused a cancelled request without saying so", str(exc))
            else:
                wrong_resumes += 1
                problems.add("resume finished a request its caller cancelled", request_id)
        for request_id, digest in out.completed.items():
            stored = fresh.store.get_record(request_id)
            if stored["hash"] != digest:
                problems.add("a finished call's stored hash differs", request_id)
    finally:
        fresh.close()
    assert not problems, str(problems)


def test_a_native_cancel_while_the_answer_waits_for_a_thread_still_keeps_it(db: Backend) -> None:
    """`asyncio.timeout` fires while the answered request waits for a worker thread to
    store it (every thread is busy): the answer is stored and the request closed all the
    same, and the caller gets its timeout. No later `recover()` may claim the request."""
    cat = Catalog("kept")

    @cat.fn
    def profile(x: int) -> int:
        return x

    @cat.rule
    def approve(profile: int) -> bool:
        return profile > 0

    system = System(cat, [Question("approve", forced=False)], journal=db.spec, store=db.spec)

    async def main() -> None:
        total = int(anyio.to_thread.current_default_thread_limiter().total_tokens)
        release = threading.Event()
        all_busy = anyio.Event()
        started = [0]
        lock = threading.Lock()

        def hold() -> None:
            with lock:
                started[0] += 1
                last = started[0] == total
            if last:
                anyio.from_thread.run_sync(all_busy.set)
            release.wait()

        async with anyio.create_task_group() as tg:
            for _ in range(total):
                tg.start_soon(functools.partial(anyio.to_thread.run_sync, hold))
            await all_busy.wait()

            async def free_the_threads_later() -> None:
                await anyio.sleep(0.3)  # long after the timeout: the keeping waits for this
                release.set()

            tg.start_soon(free_the_threads_later)
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.05):
                    await system.aask({"x": 1})

    try:
        anyio.run(main, backend="asyncio")
        assert system.journal_status() == []
        assert system.store is not None
        assert [record["hash"] for _, record in system.store.iter_records()] != []
    finally:
        system.close()
    fresh = System(cat, [Question("approve", forced=False)], journal=db.spec, store=db.spec)
    try:
        assert fresh.recover() == []
    finally:
        fresh.close()
