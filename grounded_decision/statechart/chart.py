"""Statecharts: named states with priorities, payoffs and owners, and event-labelled transitions."""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import NoReturn

import attrs

from grounded_decision._listing import listed, shown
from grounded_decision.errors import ChartError

__all__ = ["State", "Statechart", "Transition"]


@attrs.frozen
class State:
    """One state of a chart.

    Parameters:
        name: unique within the chart.
        initial: whether runs start here (exactly one state must say so).
        action: the action proposed on arriving here, or ``None``.
        priority: parity priority; even may recur forever, odd must not.
        payoff: reward collected on arriving here (negative for a cost).
        environment: ``True`` when someone other than the service picks the next event here.
    """

    name: str
    initial: bool = False
    action: str | None = None
    priority: int = 0
    payoff: float = 0.0
    environment: bool = False


@attrs.frozen
class Transition:
    """An arrow ``source --event--> target`` with its own payoff (added to the target's)."""

    source: str
    event: str
    target: str
    payoff: float = 0.0


def _check_state_fields(chart: Statechart, st: State) -> None:
    """Refuse a state whose name, action or flags have the wrong type: each would
    build, then break a record's JSON round trip, a sort or a diagram later."""
    if not isinstance(st.name, str):
        chart._fail(
            f"state {st.name!r} has a name of type {type(st.name).__name__}; "
            "name each state with a string",
            st,
        )
    if st.action is not None and not isinstance(st.action, str):
        chart._fail(
            f"state {st.name!r} has action {st.action!r} ({type(st.action).__name__}); "
            "give the action's name as a string, or None",
            st,
        )
    for flag, value in (("initial", st.initial), ("environment", st.environment)):
        if not isinstance(value, bool):
            chart._fail(f"state {st.name!r} has {flag}={value!r}; give True or False", st)


def _index_states(states: tuple[State, ...]) -> Mapping[str, State]:
    index: dict[str, State] = {}
    for state in states:
        index.setdefault(state.name, state)
    return MappingProxyType(index)


def _index_moves(transitions: tuple[Transition, ...]) -> Mapping[tuple[str, str], Transition]:
    index: dict[tuple[str, str], Transition] = {}
    for move in transitions:
        index.setdefault((move.source, move.event), move)
    return MappingProxyType(index)


def _index_outgoing(transitions: tuple[Transition, ...]) -> Mapping[str, tuple[Transition, ...]]:
    index: dict[str, list[Transition]] = {}
    for move in transitions:
        index.setdefault(move.source, []).append(move)
    return MappingProxyType({source: tuple(moves) for source, moves in index.items()})


@attrs.frozen
class Statechart:
    """A workflow policy as a state machine, built by chaining ``state`` and ``on``.

    Every builder call returns a new chart; ``validate()`` checks the whole and returns it.
    Each call copies the chart, so a large chart is better built in one go from tuples:
    ``Statechart(name, states, transitions)``.

    Example: ``Statechart("k").state("a", initial=True).state("b").on("a", "go", "b")``.
    """

    name: str
    state_list: tuple[State, ...] = ()
    transitions: tuple[Transition, ...] = ()
    _by_name: Mapping[str, State] = attrs.field(init=False, eq=False, repr=False)
    _moves: Mapping[tuple[str, str], Transition] = attrs.field(init=False, eq=False, repr=False)
    _outgoing: Mapping[str, tuple[Transition, ...]] = attrs.field(init=False, eq=False, repr=False)
    _initial: str | None = attrs.field(init=False, eq=False, repr=False)
    #: set by the first ``validate`` that passes: the chart cannot change, so the builder,
    #: the module and the game compiler, which each validate it, check it only once
    _valid: bool = attrs.field(init=False, default=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        # Lookups used on every step are built once per chart value.
        object.__setattr__(self, "_by_name", _index_states(self.state_list))
        object.__setattr__(self, "_moves", _index_moves(self.transitions))
        object.__setattr__(self, "_outgoing", _index_outgoing(self.transitions))
        first = next((st.name for st in self.state_list if st.initial), None)
        object.__setattr__(self, "_initial", first)

    def __contains__(self, name: object) -> bool:
        """Whether ``name`` is one of the chart's states."""
        return isinstance(name, str) and name in self._by_name

    def state(
        self,
        name: str,
        *,
        initial: bool = False,
        action: str | None = None,
        priority: int = 0,
        payoff: float = 0.0,
        environment: bool = False,
    ) -> Statechart:
        """Return a copy of the chart with one more state (see ``State`` for the fields)."""
        new = State(name, initial, action, priority, payoff, environment)
        return attrs.evolve(self, state_list=(*self.state_list, new))

    def on(self, source: str, event: str, target: str, *, payoff: float = 0.0) -> Statechart:
        """Return a copy of the chart with the transition ``source --event--> target``."""
        move = Transition(source, event, target, payoff)
        return attrs.evolve(self, transitions=(*self.transitions, move))

    def validate(self) -> Statechart:
        """Check the chart as a whole and return it unchanged.

        Raises:
            ChartError: a state's name, action or flag of the wrong type, an event that is
                not a string, no or several initial states, a duplicate state, a transition from
                or to an unknown state, two transitions on one event from one state, a
                priority that is not a whole number >= 0, a payoff that is not a finite
                number, or a transition whose weight in the game (its payoff plus its
                target's) is not one.
        """
        if self._valid:
            return self
        seen: set[str] = set()
        payoffs: dict[str, float] = {}
        for st in self.state_list:
            _check_state_fields(self, st)
            if st.name in seen:
                self._fail(f"state {st.name!r} is declared twice; give each state one name", st)
            seen.add(st.name)
            if isinstance(st.priority, bool) or not isinstance(st.priority, int) or st.priority < 0:
                self._fail(
                    f"state {st.name!r} has priority {st.priority!r} "
                    f"({type(st.priority).__name__}); use a whole number >= 0 such as 0, 1 or 2",
                    st,
                )
            _check_payoff(self.name, f"state {st.name!r}", st.payoff)
            payoffs[st.name] = float(st.payoff)
        initials = [st.name for st in self.state_list if st.initial]
        if not initials:
            msg = f"chart {self.name!r} has no initial state; mark one with initial=True"
            raise ChartError(
                msg,
                chart=self.name,
            )
        if len(initials) > 1:
            msg = (
                f"chart {self.name!r} has {len(initials)} initial states ({', '.join(initials)});"
                " mark exactly one with initial=True"
            )
            raise ChartError(
                msg,
                chart=self.name,
            )
        handled: set[tuple[str, str]] = set()
        for move in self.transitions:
            label = f"transition {move.source} --{move.event}--> {move.target}"
            if not isinstance(move.event, str):
                msg = (
                    f"chart {self.name!r}: {label} has event {move.event!r} "
                    f"({type(move.event).__name__}); name the event with a string"
                )
                raise ChartError(msg, chart=self.name, name=move.source)
            for end in (move.source, move.target):
                if end not in seen:
                    msg = (
                        f"chart {self.name!r}: {label} names unknown state {end!r};"
                        f" declare it with .state({end!r}) first"
                    )
                    raise ChartError(
                        msg,
                        chart=self.name,
                        name=end,
                    )
            if (move.source, move.event) in handled:
                msg = (
                    f"chart {self.name!r}: state {move.source!r} has two transitions on event"
                    f" {move.event!r}; keep one, or rename the event of the other"
                )
                raise ChartError(
                    msg,
                    chart=self.name,
                    name=move.source,
                )
            handled.add((move.source, move.event))
            _check_payoff(self.name, label, move.payoff)
            if not math.isfinite(float(move.payoff) + payoffs[move.target]):
                msg = (
                    f"chart {self.name!r}: {label} and its target's payoff add up to more "
                    f"than a float holds; use smaller payoffs"
                )
                raise ChartError(msg, chart=self.name, name=move.source)
        object.__setattr__(self, "_valid", True)
        return self

    def _fail(self, message: str, st: State) -> NoReturn:
        msg = f"chart {self.name!r}: {message}"
        raise ChartError(msg, chart=self.name, name=st.name)

    def states(self) -> tuple[str, ...]:
        """Return the state names in declaration order."""
        return tuple(st.name for st in self.state_list)

    @property
    def initial(self) -> str:
        """The name of the initial state.

        Raises:
            ChartError: when no state is marked ``initial=True``.
        """
        if self._initial is not None:
            return self._initial
        msg = f"chart {self.name!r} has no initial state; mark one with initial=True"
        raise ChartError(
            msg,
            chart=self.name,
        )

    def get(self, name: str) -> State:
        """Return the state called ``name``.

        Raises:
            ChartError: when the chart has no such state.
        """
        found = self._by_name.get(name)
        if found is None:
            known = listed(self.states()) or "none"
            msg = f"chart {self.name!r} has no state {name!r}; known states: {known}"
            raise ChartError(
                msg,
                chart=self.name,
                name=name,
            )
        return found

    def priority_of(self, name: str) -> int:
        """Return the parity priority of a state."""
        return self.get(name).priority

    def payoff_of(self, name: str) -> float:
        """Return the payoff collected on arriving at a state."""
        return self.get(name).payoff

    def action_of(self, name: str) -> str | None:
        """Return the action a state proposes, or ``None``."""
        return self.get(name).action

    def outgoing(self, name: str) -> tuple[Transition, ...]:
        """Return the transitions leaving a state, in declaration order."""
        return self._outgoing.get(name, ())

    def transition(self, state: str, event: str) -> Transition | None:
        """Return the transition taken from ``state`` on ``event``, or ``None`` if unhandled."""
        self.get(state)
        return self._moves.get((state, event))

    def step(self, state: str, event: str) -> str:
        """Return the state reached from ``state`` on ``event``.

        An event the state does not handle leaves it where it is.

        Raises:
            ChartError: when ``state`` is not a state of the chart.
        """
        move = self.transition(state, event)
        return state if move is None else move.target

    def to_mermaid(self) -> str:
        """Return a Mermaid flowchart: states with priority and payoff, arrows with event / reward.

        An arrow's reward is the transition's payoff plus the payoff of the state it enters,
        which is the weight the progress check uses.
        """
        ids = {name: f"s{i}" for i, name in enumerate(self.states())}
        lines = ["graph LR"]
        for st in self.state_list:
            extra = f", action {_label(st.action)}" if st.action else ""
            owner = ", environment" if st.environment else ""
            lines.append(
                f'    {ids[st.name]}["{_label(st.name)}<br/>priority {st.priority}, '
                f'payoff {st.payoff:g}{extra}{owner}"]'
            )
        for move in self.transitions:
            reward = float(move.payoff + self.payoff_of(move.target))
            lines.append(
                f'    {ids[move.source]} -- "{_label(move.event)} / {reward!r}" --> '
                f"{ids[move.target]}"
            )
        return "\n".join(lines)


#: characters a Mermaid label must not hold as they are, and their entity codes
_MERMAID = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "\n": " "}


def _label(text: str) -> str:
    """`text` as it may stand inside a quoted Mermaid label: no name can end the label
    early and add nodes or edges of its own."""
    return "".join(_MERMAID.get(c, c) for c in text)


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(float(value))
    except OverflowError:  # an int too large for a float
        return False


def _check_payoff(chart: str, what: str, payoff: object) -> None:
    if isinstance(payoff, bool) or not isinstance(payoff, int | float) or not _finite(payoff):
        msg = f"chart {chart!r}: {what} has payoff {shown(payoff)}; use a finite number such as 0.0"
        raise ChartError(
            msg,
            chart=chart,
        )
