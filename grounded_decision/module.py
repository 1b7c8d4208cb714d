"""A policy module: steps a chart per entity and decides, with six checks, to act or abstain."""

from __future__ import annotations

import enum
import json
import math
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from grounded_decision._listing import listed, shown
from grounded_decision.checks import (
    CHECK_NAMES,
    PAYOFF_BEST_CASE,
    Channel,
    Progress,
    evidence_checks,
    game_check,
    is_metric,
    shape_check,
    solve_progress,
)
from grounded_decision.errors import ChartError, EvidenceError, RecordError
from grounded_decision.evidence import Evidence, EvidenceRules
from grounded_decision.policy.automata import compile_policy, dfa_to_statechart
from grounded_decision.policy.parse import Expr
from grounded_decision.statechart.chart import Statechart
from grounded_decision.statechart.game import Limits

__all__ = ["Decision", "Event", "Module", "Verdict"]


class Verdict(enum.Enum):
    """What a decision says: act on the proposed action, or abstain."""

    ACT = "act"
    ABSTAIN = "abstain"


@attrs.frozen
class Event:
    """Something that happened to an entity (a ticket, an incident, a payment).

    Parameters:
        name: the event, as the chart's transitions name it.
        entity: which entity it happened to; each entity has its own current state.
    """

    name: str = attrs.field(validator=lambda _, __, v: _check_text("Event name", v))
    entity: str = attrs.field(
        default="default", validator=lambda _, __, v: _check_text("Event entity", v)
    )


#: the record's text fields, and the one of them that may also be null
_TEXT_FIELDS = ("module", "event", "entity", "from_state", "reason", "proposed_action")


def _check_record_fields(data: Mapping[str, Any]) -> None:
    """Refuse a record whose fields have the wrong types or that contradicts itself."""
    for key in ("channels", *_TEXT_FIELDS, "verdict", "extras"):
        if key not in data:
            msg = f"decision record is missing field {key!r}; pass Decision.to_dict output"
            raise RecordError(msg)
    for key in _TEXT_FIELDS:
        value = data.get(key)
        if not isinstance(value, str) and not (key == "proposed_action" and value is None):
            msg = f"decision record field {key!r} must be a string, got {_shown(value)}"
            raise RecordError(msg)
    extras, channels = data.get("extras"), data.get("channels")
    if not isinstance(extras, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in extras.items()
    ):
        msg = f"decision record field 'extras' must map names to strings, got {_shown(extras)}"
        raise RecordError(msg)
    if "state" not in extras:
        msg = "decision record field 'extras' must name the state reached: {'state': ...}"
        raise RecordError(msg)
    if not isinstance(channels, list | tuple) or not all(isinstance(c, Mapping) for c in channels):
        msg = "decision record field 'channels' must be a list of the six check reports"
        raise RecordError(msg)
    names = tuple(c.get("name") for c in channels)
    if names != CHECK_NAMES:
        msg = f"decision record's checks are {names}, not {CHECK_NAMES}"
        raise RecordError(msg)
    for channel in channels:
        _check_channel_fields(channel)
    if data.get("verdict") == Verdict.ACT.value and (
        data.get("proposed_action") is None or not all(c["passed"] for c in channels)
    ):
        msg = "decision record says act, but a check failed or no action was proposed"
        raise RecordError(msg)


def _shown(value: object) -> str:
    """A value as an error shows it: short however large (a 5,000-digit int, a long list)."""
    return f"{shown(value)} ({type(value).__name__})"


def _check_channel_fields(channel: Mapping[str, Any]) -> None:
    """Refuse a check report whose fields are missing or of the wrong type."""
    name = channel["name"]
    for key in ("passed", "summary", "metrics", "trust", "refs"):
        if key not in channel:
            msg = f"decision record's {name!r} check is missing field {key!r}"
            raise RecordError(msg)
    where = f"decision record's {name!r} check:"
    if not isinstance(channel["passed"], bool):
        msg = f"{where} 'passed' must be true or false, got {_shown(channel['passed'])}"
        raise RecordError(msg)
    for key in ("summary", "trust"):
        if not isinstance(channel[key], str):
            msg = f"{where} {key!r} must be a string, got {_shown(channel[key])}"
            raise RecordError(msg)
    metrics = channel["metrics"]
    if not isinstance(metrics, Mapping):
        msg = f"{where} 'metrics' must be an object of named numbers, got {_shown(metrics)}"
        raise RecordError(msg)
    for key, value in metrics.items():
        if not isinstance(key, str) or not is_metric(value):
            msg = (
                f"{where} metric {_shown(key)} is {_shown(value)}; a metric is a string name"
                " with a finite number, a string, true, false or null"
            )
            raise RecordError(msg)
    refs = channel["refs"]
    if not isinstance(refs, list | tuple) or not all(isinstance(r, str) for r in refs):
        msg = f"{where} 'refs' must be a list of reference keys (strings), got {_shown(refs)}"
        raise RecordError(msg)


def _freeze_extras(extras: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(extras))


@attrs.frozen
class Decision:
    """The record of one decision; round-trips through JSON exactly.

    Parameters:
        module: the module's name.
        event: the event decided on.
        entity: the entity it concerned.
        from_state: the entity's state before the event.
        verdict: ``Verdict.ACT`` when every check passed and an action is proposed.
        proposed_action: what the state reached proposes (recorded even on abstain).
        reason: why: the failing checks' summaries, or why nothing is proposed.
        extras: ``{"state": <state reached>}``.
        channels: the six check reports, in ``CHECK_NAMES`` order.
    """

    module: str
    event: str
    entity: str
    from_state: str
    verdict: Verdict
    proposed_action: str | None
    reason: str
    extras: Mapping[str, str] = attrs.field(converter=_freeze_extras, hash=False)
    channels: tuple[Channel, ...]

    def channel(self, name: str) -> Channel:
        """Return the report of the check called ``name``.

        Raises:
            KeyError: when no check has that name.
        """
        for channel in self.channels:
            if channel.name == name:
                return channel
        msg = f"no check named {name!r}; checks are {', '.join(CHECK_NAMES)}"
        raise KeyError(msg)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "module": self.module,
            "event": self.event,
            "entity": self.entity,
            "from_state": self.from_state,
            "verdict": self.verdict.value,
            "proposed_action": self.proposed_action,
            "reason": self.reason,
            "extras": dict(self.extras),
            "channels": [channel.to_dict() for channel in self.channels],
        }

    def to_json(self) -> str:
        """Return the record as canonical JSON (sorted keys)."""
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Decision:
        """Rebuild a record from ``to_dict`` output.

        Raises:
            RecordError: when a field is missing or has the wrong type, or the record
                contradicts itself (an ``act`` verdict needs all six checks passed, in
                ``CHECK_NAMES`` order, and a proposed action).
        """
        if not isinstance(data, Mapping):
            msg = f"a decision record is a JSON object, got {type(data).__name__}"
            raise RecordError(msg)
        _check_record_fields(data)
        try:
            channels = tuple(
                Channel(
                    name=item["name"],
                    passed=item["passed"],
                    summary=item["summary"],
                    metrics=item["metrics"],
                    trust=item["trust"],
                    refs=tuple(item["refs"]),
                )
                for item in data["channels"]
            )
            return cls(
                module=data["module"],
                event=data["event"],
                entity=data["entity"],
                from_state=data["from_state"],
                verdict=Verdict(data["verdict"]),
                proposed_action=data["proposed_action"],
                reason=data["reason"],
                extras=data["extras"],
                channels=channels,
            )
        except KeyError as exc:
            msg = f"decision record is missing field {exc.args[0]!r}; pass Decision.to_dict output"
            raise RecordError(msg) from exc
        except (TypeError, ValueError) as exc:
            msg = f"decision record has a malformed field: {exc}"
            raise RecordError(msg) from exc

    @classmethod
    def from_json(cls, text: str | bytes) -> Decision:
        """Rebuild a record from ``to_json`` output (text, or UTF-8 bytes).

        Raises:
            RecordError: when the input is not text or not JSON (NaN and infinities
                included, which ``to_json`` never writes), nests too deep, or a field is
                missing or malformed.
        """
        if not isinstance(text, str | bytes | bytearray):
            msg = f"a decision record is JSON text, got {type(text).__name__}; pass to_json output"
            raise RecordError(msg)
        try:
            data = json.loads(
                text, parse_constant=_refuse_constant, parse_float=_finite, parse_int=_whole
            )
        except RecordError:
            raise
        except RecursionError as exc:
            msg = "decision record nests too deep to read; pass Decision.to_json output"
            raise RecordError(msg) from exc
        except UnicodeDecodeError as exc:
            msg = f"decision record is not UTF-8 text: {exc.reason} at byte {exc.start}"
            raise RecordError(msg) from exc
        except json.JSONDecodeError as exc:
            msg = f"decision record is not valid JSON: {exc}"
            raise RecordError(msg) from exc
        if not isinstance(data, dict):
            msg = f"decision record must be a JSON object, got {type(data).__name__}"
            raise RecordError(msg)
        return cls.from_dict(data)


def _refuse_constant(name: str) -> float:
    """``json.loads`` hook: NaN and infinities are not JSON, and ``to_json`` never writes them."""
    msg = f"decision record holds {name}, which is not JSON; pass Decision.to_json output"
    raise RecordError(msg)


def _whole(text: str) -> int:
    """``json.loads`` hook: an int of thousands of digits is refused, not left to raise."""
    try:
        return int(text)
    except ValueError as exc:  # more digits than sys.get_int_max_str_digits()
        msg = f"decision record holds an integer of {len(text)} digits; no record field has one"
        raise RecordError(msg) from exc


def _finite(text: str) -> float:
    """``json.loads`` hook: a number too large for a float (``1e999``) would read as infinity."""
    value = float(text)
    if not math.isfinite(value):
        msg = f"decision record holds the number {text[:20]}, too large for a float"
        raise RecordError(msg)
    return value


def _check_text(what: str, value: object) -> None:
    if not isinstance(value, str):
        msg = f"{what} must be a string, got {type(value).__name__}: {value!r}"
        raise TypeError(msg)


def _check_type(what: str, value: object, kind: type, hint: str) -> None:
    if not isinstance(value, kind):
        name = kind.__name__
        article = "an" if name[0] in "AEIOU" else "a"
        msg = f"{what} must be {article} {name}, got {type(value).__name__}; {hint}"
        raise TypeError(msg)


class Module:
    """A policy that decides, per entity, whether to act on what its chart proposes.

    The chart's game is compiled and solved once, here; each decision then steps the
    entity's state and runs the four evidence checks. ``decide_from(state, event,
    evidence)`` is the decision itself, a pure function of its arguments. ``decide`` calls
    it with the state the module remembers for the entity and then remembers the state
    reached, so a module used through ``decide`` owns the current state of every entity it
    has seen: give each workflow its own module.

    Parameters:
        name: the module's name, written into every record.
        chart: the policy; validated here.
        limits: solver budgets; beyond them every decision abstains with the solver's message.
        rules: thresholds of the evidence checks.
        expr: the text policy the chart came from, if any (for the shape report).
        payoff: the payoff part of the progress check: ``"best-case"`` (the default: the
            best reachable cycle mean, owners ignored) or ``"two-player"`` (the exact game
            value, the environment choosing in its states). The ``game`` report's
            ``payoff`` metric says which was used.

    Raises:
        ChartError: when the chart does not validate.
        ValueError: when ``payoff`` is not ``"best-case"`` or ``"two-player"``.

    .. versionchanged:: Unreleased ``payoff``.
    """

    def __init__(
        self,
        name: str,
        chart: Statechart,
        limits: Limits | None = None,
        *,
        rules: EvidenceRules | None = None,
        expr: Expr | None = None,
        payoff: str = PAYOFF_BEST_CASE,
    ) -> None:
        _check_text("a Module's name", name)
        _check_type("chart", chart, Statechart, "build one with Statechart(...) or from_expr")
        if limits is not None:
            _check_type("limits", limits, Limits, "pass Limits(...) or None")
        if rules is not None:
            _check_type("rules", rules, EvidenceRules, "pass EvidenceRules(...) or None")
        self.name = name
        self.chart = chart.validate()
        self.limits = limits or Limits()
        self.rules = rules or EvidenceRules()
        self.expr = expr
        self.progress: Progress = solve_progress(self.chart, self.limits, payoff=payoff)
        self._policy_channels = (shape_check(self.chart, expr), game_check(self.progress))
        self._states: dict[str, str] = {}
        #: held while `decide` reads, steps and stores an entity's state, so threads
        #: sharing the module never lose a step
        self._lock = threading.Lock()

    @classmethod
    def from_expr(
        cls,
        name: str,
        expr: Expr,
        limits: Limits | None = None,
        *,
        rules: EvidenceRules | None = None,
        payoff: str = PAYOFF_BEST_CASE,
    ) -> Module:
        """Build a module from a parsed text policy (see ``grounded_decision.parse``).

        ``payoff`` is as for ``Module``.

        Raises:
            PolicyCompileError: when the policy would propose two actions at once.
            ValueError: when ``payoff`` is not ``"best-case"`` or ``"two-player"``.
            TypeError: when ``expr`` is text or not a policy node (the nodes check their
                own fields when they are built).
        """
        if isinstance(expr, str):
            msg = "from_expr takes a parsed policy: Module.from_expr(name, parse(text))"
            raise TypeError(msg)
        chart = dfa_to_statechart(compile_policy(expr), name)
        return cls(name, chart, limits, rules=rules, expr=expr, payoff=payoff)

    @property
    def policy_channels(self) -> tuple[Channel, ...]:
        """The ``shape`` and ``game`` reports, computed once when the module was built."""
        return self._policy_channels

    def state_of(self, entity: str = "default") -> str:
        """Return the current state of an entity (the initial state if it is new)."""
        return self._states.get(entity, self.chart.initial)

    def reset(self, entity: str = "default") -> None:
        """Forget an entity, so its next event starts from the initial state."""
        self._states.pop(entity, None)

    def decide(self, event: Event, evidence: Evidence) -> Decision:
        """Step the entity's state on ``event``, decide whether to act, and remember the state.

        This is ``decide_from(state_of(event.entity), event, evidence)`` followed by storing
        the state reached (``extras["state"]``) as the entity's current state, whatever the
        verdict. The module's memory makes a run of ``decide`` calls depend on the calls
        before it; where decisions must be replayed, keep the state outside and call
        ``decide_from``.

        Raises:
            EvidenceError: when ``evidence`` is not an ``Evidence``.
        """
        _check_type("event", event, Event, 'build one with Event("name", entity=...)')
        with self._lock:
            decision = self.decide_from(self.state_of(event.entity), event, evidence)
            self._states[event.entity] = decision.extras["state"]
        return decision

    def decide_from(self, state: str | None, event: Event, evidence: Evidence) -> Decision:
        """Decide on ``event`` for an entity in ``state``, without reading or changing memory.

        A pure function of its arguments and of what the module fixed when it was built:
        the same state, event and evidence always give the same decision, and the module's
        own record of entities (``state_of``) is left as it was. The state reached is the
        decision's ``extras["state"]``; pass it back in with the entity's next event.

        An event the state does not handle leaves the entity where it is and proposes
        nothing. The verdict is ``act`` only when all six checks pass and the state reached
        proposes an action.

        Parameters:
            state: the entity's current state, or ``None`` for the chart's initial state.
            event: what happened to the entity.
            evidence: the observations offered for this decision.

        Raises:
            EvidenceError: when ``evidence`` is not an ``Evidence``.
            ChartError: when ``state`` is not one of the chart's states.

        .. versionadded:: Unreleased
        """
        _check_type("event", event, Event, 'build one with Event("name", entity=...)')
        if not isinstance(evidence, Evidence):
            msg = (
                f"decide needs an Evidence, got {type(evidence).__name__};"
                " build one with Evidence([Observation(...), ...])"
            )
            raise EvidenceError(msg)
        current = self._known_state(state)
        move = self.chart.transition(current, event.name)
        reached = current if move is None else move.target
        proposed = None if move is None else self.chart.action_of(reached)
        channels = (*evidence_checks(evidence, self.rules), *self._policy_channels)
        reasons = [channel.summary for channel in channels if not channel.passed]
        if move is None:
            reasons.append(
                f"event {event.name!r} is not handled in state {current!r}; nothing proposed"
            )
        elif proposed is None:
            reasons.append(f"state {reached!r} proposes no action")
        verdict = Verdict.ABSTAIN if reasons else Verdict.ACT
        reason = "; ".join(reasons) if reasons else f"all six checks passed; propose {proposed!r}"
        return Decision(
            module=self.name,
            event=event.name,
            entity=event.entity,
            from_state=current,
            verdict=verdict,
            proposed_action=proposed,
            reason=reason,
            extras={"state": reached},
            channels=channels,
        )

    def _known_state(self, state: object) -> str:
        """The state to decide from: ``None`` is the initial state; anything else must be one."""
        if state is None:
            return self.chart.initial
        if isinstance(state, str) and state in self.chart:
            return state
        named = repr(state) if isinstance(state, str) else f"{state!r} ({type(state).__name__})"
        msg = (
            f"module {self.name!r}: {named} is not a state of chart {self.chart.name!r}, whose"
            f" states are {listed(self.chart.states())}; pass one of them, or None for the"
            f" initial state {self.chart.initial!r}"
        )
        raise ChartError(msg, chart=self.chart.name, name=state if isinstance(state, str) else None)
