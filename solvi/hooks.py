"""Hooks: objects told when a request and each of its steps start and finish.

A hook is any object with some of `request_started`, `step_started`,
`step_finished` and `request_finished`; each is called with a frozen event. Pass
hooks to `System(hooks=[...])`, or to one call (`ask(state, hooks=[...])`, after
the System's). Which methods exist is looked up once, when the System is built,
so a System without hooks pays nothing, and a hook pays only for the methods it
has. `ask`, `ask(workers=N)` and `aask` deliver the same
events for the same request (concurrent steps in the order they happened).

Hooks run on the thread of the step they describe (a worker thread under
`workers=N`, the event loop under `aask`): keep them quick, and hand anything
slow (a network export) to a queue of your own. A hook that raises is reported
as a `RuntimeWarning` once its request is answered, stored and closed, so that
it never fails the request, even where warnings are errors.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import warnings
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from solvi._terminal import visible
from solvi.errors import _described

__all__ = [
    "Hook",
    "HookTable",
    "RequestEvent",
    "StepEvent",
    "StructlogHook",
    "report_failures",
    "told_finished",
]

Outcome = Literal["ok", "error", "timeout", "interrupted", "cancelled"]


@attrs.frozen
class StepEvent:
    """One call of one part.

    `start` is seconds on `time.perf_counter`'s clock; `duration` and `outcome` are
    None on `step_started`. `message` says why a call did not return a value.
    """

    request_id: str | None
    catalog: str
    part: str
    fact: str
    start: float
    outcome: Outcome | None = None
    duration: float | None = None
    message: str | None = None

    @property
    def failed(self) -> bool:
        """The call ended without a value (it raised, timed out, or a crash interrupted
        it): a safeguard of the request. A call cancelled with its request (a client
        gone away) is no failure of the part."""
        return self.outcome is not None and self.outcome not in ("ok", "cancelled")


@attrs.frozen
class RequestEvent:
    """One request. `outcome` is ``"ok"`` (it has its response), ``"cancelled"`` (by
    its caller) or ``"interrupted"`` (by what is no part's failure: a
    KeyboardInterrupt, SystemExit, a bug; it stays open for `recover`); None on
    `request_started`, as is `duration`."""

    request_id: str | None
    catalog: str
    start: float
    outcome: Literal["ok", "cancelled", "interrupted"] | None = None
    duration: float | None = None
    #: on `request_finished` with ``"ok"``: each question's status
    answers: tuple[tuple[str, str], ...] = ()


@runtime_checkable
class Hook(Protocol):
    """What a hook may have; every method is optional (an object with none is refused)."""

    def request_started(self, event: RequestEvent) -> None:
        """A request begins: nothing of its flow has run (a text request's extracts
        have; they are told next, see `System.ask_text`)."""

    def step_started(self, event: StepEvent) -> None:
        """A part is about to be called (after its journaled start, if any)."""

    def step_finished(self, event: StepEvent) -> None:
        """A part's call ended: returned, raised, timed out or was cancelled."""

    def request_finished(self, event: RequestEvent) -> None:
        """A request has its response, or its caller cancelled it."""


_METHODS = ("request_started", "step_started", "step_finished", "request_finished")


#: a hook method as the table calls it: with the event, and the request's list of what
#: its hooks did wrong (reported once the request is over, see `report_failures`)
Guarded = Callable[[Any, list[str]], None]


def _guarded(method: Callable[[Any], Any], hook: object, name: str) -> Guarded:
    """`method`, never raising into the run: what it raises, a CancelledError of its
    own included (a sync hook cannot be where a cancellation is delivered), is noted
    in `failed`. KeyboardInterrupt and SystemExit go on up."""
    where = f"{type(hook).__name__}.{name}"

    def call(event: Any, failed: list[str]) -> None:
        try:
            result = method(event)
        except (Exception, asyncio.CancelledError) as exc:
            failed.append(f"hook {where} raised {_described(exc)}; the request goes on")
            return
        if result is not None and (inspect.isawaitable(result) or inspect.isgenerator(result)):
            close = getattr(result, "close", None)
            if close is not None:
                close()  # never run: no "never awaited" warning from the collector
            failed.append(
                f"hook {where} returned a {type(result).__name__}, which is never run: "
                f"hooks are called, never awaited or iterated, so make {name} a plain def "
                f"that does its work when called"
            )

    return call


def report_failures(failed: list[str], stacklevel: int = 2) -> None:
    """Warn of what a request's hooks raised, each message once, after the request has
    been answered, stored and closed: a filter that makes warnings errors then fails
    the caller, never the request or its record."""
    for message in dict.fromkeys(failed):
        warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


def _never_run(method: Any) -> str | None:
    """What makes a hook method's body never run when it is called (said with
    ``{name}`` for the method's name), or None."""
    call = type(method).__call__  # an object's own async __call__ counts too
    if inspect.iscoroutinefunction(method) or inspect.iscoroutinefunction(call):
        return (
            "an async {name}; hooks are called as the request runs, never awaited, so make "
            "it a plain def (and hand any slow work to a queue or a task of your own)"
        )
    if inspect.isgeneratorfunction(method) or inspect.isasyncgenfunction(method):
        return (
            "a {name} that yields, so calling it runs none of its body; hooks are called, "
            "never iterated: make it a plain def without yield"
        )
    return None


def _refuse_misspelt(hook: object) -> None:
    """Refuse a hook with a method whose name is one letter or two off an event's: no
    event would ever call it, and its events would be lost without a word."""
    for name in dir(type(hook)):
        if name.startswith("_") or name in _METHODS:
            continue
        if not callable(getattr(hook, name, None)):
            continue
        close = difflib.get_close_matches(name, _METHODS, n=1, cutoff=0.85)
        if close:
            msg = (
                f"hook {hook!r} has a method {name}, which no event calls; did you mean "
                f"{close[0]}? (the events are {', '.join(_METHODS)})"
            )
            raise TypeError(msg)


@attrs.frozen
class HookTable:
    """The hooks' methods per event, looked up once (the dispatch table)."""

    request_started: tuple[Guarded, ...] = ()
    step_started: tuple[Guarded, ...] = ()
    step_finished: tuple[Guarded, ...] = ()
    request_finished: tuple[Guarded, ...] = ()

    @classmethod
    def build(cls, hooks: Iterable[object], base: HookTable | None = None) -> HookTable | None:
        """The table for `hooks` after those of `base` (a System's, under a request's
        own hooks), or None when there are none (nothing to pay).

        Raises:
            TypeError: a hook has none of the four methods, an async one, a generator,
                or one whose name is a near miss of an event's (``step_finised``).
        """
        table: dict[str, list[Guarded]] = {
            name: [] if base is None else list(getattr(base, name)) for name in _METHODS
        }
        for hook in hooks:
            _refuse_misspelt(hook)
            found = [name for name in _METHODS if callable(getattr(hook, name, None))]
            if not found:
                msg = (
                    f"hook {hook!r} has none of {', '.join(_METHODS)}; give it at least one "
                    f"(see solvi.Hook)"
                )
                raise TypeError(msg)
            for name in found:
                method = getattr(hook, name)
                wrong = _never_run(method)
                if wrong is not None:
                    msg = f"hook {hook!r} has {wrong.format(name=name)}"
                    raise TypeError(msg)
                table[name].append(_guarded(method, hook, name))
        if not any(table.values()):
            return None
        return cls(**{name: tuple(calls) for name, calls in table.items()})

    def emit(self, kind: str, event: Any, failed: list[str]) -> None:
        """Call every method registered for `kind`, noting their failures in `failed`."""
        for call in getattr(self, kind):
            call(event, failed)


def told_finished(run: Any, response: Any) -> None:
    """Tell a run's hooks (`solvi._run.scheduler.Run`) that its request has its
    `response`, once that is kept (a hook that raises a KeyboardInterrupt then loses
    nothing of the request), or, with no response and no cancellation told, that it
    was interrupted (a KeyboardInterrupt, a bug): a span a hook opened is then closed."""
    if run.hooks is not None:
        if response is not None:
            run.request_ended("ok", response.answers)
        else:
            run.request_ended("interrupted")


def _logged(text: str | None) -> str | None:
    """A text field of a logged event through `visible`: a part's error message or a
    request id comes from a stranger, and a renderer other than structlog's console
    one writes it as it is (logfmt an escape sequence, JSON a bidi override), all ten
    megabytes of it."""
    return None if text is None else visible(text)


class StructlogHook:
    """Structured events through a structlog logger: ``step`` (debug) per call,
    ``safeguard`` (warning) per call that did not return, ``request`` (info) per
    request, each bound to the catalog.

    Text fields (the catalog, request id, part, message and the answers' questions)
    are logged as `solvi._terminal.visible` shows them: what a terminal would act on
    escaped, and cut past 1,000 characters. The record keeps them exact.
    """

    def __init__(self, logger: Any = None) -> None:
        if logger is None:
            import structlog

            logger = structlog.get_logger("solvi")
        self.logger = logger

    def step_finished(self, event: StepEvent) -> None:
        """Log the call, and a safeguard when it did not return a value."""
        log = self._bound(event.catalog, event.request_id)
        duration_ms = None if event.duration is None else event.duration * 1000
        part = visible(event.part)
        log.debug("step", part=part, outcome=event.outcome, duration_ms=duration_ms)
        if event.failed:
            log.warning("safeguard", kind=event.outcome, part=part, message=_logged(event.message))

    def request_finished(self, event: RequestEvent) -> None:
        """Log the request with each question's status."""
        log = self._bound(event.catalog, event.request_id)
        answers = {visible(name): visible(status) for name, status in event.answers}
        log.info("request", outcome=event.outcome, answers=answers)

    def _bound(self, catalog: str, request_id: str | None) -> Any:
        """The logger bound to the event's catalog and request id."""
        return self.logger.bind(catalog=visible(catalog), request_id=_logged(request_id))
