"""A hook's own time is never charged to the parts: not to the record's durations, nor
to the cost book that plans by measured costs."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from solvi import Catalog, System
from solvi._run import async_, scheduler, sync


class Clock:
    """A perf_counter that moves only when a hook takes its time."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Slow:
    """A hook that takes 10 s (on the clock) to hear of each call's start and end."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def step_started(self, event: Any) -> None:
        self.clock.now += 10

    def step_finished(self, event: Any) -> None:
        self.clock.now += 10


def _catalog() -> Catalog:
    cat = Catalog("timed")

    @cat.fn
    def first(x: int) -> int:
        return x

    @cat.fn
    async def second(first: int) -> int:
        return first + 1

    @cat.fn
    def third(second: int) -> int:
        return second + 1

    @cat.rule
    def answer(third: int) -> int:
        return third

    return cat


@pytest.mark.parametrize("driver", ["ask", "threads", "asyncio", "trio"])
def test_a_slow_hook_s_time_is_not_the_parts(monkeypatch: pytest.MonkeyPatch, driver: str) -> None:
    clock = Clock()
    for module in (scheduler, sync, async_):
        monkeypatch.setattr(module, "perf_counter", clock)
    system = System(_catalog(), hooks=[Slow(clock)])
    if driver == "ask":
        response = system.ask({"x": 1})
    elif driver == "threads":
        response = system.ask({"x": 1}, workers=2)
    else:
        response = anyio.run(functools.partial(system.aask, {"x": 1}), backend=driver)
    steps = response.record["steps"]
    assert [s["part"] for s in steps] == ["first", "second", "third", "answer"]
    assert {s["part"]: s["duration_ms"] for s in steps} == dict.fromkeys(
        ("first", "second", "third", "answer"), 0.0
    )
    assert all(system.cost_book.mean(s["part"]) == 0.0 for s in steps)
