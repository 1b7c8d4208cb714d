"""Text in, facts out: `ask_text` and `aask_text` turn a text into a request, then ask.

The catalog's `extract` parts read the text and return dicts of facts. Their keys
are matched to the catalog's inputs (`solvi.aliases`), their dicts merged, and
the merged facts join the caller's `state` (the caller's value wins on a shared
key: it is what the caller knows, the text is what someone wrote). Then the
request is asked as usual, with ``text`` among its keys.

What the extracts did is part of the request's input, under the key
``"$extracts"``: each extract's outcome in declaration order, the keys on which
extracts disagreed (left out of the request, so the questions that need them
abstain and say which extracts gave what), the keys where the caller's state
overruled them, and which keys were renamed. So the record, its hash, a stored
decision and its replay need nothing but the input: a replay never runs the
extracts again (they may be models that answer differently each time), and the
decision is the same under `ask_text` and `aask_text`, whichever extract
finished first. Which keys were renamed does not change an answer, so it is
shown as ``record["matched"]`` and left out of the hash.

An extract that raises, times out or returns something that is not a dict of
recordable facts is a safeguard of the response, never an error of the call:
its facts are missing, and the questions that need them abstain.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from time import perf_counter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import attrs

from solvi._run.async_ import call_part
from solvi._run.scheduler import PRIOR_CALLS
from solvi._run.steps import call_sync, cause_of, current_loop, effective_timeout, part_failed
from solvi._run.threads import ThreadSlots
from solvi._tasks import each
from solvi.aliases import AliasError, Aliases
from solvi.catalog import Catalog, Part
from solvi.errors import PlanError, RecordError, RequestError, _closest
from solvi.inputs import as_state, check_request_id
from solvi.record import canonical_json, json_problem, shortened, to_record_value
from solvi.response import Answer, Response, Safeguard

if TYPE_CHECKING:
    from solvi._run.scheduler import Run
    from solvi.system import System

__all__ = [
    "EXTRACTS",
    "FROM_TEXT",
    "TEXT",
    "ExtractStep",
    "Overruled",
    "TextOutcome",
    "TextReader",
    "TextResponse",
    "aask_text",
    "ask_text",
    "check_not_text",
    "respond",
]

#: the request key that holds the text
TEXT: Final = "text"
#: the request key that holds what the extracts did (not a name any part can read)
EXTRACTS: Final = "$extracts"
_MISSING = "inputs missing: "

Outcome = Literal["ok", "error", "timeout", "skipped"]


def _readonly(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


def _json_text(value: Any) -> str | None:
    """A value's canonical JSON, to compare values as a record holds them (None: it has none)."""
    try:
        return canonical_json(to_record_value(value, "value"))
    except RecordError:
        return None


# -- what the extracts did ----------------------------------------------------------------


@attrs.frozen
class ExtractStep:
    """One extract's call: its outcome, what went wrong, and the keys it gave.

    `outcome` is ``"ok"``, ``"error"`` or ``"timeout"`` (both safeguards), or
    ``"skipped"`` when a fact it reads was not given by the extracts before it.
    """

    part: str
    outcome: Outcome
    message: str | None = None
    gave: tuple[str, ...] = ()

    def describe(self) -> str:
        """What went wrong, as a reason says it: the extract and what it did."""
        message = self.message or ""
        if self.outcome == "error" and not message.startswith(("returned", "gave")):
            return f"{self.part} raised {message}"
        if self.outcome == "skipped":
            return f"{self.part} was skipped: {message}"
        return f"{self.part} {message}"


@attrs.frozen
class Overruled:
    """A key on which the caller's state and the text disagreed: the state's value was kept."""

    state: Any
    #: extract -> the value it gave
    given: Mapping[str, Any] = attrs.field(converter=_readonly)


@attrs.frozen
class TextOutcome:
    """What the extracts of one request did, as its input records it."""

    steps: tuple[ExtractStep, ...]
    #: key -> {extract: value}, for keys the extracts gave different values: left out
    conflicts: Mapping[str, Mapping[str, Any]] = attrs.field(converter=_readonly)
    #: key -> what the caller's state said and what the extracts said
    overruled: Mapping[str, Overruled] = attrs.field(converter=_readonly)
    #: key as an extract gave it -> the input it was matched to
    matched: Mapping[str, str] = attrs.field(converter=_readonly)

    @property
    def safeguards(self) -> tuple[Safeguard, ...]:
        """The extracts that raised or timed out, in declaration order."""
        return tuple(
            Safeguard(s.outcome, s.part, s.part, s.message or "")
            for s in self.steps
            if s.outcome in ("error", "timeout")
        )

    def disagreement(self, key: str) -> str:
        """``extracts disagree: a gave 250, b gave 300``, in declaration order."""
        given = self.conflicts[key]
        said = [f"{s.part} gave {shortened(given[s.part])}" for s in self.steps if s.part in given]
        return "extracts disagree: " + ", ".join(said)

    def explain(self, answer: Answer) -> Answer:
        """An answer that abstained for missing inputs, saying what the extracts did
        about each one: which extracts disagreed on it, or which extracts failed."""
        reason = answer.reason
        at = reason.rfind(_MISSING)
        if at < 0:
            return answer
        failed = [s for s in self.steps if s.outcome in ("error", "timeout")]
        guard = None
        items = []
        for item in reason[at + len(_MISSING) :].split(", "):
            name = item.split(" (", 1)[0]
            if name in self.conflicts:
                items.append(f"{item} ({self.disagreement(name)})")
                guard = guard or "conflict"
            elif failed:
                said = "; ".join(s.describe() for s in failed)
                items.append(f"{item} (no extract gave it; {said})")
                guard = guard or failed[0].outcome
            else:
                items.append(item)
        if guard is None:
            return answer
        text = reason[: at + len(_MISSING)] + ", ".join(items)
        return attrs.evolve(answer, reason=text, guard=guard)

    def to_json(self) -> dict[str, Any]:
        """The form a request's input holds under ``"$extracts"``."""
        return {
            "steps": [
                {"part": s.part, "outcome": s.outcome, "message": s.message, "gave": list(s.gave)}
                for s in self.steps
            ],
            "conflicts": {k: dict(v) for k, v in self.conflicts.items()},
            "overruled": {
                k: {"state": o.state, "given": dict(o.given)} for k, o in self.overruled.items()
            },
            "matched": dict(self.matched),
        }

    @classmethod
    def from_json(cls, data: Any) -> TextOutcome:
        """Read what `to_json` wrote (a stored input may lack ``matched``).

        Raises:
            ValueError: `data` does not have that shape.
        """
        try:
            steps = tuple(
                ExtractStep(s["part"], s["outcome"], s["message"], tuple(s["gave"]))
                for s in data["steps"]
            )
            conflicts = {str(k): _readonly(v) for k, v in data["conflicts"].items()}
            overruled = {
                str(k): Overruled(o["state"], o["given"]) for k, o in data["overruled"].items()
            }
            matched = {str(k): str(v) for k, v in data.get("matched", {}).items()}
        except (KeyError, TypeError, AttributeError) as exc:
            msg = f"not what the extracts of a text request did ({type(exc).__name__}: {exc})"
            raise ValueError(msg) from None
        return cls(steps, conflicts, overruled, matched)


# -- the response ---------------------------------------------------------------------------


class TextResponse(Response):
    """The Response of `ask_text` and `aask_text`: a Response that also says what the
    extracts did (`text`), counts a failed extract among its `safeguards`, and gives
    the questions that abstained for want of a key the extracts disagreed on, or
    could not give, a reason saying so."""

    @cached_property
    def text(self) -> TextOutcome:
        """What the extracts did: steps, conflicts, overruled keys, matched keys."""
        return TextOutcome.from_json(self._run.state[EXTRACTS])

    def _answer(self, q: int) -> Answer:
        answer = super()._answer(q)
        if answer.status != "abstained" or answer.guard != "inputs":
            return answer
        return self.text.explain(answer)

    @cached_property
    def safeguards(self) -> tuple[Safeguard, ...]:
        """The extracts that raised or timed out, then the flow's timeouts and errors."""
        return self.text.safeguards + super().safeguards

    @cached_property
    def _body(self) -> dict[str, Any]:
        """The record without timings, and without which keys were renamed: that
        changes no answer, so the hash leaves it out."""
        body = dict(super()._body)
        inputs = dict(body["input"])
        inputs[EXTRACTS] = {k: v for k, v in inputs[EXTRACTS].items() if k != "matched"}
        body["input"] = inputs
        return body

    @property
    def record(self) -> dict[str, Any]:
        """The whole record (see `Response.record`), with ``matched``: each key an
        extract gave in another spelling, and the input it was read as."""
        record = super().record
        record["matched"] = dict(self.text.matched)
        return record

    def show(self, *, timings: bool = True) -> str:
        """`Response.show`, then one line per extract and per conflict."""
        lines = [super().show(timings=timings), "extracts"]
        steps = self.text.steps
        width = max((len(s.part) for s in steps), default=0)
        for s in steps:
            said = s.message if s.outcome != "ok" else ", ".join(s.gave) or "(nothing)"
            lines.append(f"  {s.part:<{width}}  {s.outcome:<7}  {said}".rstrip())
        if not steps:
            lines.append("  (none)")
        for key in self.text.conflicts:
            lines.append(f"  conflict on {key}: {self.text.disagreement(key)}")
        for key, o in self.text.overruled.items():
            lines.append(f"  {key}: the state's {shortened(o.state)} kept over the text's")
        return "\n".join(lines)


def respond(
    run: Run, catalog: str, catalog_version: str, *, request_id: str | None = None
) -> Response:
    """The Response of a finished run: a `TextResponse` when its input says what
    extracts did (a request made from text), else a plain `Response`."""
    data = run.state.get(EXTRACTS)
    if data is not None:
        with contextlib.suppress(ValueError):  # not what ask_text writes: a plain request
            TextOutcome.from_json(data)
            return TextResponse(run, catalog, catalog_version, request_id=request_id)
    return Response(run, catalog, catalog_version, request_id=request_id)


def _as_text(response: Response) -> TextResponse:
    """The Response of a request made from text: `System` made it with `respond`."""
    if not isinstance(response, TextResponse):
        msg = "ask_text's request produced a plain Response; System must respond with respond()"
        raise TypeError(msg)
    return response


# -- running the extracts -------------------------------------------------------------------


@attrs.frozen
class _Called:
    """One extract's call, as it ended: outcome, facts (normalised), renamed keys, times."""

    part: str
    outcome: Outcome
    message: str | None = None
    facts: Mapping[str, Any] = attrs.field(factory=dict, converter=_readonly)
    matched: Mapping[str, str] = attrs.field(factory=dict, converter=_readonly)
    start: float = 0.0
    end: float = 0.0


def _merge(called: Sequence[_Called]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The facts the extracts agree on, and per key every (extract, value) given for it."""
    given: dict[str, dict[str, Any]] = {}
    for c in called:
        for key, value in c.facts.items():
            given.setdefault(key, {})[c.part] = value
    merged = {}
    for key, values in given.items():
        if len({_json_text(v) for v in values.values()}) == 1:
            merged[key] = next(iter(values.values()))
    return merged, given


@attrs.frozen
class TextReader:
    """A catalog's extracts, checked and ready to run: built once, with the System."""

    catalog: str
    extracts: tuple[Part, ...]
    #: per extract: it reads a fact an earlier extract gives, so it waits for them all
    waits: tuple[bool, ...]
    aliases: Aliases
    #: computed fact -> the part that computes it: what no extract may give
    computed: Mapping[str, str] = attrs.field(converter=_readonly)

    @classmethod
    def of(cls, catalog: Catalog) -> TextReader:
        """The reader of `catalog`'s extracts.

        Raises:
            PlanError: a part computes ``text``, an extract reads a fact a part
                computes, or a synonym of ``aliases=`` is wrong (see `Aliases.of`).
        """
        parts = catalog.parts
        computed = {p.provides: p.name for p in parts if p.kind != "extract"}
        if TEXT in computed:
            msg = (
                f"part {computed[TEXT]!r} of catalog {catalog.name!r} computes 'text', the key "
                f"ask_text sets to the text it is given; rename what the part provides"
            )
            raise PlanError(msg, name=computed[TEXT])
        extracts = tuple(p for p in parts if p.kind == "extract")
        for p in extracts:
            for name in p.inputs:
                if name in computed:
                    msg = (
                        f"extract {p.name!r} reads {name!r}, which part {computed[name]!r} "
                        f"computes; extracts run before the flow, so an extract reads only text "
                        f"and facts earlier extracts give (read {name!r} in a fn part instead)"
                    )
                    raise PlanError(msg, name=p.name)
        waits = tuple(any(i != TEXT for i in p.inputs) for p in extracts)
        return cls(catalog.name, extracts, waits, Aliases.of(catalog), computed)

    def _args(self, part: Part, text: str, earlier: Sequence[_Called]) -> tuple[Any, ...] | str:
        """The arguments of one extract, or why it cannot run (a fact it reads is missing)."""
        facts = _merge(earlier)[0] if earlier else {}
        facts[TEXT] = text
        missing = [i for i in part.inputs if i not in facts]
        if missing:
            return _MISSING + ", ".join(missing)
        return tuple(facts[i] for i in part.inputs)

    def _facts(self, part: Part, value: Any, start: float) -> _Called:
        """An extract's returned value checked and normalised, or the error it is."""

        def refused(message: str) -> _Called:
            return _Called(part.name, "error", message, start=start, end=perf_counter())

        if inspect.iscoroutine(value):
            value.close()
            return refused("returned a coroutine; declare the extract async def")
        if not isinstance(value, Mapping):
            return refused(f"returned {type(value).__name__}, not a dict of facts")
        for key in value:
            if not isinstance(key, str):
                return refused(f"gave the key {key!r} ({type(key).__name__}); keys are strings")
        try:
            facts, matched = self.aliases.normalise(value)
        except AliasError as exc:
            return refused(f"gave an ambiguous key: {exc}")
        for key, fact in facts.items():
            if key in (TEXT, EXTRACTS):
                return refused(f"gave {key!r}, which ask_text sets; give other keys")
            if key in self.computed:
                return refused(
                    f"gave {key!r}, which part {self.computed[key]!r} computes; an extract "
                    f"gives request keys only"
                )
            problem = json_problem(fact, key)
            if problem is not None:
                return refused(problem)
        return _Called(part.name, "ok", None, facts, matched, start, perf_counter())

    def read(self, text: str, timeout: float | None) -> list[_Called]:
        """Run the extracts one after another (async ones in an event loop of their own)."""
        done: list[_Called] = []
        for part in self.extracts:
            done.append(self._one(part, text, done, timeout))
        return done

    def _one(
        self, part: Part, text: str, earlier: Sequence[_Called], timeout: float | None
    ) -> _Called:
        args = self._args(part, text, earlier)
        start = perf_counter()
        if isinstance(args, str):
            return _Called(part.name, "skipped", args, start=start, end=start)
        try:
            value = call_sync(part, args, effective_timeout(part, timeout))
        except BaseException as exc:
            if not part_failed(exc):
                raise
            return self._failed(part, exc, start)
        return self._facts(part, value, start)

    @staticmethod
    def _failed(part: Part, exc: BaseException, start: float) -> _Called:
        cause = cause_of(exc, part.name, part.provides)
        return _Called(part.name, cause.kind, cause.message, start=start, end=perf_counter())  # type: ignore[arg-type]  # a Cause's kind is "error" or "timeout"

    async def aread(self, text: str, seconds: float | None, slots: ThreadSlots) -> list[_Called]:
        """Run the extracts concurrently in one task group: those that read only the
        text at once, the others once every extract before them is done."""
        results: list[_Called | None] = [None] * len(self.extracts)
        finished = [anyio.Event() for _ in self.extracts]

        async def one(i: int) -> None:
            part = self.extracts[i]
            try:
                if self.waits[i]:
                    for event in finished[:i]:
                        await event.wait()
                earlier = [r for r in results[:i] if r is not None] if self.waits[i] else []
                args = self._args(part, text, earlier)
                start = perf_counter()
                if isinstance(args, str):
                    results[i] = _Called(part.name, "skipped", args, start=start, end=start)
                    return
                try:
                    value = await _acall(part, args, effective_timeout(part, seconds), slots)
                except BaseException as exc:
                    if not part_failed(exc):
                        raise
                    results[i] = self._failed(part, exc, start)
                    return
                results[i] = self._facts(part, value, start)
            finally:
                finished[i].set()

        await each(len(self.extracts), one)
        return [r for r in results if r is not None]

    @staticmethod
    def given(state: Mapping[str, Any] | None) -> dict[str, Any]:
        """The caller's state, checked before any extract runs: a request that would be
        refused costs no extract call.

        Raises:
            TypeError: `state` is not a mapping with string keys.
            ValueError: `state` sets ``text`` or ``$extracts``, which ask_text sets.
        """
        given_state = {} if state is None else as_state(state)
        for key in (TEXT, EXTRACTS):
            if key in given_state:
                msg = (
                    f"ask_text sets the request key {key!r} itself, but the state given "
                    f"has it too; pass the text as the first argument and leave {key!r} out "
                    f"of the state"
                )
                raise ValueError(msg)
        return given_state

    def request(
        self, called: Sequence[_Called], text: str, given_state: Mapping[str, Any]
    ) -> dict[str, Any]:
        """The request: the caller's state (checked by `given`), the facts the extracts
        agree on, the text, and what the extracts did."""
        merged, given = _merge(called)
        out = dict(given_state)
        conflicts: dict[str, dict[str, Any]] = {}
        overruled: dict[str, Overruled] = {}
        for key, values in given.items():
            if key in given_state:
                mine = _json_text(given_state[key])
                if any(_json_text(v) != mine for v in values.values()):
                    state_value = to_record_value(given_state[key], f"request key {key!r}")
                    overruled[key] = Overruled(state_value, _recorded(values))
            elif key in merged:
                out[key] = merged[key]
            else:
                conflicts[key] = _recorded(values)
        matched: dict[str, str] = {}
        for c in called:
            matched.update(c.matched)
        steps = tuple(
            ExtractStep(c.part, c.outcome, c.message, tuple(sorted(c.facts))) for c in called
        )
        out[TEXT] = text
        out[EXTRACTS] = TextOutcome(steps, conflicts, overruled, matched).to_json()
        return out


def _recorded(values: Mapping[str, Any]) -> dict[str, Any]:
    return {part: to_record_value(v, part) for part, v in values.items()}


async def _acall(
    part: Part, args: tuple[Any, ...], seconds: float | None, slots: ThreadSlots
) -> Any:
    """Call one extract on the event loop: inline, or as `aask` calls a part."""
    if not part.is_async and not part.blocking and part.timeout is None:
        return part.func(*args)
    return await call_part(part, args, seconds, slots)


# -- the System's methods (System binds these two functions as its own) --------------------


def _heard(
    system: System, reader: TextReader, called: Sequence[_Called], options: Mapping[str, Any]
) -> Any:
    """Keep the extracts' calls for the request's hooks, if it has any: a token to reset."""
    if system.hooks or options.get("hooks"):
        facts = {p.name: p.provides for p in reader.extracts}
        prior = tuple(
            (c.part, facts[c.part], c.start, c.end, c.outcome, c.message)
            for c in called
            if c.outcome != "skipped"
        )
        return PRIOR_CALLS.set(prior)
    return None


#: set while `ask_text` asks the request it made: only then may a request carry
#: ``$extracts`` (a plain request that did could claim extract safeguards never had)
FROM_TEXT: contextvars.ContextVar[bool] = contextvars.ContextVar("solvi_from_text", default=False)


def check_not_text(state: Mapping[str, Any]) -> None:
    """Refuse ``$extracts`` in a request that `ask_text` did not make.

    Raises:
        RequestError: naming the key and what to call instead.
    """
    if EXTRACTS in state and not FROM_TEXT.get():
        msg = (
            f"request key {EXTRACTS!r} is what ask_text records of its extracts; a request "
            f"may not bring it: leave it out, or ask with system.ask_text(text)"
        )
        raise RequestError(msg, key=EXTRACTS)


@functools.cache
def _options(ask: Callable[..., Any]) -> tuple[str, ...]:
    """The keyword options `ask` (or `aask`) takes, worked out once."""
    return tuple(p for p in inspect.signature(ask).parameters if p not in ("self", "state"))


def _before_extracts(
    system: System, ask: Callable[..., Any], text: object, state: Any, options: Mapping[str, Any]
) -> dict[str, Any]:
    """What `ask_text` checks before any extract runs (a paid model call, say), so that
    a request that would be refused costs none, and counts in no statistic.

    Raises:
        TypeError: `text` is not a str, `state` not a mapping with string keys, or an
            option is not one of `ask`'s (`aask`'s).
        ValueError: `state` sets ``text`` or ``$extracts``.
        RequestError: `state` sets a fact a hard check relies on, or ``request_id``
            is no id a journal could hold.
    """
    if not isinstance(text, str):
        msg = f"ask_text takes the text as a str, got {type(text).__name__}"
        raise TypeError(msg)
    given = TextReader.given(state)
    known = _options(getattr(ask, "__func__", ask))
    for name in options:
        if name not in known:
            msg = (
                f"{ask.__name__}_text got an unknown option {name!r}"
                f"{_closest(name, known)}; it takes those of {ask.__name__}: "
                f"{', '.join(known)}"
            )
            raise TypeError(msg)
    system.guard.check(given)
    if options.get("request_id") is not None:
        check_request_id(options["request_id"])
    return given


def _observe(system: System, called: Sequence[_Called]) -> tuple[int, int]:
    """Count the extracts' run times into the cost book; return their timeouts and errors."""
    system.cost_book.observe_attempts(
        (0, c.part, c.part, c.start, c.end, c.outcome, c.message)
        for c in called
        if c.outcome != "skipped"
    )
    timeouts = sum(1 for c in called if c.outcome == "timeout")
    errors = sum(1 for c in called if c.outcome == "error")
    return timeouts, errors


def ask_text(
    self: System, text: str, state: Mapping[str, Any] | None = None, **options: Any
) -> TextResponse:
    """Answer every question for the request a text makes, synchronously.

    The catalog's `extract` parts run one after another in declaration order
    (an async one in an event loop of its own, as `ask` runs async parts).
    The keys they give are matched to the catalog's inputs (`solvi.aliases`);
    the facts they agree on join `state`, where the caller's value wins; then
    the request is asked as `ask` asks it. What the extracts did is in the
    request's input under ``"$extracts"`` (see `solvi.extract`).

    Args:
        text: the text; the request's key ``text``.
        state: facts the caller knows, by name (default none).
        **options: those of `ask` (``early_exit``, ``workers``, ``timeout``,
            ``order``, ``request_id``); ``timeout`` also bounds async and
            blocking extracts without a ``timeout=`` of their own.

    Returns:
        A `TextResponse`. An extract that raises, times out or returns
        something other than a dict of facts is a safeguard in it; keys on
        which extracts disagree are left out, and the questions that need them
        abstain naming the extracts and their values.

    Raises:
        TypeError: `text` is not a str, or `state` is not a mapping with string keys.
        ValueError: `state` has ``text`` or ``$extracts``, which this sets.
        RequestError: `state` sets a fact a hard check relies on (as under `ask`).
    """
    reader: TextReader = self._text
    given = _before_extracts(self, self.ask, text, state, options)
    called = reader.read(text, options.get("timeout"))
    timeouts, errors = _observe(self, called)
    self._tally(timeouts=timeouts, errors=errors)
    request = reader.request(called, text, given)
    token = _heard(self, reader, called, options)
    text_token = FROM_TEXT.set(True)
    try:
        return _as_text(self.ask(request, **options))
    finally:
        FROM_TEXT.reset(text_token)
        if token is not None:
            PRIOR_CALLS.reset(token)


async def aask_text(
    self: System, text: str, state: Mapping[str, Any] | None = None, **options: Any
) -> TextResponse:
    """Answer every question for the request a text makes, on the running event loop.

    Every extract that can run starts at once, in one task group: async ones
    are awaited, ``blocking=True`` ones run in a worker thread (under the
    System's thread slots), other sync ones inline. An extract that reads a
    fact earlier extracts give waits for them. The request is then asked with
    `aask`. It is the request `ask_text` makes from the same text, whatever
    finished first, so the answers, the record and its hash are the same.

    Args:
        text: the text; the request's key ``text``.
        state: facts the caller knows, by name (default none).
        **options: those of `aask` (``early_exit``, ``speculate``,
            ``timeout``, ``order``, ``request_id``).

    Returns:
        A `TextResponse`, as `ask_text` returns.

    Raises:
        TypeError: `text` is not a str, or `state` is not a mapping with string keys.
        ValueError: `state` has ``text`` or ``$extracts``, which this sets.
        RequestError: `state` sets a fact a hard check relies on (as under `aask`).
    """
    reader: TextReader = self._text
    given = _before_extracts(self, self.aask, text, state, options)
    loop = current_loop()
    called = await reader.aread(text, options.get("timeout"), self._thread_slots.of(loop))
    timeouts, errors = _observe(self, called)
    self._tally(timeouts=timeouts, errors=errors)
    request = reader.request(called, text, given)
    token = _heard(self, reader, called, options)
    text_token = FROM_TEXT.set(True)
    try:
        return _as_text(await self.aask(request, **options))
    finally:
        FROM_TEXT.reset(text_token)
        if token is not None:
            PRIOR_CALLS.reset(token)
