"""Hooks under the faults their authors make: whatever a hook raises or returns, its
request is answered, stored and closed as without it, or (a KeyboardInterrupt) left for
`recover` and never shown as running; the author is told what is wrong and where."""

from __future__ import annotations

import asyncio
import functools
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from flows.hooked import QUESTIONS, hooked_catalog

from solvi import Catalog, Question, Response, System

METHODS = ("request_started", "step_started", "step_finished", "request_finished")
DRIVERS = ("ask", "threads", "asyncio", "trio")
STATE = {"policy_id": "P-1", "claim": 40}


def _catalog() -> Catalog:
    return hooked_catalog("faulty_hooks", slow_producer=False)


class Raises:
    """A hook whose method `where` raises what `make` makes (for policy_active's step)."""

    def __init__(self, where: str, make: Callable[[], BaseException]) -> None:
        self.where = where
        self.make = make

    def _told(self, kind: str, event: Any) -> None:
        if kind == self.where and getattr(event, "part", "policy_active") == "policy_active":
            raise self.make()

    def request_started(self, event: Any) -> None:
        self._told("request_started", event)

    def step_started(self, event: Any) -> None:
        self._told("step_started", event)

    def step_finished(self, event: Any) -> None:
        self._told("step_finished", event)

    def request_finished(self, event: Any) -> None:
        self._told("request_finished", event)


def _system(tmp_path: Path, hooks: list[object]) -> System:
    return System(
        _catalog(),
        QUESTIONS,
        hooks=hooks,
        journal=str(tmp_path / "journal.db"),
        store=str(tmp_path / "store.db"),
    )


def _ask(system: System, driver: str, request_id: str) -> Response:
    if driver == "ask":
        return system.ask(STATE, request_id=request_id)
    if driver == "threads":
        return system.ask(STATE, request_id=request_id, workers=4)
    return anyio.run(functools.partial(system.aask, STATE, request_id=request_id), backend=driver)


def _hash_without_hooks() -> str:
    return System(_catalog(), QUESTIONS).ask(STATE).hash


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("where", METHODS)
def test_a_raising_hook_fails_no_request_where_warnings_are_errors(
    tmp_path: Path, where: str, driver: str
) -> None:
    """Under warnings-as-errors (this suite's own filter) the report of a failing hook
    reaches the caller only once its request is answered, stored and closed, with the
    record it has without hooks; each failure is reported once per request."""
    hook = Raises(where, lambda: ConnectionError("exporter down"))
    system = _system(tmp_path, [hook])
    with pytest.raises(RuntimeWarning, match=rf"hook Raises.{where} raised ConnectionError"):
        _ask(system, driver, "r-1")
    assert system.journal_status() == []
    assert system.store is not None
    assert system.store.get_record("r-1")["hash"] == _hash_without_hooks()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _ask(system, driver, "r-2")
    assert len(caught) == 1
    system.close()


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("where", ["step_started", "step_finished"])
def test_a_keyboard_interrupt_in_a_step_hook_shows_no_step_running(
    tmp_path: Path, where: str, driver: str
) -> None:
    """A KeyboardInterrupt goes on up, as from a part; its request stays open for
    `recover`, and no step of it is shown as running, since nothing runs it."""
    system = _system(tmp_path, [Raises(where, KeyboardInterrupt)])
    with pytest.raises(KeyboardInterrupt):
        _ask(system, driver, "r-1")
    (status,) = system.journal_status()
    assert [s.part for s in status.steps if s.state == "running"] == []
    assert [r.request_id for r in system.recover()] == ["r-1"]
    system.close()


class Ends:
    """Notes the outcome of every request_finished it hears."""

    def __init__(self) -> None:
        self.outcomes: list[str | None] = []

    def request_finished(self, event: Any) -> None:
        self.outcomes.append(event.outcome)


@pytest.mark.parametrize("driver", DRIVERS)
def test_an_interrupted_request_is_told_finished_once_as_interrupted(
    tmp_path: Path, driver: str
) -> None:
    """A KeyboardInterrupt stops the request: its hooks hear request_finished once,
    "interrupted", so a span a tracing hook opened is closed."""
    ends = Ends()
    system = _system(tmp_path, [Raises("step_started", KeyboardInterrupt), ends])
    with pytest.raises(KeyboardInterrupt):
        _ask(system, driver, "r-1")
    assert ends.outcomes == ["interrupted"]
    system.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_cancelled_request_is_told_finished_once_as_cancelled(
    tmp_path: Path, backend: str
) -> None:
    """Cancelled by its caller: "cancelled", once, and not "interrupted" after it."""
    ends = Ends()
    cat = Catalog("slow_hooks")

    @cat.fn
    async def slow(claim: int) -> int:
        await anyio.sleep(5)
        return claim

    @cat.rule
    def approve(slow: int) -> bool:
        return slow < 100

    system = System(cat, [Question("approve")], hooks=[ends])

    async def main() -> None:
        with anyio.move_on_after(0.05):
            await system.aask(STATE)

    anyio.run(main, backend=backend)
    assert ends.outcomes == ["cancelled"]
    system.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_keyboard_interrupt_in_request_finished_loses_nothing(
    tmp_path: Path, driver: str
) -> None:
    """request_finished is told once the response is kept: a hook interrupted there
    leaves the response stored and its request closed."""
    system = _system(tmp_path, [Raises("request_finished", KeyboardInterrupt)])
    with pytest.raises(KeyboardInterrupt):
        _ask(system, driver, "r-1")
    assert system.journal_status() == []
    assert system.store is not None
    assert system.store.get_record("r-1")["hash"] == _hash_without_hooks()
    system.close()


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_hook_s_own_cancelled_error_is_its_failure(driver: str) -> None:
    """A sync hook is never where a cancellation is delivered: a CancelledError out of
    it (a future it read was cancelled) is its failure, not the request's cancellation."""
    hook = Raises("step_finished", asyncio.CancelledError)
    system = System(_catalog(), QUESTIONS, hooks=[hook])
    with pytest.warns(RuntimeWarning, match="hook Raises.step_finished raised CancelledError"):
        response = _ask(system, driver, "r-1")
    assert response.hash == _hash_without_hooks()


def test_a_hook_method_that_yields_is_refused() -> None:
    """Calling a generator runs none of its body: its events would be lost unseen."""

    class Yields:
        def step_finished(self, event: Any) -> Any:
            yield event

    class AsyncYields:
        async def step_finished(self, event: Any) -> Any:
            yield event

    for hook in (Yields(), AsyncYields()):
        with pytest.raises(TypeError, match="has a step_finished that yields"):
            System(_catalog(), QUESTIONS, hooks=[hook])


def test_a_hook_method_that_returns_a_coroutine_is_reported() -> None:
    """A sync wrapper round an async method passes the check at build time; what it
    returns is closed (never left for the collector) and reported, naming the fix."""

    def traced(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any) -> Any:
            return func(*args)

        return wrapper

    told: list[str] = []

    class Exporter:
        @traced
        async def step_finished(self, event: Any) -> None:
            told.append(event.part)

    system = System(_catalog(), QUESTIONS)
    expected = "hook Exporter.step_finished returned a coroutine, which is never run"
    with pytest.warns(RuntimeWarning, match=expected):
        system.ask(STATE, hooks=[Exporter()])
    assert told == []


def test_a_hook_that_raises_nothing_reports_nothing() -> None:
    """A request whose hooks raise nothing reports nothing."""
    seen: list[str] = []

    class Counts:
        def step_finished(self, event: Any) -> None:
            seen.append(event.part)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        System(_catalog(), QUESTIONS, hooks=[Counts()]).ask(STATE)
    assert "policy" in seen
