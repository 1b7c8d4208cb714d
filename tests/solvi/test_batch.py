"""Batches on their own, over a stand-in for a System: input order kept, a request that
raises becomes a `Failed` in its place, concurrency bounded exactly, arguments checked."""

from __future__ import annotations

import _thread
import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from solvi import Failed, aask_many, ask_many


class Doubler:
    """Answers state["n"] * 2, raising for a state without "n"; counts calls in flight."""

    def __init__(self, meet: int = 1) -> None:
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0
        self.threads: set[int] = set()
        #: calls wait until this many are in flight together (1: never wait)
        self.barrier = threading.Barrier(meet, timeout=5) if meet > 1 else None

    def _enter(self) -> None:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
            self.threads.add(threading.get_ident())

    def _leave(self) -> None:
        with self.lock:
            self.in_flight -= 1

    def ask(self, state: Mapping[str, Any]) -> int:
        """Twice n, once `meet` calls are in flight together."""
        self._enter()
        try:
            if self.barrier is not None:
                self.barrier.wait()
            return int(state["n"]) * 2
        finally:
            self._leave()

    async def aask(self, state: Mapping[str, Any]) -> int:
        """Twice n, after letting the other tasks start."""
        self._enter()
        try:
            await anyio.sleep(0.01)
            return int(state["n"]) * 2
        finally:
            self._leave()


STATES: list[dict[str, Any]] = [{"n": 1}, {"m": 2}, {"n": 3}]


def _shape(results: list[Any]) -> list[Any]:
    return [(r.index, r.kind, r.message) if isinstance(r, Failed) else r for r in results]


def test_ask_many_keeps_order_and_puts_a_failure_in_its_place() -> None:
    """A request that raises is a Failed with its index, type and message; the rest answer."""
    results = ask_many(Doubler(), STATES, workers=2)
    assert _shape(results) == [2, (1, "KeyError", "'n'"), 6]
    assert isinstance(results[1], Failed)
    assert isinstance(results[1].error, KeyError)


def test_one_worker_runs_in_the_calling_thread() -> None:
    """workers=1 asks one after another without a pool."""
    system = Doubler()
    assert ask_many(system, [{"n": i} for i in range(4)], workers=1) == [0, 2, 4, 6]
    assert system.threads == {threading.get_ident()}
    assert system.most == 1


def test_ask_many_runs_exactly_workers_requests_at_once() -> None:
    """Three workers: three calls meet at a barrier (fewer would time out), never four."""
    system = Doubler(meet=3)
    assert ask_many(system, [{"n": i} for i in range(9)], workers=3) == list(range(0, 18, 2))
    assert system.most == 3


def test_progress_is_one_line_rewritten_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """progress=True writes done/total after each request, then a newline."""
    ask_many(Doubler(), STATES, workers=1, progress=True)
    assert capsys.readouterr().err == "\r0/3\r1/3\r2/3\r3/3\n"


@pytest.mark.parametrize("workers", [0, -1, True, 2.0])
def test_a_bad_worker_count_is_refused(workers: Any) -> None:
    """workers must be a positive whole number; the message shows what came."""
    with pytest.raises(ValueError, match=r"^workers must be a positive whole number \(at most "):
        ask_many(Doubler(), STATES, workers=workers)


@pytest.mark.parametrize(("states", "kind"), [({"n": 1}, "dict"), ("n", "str"), (3, "int")])
def test_one_state_instead_of_many_is_refused(states: Any, kind: str) -> None:
    """A single mapping or a non-iterable: the message points to system.ask."""
    with pytest.raises(TypeError) as caught:
        ask_many(Doubler(), states)
    assert str(caught.value) == (
        f"ask_many takes an iterable of states (e.g. a list of dicts), got {kind}; for one state "
        f"call system.ask(state)"
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_aask_many_keeps_order_and_bounds_requests_by_limit(backend: str) -> None:
    """On each backend: results in input order, a Failed in place, at most `limit` at once."""
    system = Doubler()
    states = [{"n": i} if i != 4 else {} for i in range(10)]
    results = anyio.run(lambda: aask_many(system, states, limit=3), backend=backend)
    assert _shape(results) == [0, 2, 4, 6, (4, "KeyError", "'n'"), 10, 12, 14, 16, 18]
    assert system.most == 3


def test_aask_many_checks_its_limit_before_starting() -> None:
    """limit=0 is refused naming limit."""
    with pytest.raises(ValueError, match=r"^limit must be a positive whole number .*got 0$"):
        anyio.run(lambda: aask_many(Doubler(), STATES, limit=0))


class Slow:
    """Takes 20 ms per request and counts them."""

    def __init__(self) -> None:
        self.calls = 0

    def ask(self, state: Mapping[str, Any]) -> int:
        """One more call, after 20 ms."""
        self.calls += 1
        time.sleep(0.02)
        return 1


def test_ctrl_c_stops_a_threaded_batch_without_running_the_rest() -> None:
    """KeyboardInterrupt in the caller drops the requests not yet begun: 200 of 20 ms on
    two workers would take 2 s; it returns after the requests already running."""
    slow = Slow()
    timer = threading.Timer(0.1, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        ask_many(slow, [{"n": i} for i in range(200)], workers=2)
    timer.join()
    assert slow.calls <= 30
    assert time.monotonic() - started < 1.0
