"""Hooks: every driver tells them the same events, a bad hook never fails a request, and
without hooks there is nothing to call."""

from __future__ import annotations

import collections
from typing import Any

import anyio
import pytest
import structlog
from flows.hooked import QUESTIONS, hooked_catalog
from structlog.testing import capture_logs

from solvi import Catalog, Question, RequestEvent, StepEvent, System
from solvi.hooks import HookTable, StructlogHook


class Recorder:
    """Keeps every event it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def request_started(self, event: RequestEvent) -> None:
        self.events.append(("request_started", event))

    def step_started(self, event: StepEvent) -> None:
        self.events.append(("step_started", event))

    def step_finished(self, event: StepEvent) -> None:
        self.events.append(("step_finished", event))

    def request_finished(self, event: RequestEvent) -> None:
        self.events.append(("request_finished", event))

    def summary(self) -> collections.Counter[tuple[str, str, str | None]]:
        """Each event as (kind, part, outcome), counted: the same whatever the order."""
        out: collections.Counter[tuple[str, str, str | None]] = collections.Counter()
        for kind, event in self.events:
            part = getattr(event, "part", "")
            out[(kind, part, event.outcome)] += 1
        return out


def _catalog() -> Catalog:
    return hooked_catalog("hooked", slow_producer=True)


APPROVE = [Question("approve", forced=False)]


@pytest.mark.parametrize("policy_id", ["P-1", "lapsed"])
def test_every_driver_tells_the_same_events(policy_id: str) -> None:
    """ask, ask with threads and aask on asyncio and trio deliver the same events for the
    same request: one start and one end per call, with outcomes, and one per request."""
    state = {"policy_id": policy_id, "claim": 40}
    summaries = []
    for how in ("ask", "threads", "asyncio", "trio"):
        recorder = Recorder()
        system = System(_catalog(), QUESTIONS, hooks=[recorder])
        if how == "ask":
            response = system.ask(state)
        elif how == "threads":
            response = system.ask(state, workers=4)
        else:
            response = anyio.run(lambda s=system: s.aask(state), backend=how)
        system.close()
        summaries.append(recorder.summary())
        kinds = [kind for kind, _ in recorder.events]
        assert kinds[0] == "request_started"
        assert kinds[-1] == "request_finished"
        (finished,) = [e for k, e in recorder.events if k == "request_finished"]
        assert finished.request_id == response.request_id
        assert dict(finished.answers) == {n: a.status for n, a in response.answers.items()}
        assert finished.outcome == "ok"
        assert finished.duration is not None
    assert all(s == summaries[0] for s in summaries[1:])
    outcomes = {
        (part, outcome) for (kind, part, outcome) in summaries[0] if kind == "step_finished"
    }
    if policy_id == "P-1":
        assert ("slow_score", "timeout") in outcomes
        assert ("quick_score", "ok") in outcomes
        assert ("broken", "error") in outcomes
    else:
        assert ("policy_active", "ok") in outcomes
        assert not any(part == "approve" for part, _ in outcomes)  # early exit


def test_events_name_the_request_the_part_and_the_error() -> None:
    """A finished step says its request, catalog, part, fact, outcome, duration and message."""
    recorder = Recorder()
    system = System(_catalog(), QUESTIONS, hooks=[recorder])
    response = system.ask({"policy_id": "P-1", "claim": 40})
    (broken,) = [e for k, e in recorder.events if k == "step_finished" and e.part == "broken"]
    assert broken.request_id == response.request_id
    assert (broken.catalog, broken.fact, broken.outcome) == ("hooked", "broken", "error")
    assert broken.message == "LookupError: no such thing"
    assert broken.duration is not None
    assert broken.duration >= 0


def test_a_cancelled_request_tells_its_hooks() -> None:
    """A cancelled aask ends the step in flight as cancelled, then the request."""
    cat = Catalog("slow")

    @cat.fn
    async def wait(x: int) -> int:
        await anyio.sleep(5)
        return x

    @cat.rule
    def answer(wait: int) -> int:
        return wait

    recorder = Recorder()
    system = System(cat, hooks=[recorder])

    async def main() -> None:
        with anyio.move_on_after(0.05):
            await system.aask({"x": 1})

    anyio.run(main)
    kinds = [(k, getattr(e, "part", ""), e.outcome) for k, e in recorder.events]
    assert kinds == [
        ("request_started", "", None),
        ("step_started", "wait", None),
        ("step_finished", "wait", "cancelled"),
        ("request_finished", "", "cancelled"),
    ]


def test_a_hook_that_raises_is_reported_and_the_request_goes_on() -> None:
    """A failing hook gives a RuntimeWarning naming it; the answers are unchanged."""

    class Broken:
        def step_finished(self, event: StepEvent) -> None:
            msg = "exporter down"
            raise ConnectionError(msg)

    system = System(_catalog(), QUESTIONS, hooks=[Broken()])
    with pytest.warns(RuntimeWarning, match=r"hook Broken.step_finished raised ConnectionError"):
        response = system.ask({"policy_id": "lapsed", "claim": 40})
    assert response["approve"].status == "forced"


def test_an_object_with_no_hook_method_is_refused() -> None:
    """A hook must have at least one of the four methods."""
    with pytest.raises(TypeError, match="has none of request_started, step_started"):
        System(_catalog(), QUESTIONS, hooks=[object()])


def test_a_hook_with_a_misspelt_method_is_refused() -> None:
    """A method one letter off an event's name would never be called: its events would
    be lost without a word, even beside a method spelt right."""

    class Counter:
        def request_finished(self, event: RequestEvent) -> None:
            return None

        def step_finised(self, event: StepEvent) -> None:
            return None

        def total(self) -> int:  # a name no event is close to: fine
            return 0

    expected = "has a method step_finised, which no event calls; did you mean step_finished"
    with pytest.raises(TypeError, match=expected):
        System(_catalog(), QUESTIONS, hooks=[Counter()])


def test_a_hook_with_an_async_method_is_refused() -> None:
    """Hooks are called, never awaited: an async method would never run."""

    class Exporter:
        async def step_finished(self, event: StepEvent) -> None:
            return None

    with pytest.raises(TypeError, match="has an async step_finished; hooks are called"):
        System(_catalog(), QUESTIONS, hooks=[Exporter()])

    class Sender:
        async def __call__(self, event: StepEvent) -> None:
            return None

    class Wired:
        step_finished = Sender()  # an object whose call is async: its events would be lost

    with pytest.raises(TypeError, match="has an async step_finished; hooks are called"):
        System(_catalog(), QUESTIONS, hooks=[Wired()])


def test_without_hooks_there_is_no_table() -> None:
    """No hooks, no dispatch table: the drivers have nothing to call."""
    assert HookTable.build([]) is None
    system = System(_catalog(), QUESTIONS)
    assert system.hooks == ()


def test_a_hook_may_have_only_some_methods() -> None:
    """Only the methods a hook has are called."""

    class Ends:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def step_finished(self, event: StepEvent) -> None:
            self.parts.append(event.part)

    ends = Ends()
    System(_catalog(), QUESTIONS, hooks=[ends]).ask({"policy_id": "lapsed", "claim": 1})
    assert ends.parts == ["policy", "policy_active", "broken"]


@pytest.mark.parametrize("how", ["ask", "threads", "asyncio", "trio"])
def test_a_request_s_own_hooks_hear_that_request_only_after_the_system_s(how: str) -> None:
    """`hooks=` on one call: told that request's events, each after the System's hooks;
    the next request without them tells them nothing."""
    heard: list[tuple[str, str]] = []

    class Named:
        def __init__(self, name: str) -> None:
            self.name = name

        def step_finished(self, event: StepEvent) -> None:
            heard.append((self.name, event.part))

    system = System(_catalog(), APPROVE, hooks=[Named("system")])
    state = {"policy_id": "lapsed", "claim": 40}
    mine = Named("request")

    def one(hooks: tuple[object, ...]) -> None:
        if how == "ask":
            system.ask(state, hooks=hooks)
        elif how == "threads":
            system.ask(state, workers=4, hooks=hooks)
        else:
            anyio.run(lambda: system.aask(state, hooks=hooks), backend=how)

    one((mine,))
    assert heard == [(who, p) for p in ("policy", "policy_active") for who in ("system", "request")]
    heard.clear()
    one(())
    assert heard == [("system", "policy"), ("system", "policy_active")]
    system.close()


def test_a_request_s_hooks_work_on_a_system_without_hooks() -> None:
    """A System built without hooks still tells a request's own hooks, then none again."""
    recorder = Recorder()
    system = System(_catalog(), APPROVE)
    system.ask({"policy_id": "lapsed", "claim": 40}, hooks=[recorder])
    assert [k for k, _ in recorder.events] == [
        "request_started",
        "step_started",
        "step_finished",
        "step_started",
        "step_finished",
        "request_finished",
    ]
    system.ask({"policy_id": "lapsed", "claim": 40})
    assert len(recorder.events) == 6


def test_a_request_s_hook_with_no_method_is_refused() -> None:
    """A request's hook must have one of the four methods too; nothing runs."""
    system = System(_catalog(), APPROVE)
    with pytest.raises(TypeError, match="has none of request_started"):
        system.ask({"policy_id": "lapsed", "claim": 40}, hooks=[object()])


def test_a_request_s_hook_table_is_built_once_per_tuple_of_hooks() -> None:
    """The same tuple of hooks on every call (a server's) builds its table once; a list,
    or a hook that cannot be hashed, still works, and two equal hooks are two hooks."""
    system = System(_catalog(), APPROVE)
    recorder = Recorder()
    mine = (recorder,)
    assert system._table_with(mine) is system._table_with(mine)
    assert system._table_with([recorder]) is not system._table_with([recorder])

    class Unhashable(Recorder):
        __hash__ = None  # type: ignore[assignment]  # what the test is about

    odd = Unhashable()
    system.ask({"policy_id": "lapsed", "claim": 40}, hooks=(odd,))
    assert [k for k, _ in odd.events][-1] == "request_finished"

    class Same(Recorder):
        """Every Same equals every other, as value objects may."""

        def __eq__(self, other: object) -> bool:
            return isinstance(other, Same)

        def __hash__(self) -> int:
            return 0

    first, second = Same(), Same()
    system.ask({"policy_id": "lapsed", "claim": 40}, hooks=(first,))
    system.ask({"policy_id": "lapsed", "claim": 40}, hooks=(second,))
    assert len(first.events) == len(second.events) == 6  # each told of its own request


# -- ask_text: the extracts that make a request are steps of it for its hooks -------------


def _texts() -> Catalog:
    cat = Catalog("texts")

    @cat.extract
    def amount(text: str) -> dict[str, int]:
        return {"amount": int(text.split()[-1])}

    @cat.extract
    def unsigned(text: str) -> dict[str, int]:
        raise ValueError("no signature")

    @cat.extract
    def size(text: str, amount: int) -> dict[str, bool]:
        return {"large": amount >= 1_000}

    @cat.fn
    def fee(amount: int) -> int:
        return amount // 100

    @cat.rule
    def refund(fee: int, large: bool) -> bool:
        return fee < 5 and not large

    return cat


def _kinds(recorder: Recorder) -> list[tuple[str, str, str | None]]:
    return [(kind, getattr(event, "part", ""), event.outcome) for kind, event in recorder.events]


TEXT_EVENTS = [
    ("request_started", "", None),
    ("step_started", "amount", None),
    ("step_finished", "amount", "ok"),
    ("step_started", "unsigned", None),
    ("step_finished", "unsigned", "error"),
    ("step_started", "size", None),
    ("step_finished", "size", "ok"),
    ("step_started", "fee", None),
    ("step_finished", "fee", "ok"),
    ("step_started", "refund", None),
    ("step_finished", "refund", "ok"),
    ("request_finished", "", "ok"),
]


def _check_text_events(recorder: Recorder) -> None:
    assert _kinds(recorder) == TEXT_EVENTS
    events = [event for _, event in recorder.events]
    began, ended = events[0], events[-1]
    assert len({event.request_id for event in events}) == 1
    assert all(event.catalog == "texts" for event in events)
    steps = [event for kind, event in recorder.events if kind == "step_finished"]
    # Every step lies inside the request as its hooks are told of it.
    for step in steps:
        assert began.start <= step.start
        assert step.start + step.duration <= began.start + ended.duration + 1e-6
    unsigned = next(step for step in steps if step.part == "unsigned")
    assert unsigned.fact == "unsigned"
    assert unsigned.message is not None
    assert "no signature" in unsigned.message


def test_ask_text_tells_hooks_of_the_extracts_as_steps_of_the_request() -> None:
    recorder = Recorder()
    response = System(_texts(), hooks=[recorder]).ask_text("refund 250")
    assert response["refund"].value is True
    _check_text_events(recorder)


def test_aask_text_tells_a_requests_own_hooks_the_same_events() -> None:
    recorder = Recorder()

    async def main() -> None:
        await System(_texts()).aask_text("refund 250", hooks=[recorder])

    anyio.run(main)
    _check_text_events(recorder)


@pytest.mark.parametrize("outer_hooked", [True, False])
def test_a_request_made_by_a_part_of_a_text_request_hears_no_extract(outer_hooked: bool) -> None:
    """The extracts belong to the text request, not to one its part asks, whether the
    text request has hooks of its own or not."""
    inner_recorder, outer_recorder = Recorder(), Recorder()
    inner = Catalog("inner")

    @inner.rule
    def ok(amount: int) -> bool:
        return amount > 0

    inner_system = System(inner, hooks=[inner_recorder])
    outer = Catalog("outer")

    @outer.extract
    def amount(text: str) -> dict[str, int]:
        return {"amount": int(text.split()[-1])}

    @outer.rule
    def checked(amount: int) -> bool:
        return bool(inner_system.ask({"amount": amount})["ok"].value)

    outer_system = System(outer, hooks=[outer_recorder] if outer_hooked else [])
    assert outer_system.ask_text("pay 3")["checked"].value is True
    assert [part for _, part, _ in _kinds(inner_recorder) if part] == ["ok", "ok"]
    assert (("step_finished", "amount", "ok") in _kinds(outer_recorder)) is outer_hooked


def test_an_extract_that_never_ran_is_no_step() -> None:
    """`size` needs the amount that `amount` failed to read: it is skipped, untold."""
    recorder = Recorder()
    System(_texts(), hooks=[recorder]).ask_text("refund none")
    told = {part for kind, part, _ in _kinds(recorder) if kind == "step_started"}
    assert told == {"amount", "unsigned"}
    assert ("step_finished", "amount", "error") in _kinds(recorder)


def test_the_structlog_hook_logs_hostile_text_escaped_and_cut() -> None:
    """A part's error message and a request id come from strangers: the logged events
    hold them escaped and cut past 1,000 characters, so a JSON renderer writes neither
    control characters nor megabytes; short printable fields are logged unchanged."""
    hook = StructlogHook(structlog.get_logger("hooks-test"))
    message = "\x1b]0;pwned\x07" + "x" * 1_000_000
    step = StepEvent(
        request_id="r\x1b[2J",
        catalog="claims",
        part="score",
        fact="score",
        start=0.0,
        outcome="error",
        duration=0.5,
        message=message,
    )
    request = RequestEvent(
        request_id="r-1",
        catalog="claims",
        start=0.0,
        outcome="ok",
        duration=1.0,
        answers=(("approve\u202e", "decided"),),
    )
    with capture_logs() as events:
        hook.step_finished(step)
        hook.request_finished(request)
    shown = "\\x1b]0;pwned\\x07" + "x" * 984 + "... (999,016 more characters)"
    assert events == [
        {
            "event": "step",
            "log_level": "debug",
            "catalog": "claims",
            "request_id": "r\\x1b[2J",
            "part": "score",
            "outcome": "error",
            "duration_ms": 500.0,
        },
        {
            "event": "safeguard",
            "log_level": "warning",
            "catalog": "claims",
            "request_id": "r\\x1b[2J",
            "kind": "error",
            "part": "score",
            "message": shown,
        },
        {
            "event": "request",
            "log_level": "info",
            "catalog": "claims",
            "request_id": "r-1",
            "outcome": "ok",
            "answers": {"approve\\u202e": "decided"},
        },
    ]
