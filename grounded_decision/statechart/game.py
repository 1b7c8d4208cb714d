"""Turning a statechart into a game graph, solver limits, and the attractor."""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable
from types import ModuleType
from typing import Any

import attrs

from grounded_decision.errors import GameTooLarge, GroundedDecisionError
from grounded_decision.statechart.chart import Statechart

__all__ = [
    "CONTROLLER",
    "ENVIRONMENT",
    "FINAL_EVENT",
    "NO_LIMITS",
    "GameGraph",
    "GameGraphError",
    "Limits",
    "attractor",
    "compile_game",
]

CONTROLLER = 0
"""Owner index of service-owned vertices (player Even)."""
ENVIRONMENT = 1
"""Owner index of environment-owned vertices (player Odd)."""
FINAL_EVENT = "_final"
"""Event label of the self-loop added to every state without an outgoing transition."""


def _cap(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Refuse a cap that is not a whole number >= 0 or None, naming the setting."""
    if value is None:
        return
    msg = f"Limits.{attribute.name} must be a whole number >= 0 or None (no cap), got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(msg)
    if value < 0:
        raise ValueError(msg)


def _seconds(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """Refuse a time budget that is not a positive number of seconds (NaN included)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"Limits.{attribute.name} must be a number of seconds or None, got {value!r}"
        raise TypeError(msg)
    if not value > 0:  # also refuses NaN, which compares false with everything
        msg = f"Limits.{attribute.name} must be positive or None (no budget), got {value!r}"
        raise ValueError(msg)
    try:
        float(value)  # the deadline adds it to a float clock
    except OverflowError:
        msg = (
            f"Limits.{attribute.name} must be a number of seconds a float holds, got an int"
            " past a float's range (above 1.8e308); pass None for no budget"
        )
        raise ValueError(msg) from None


@attrs.frozen
class Limits:
    """Engineering budgets for the solvers; a chart beyond them makes every decision abstain.

    Each cap may be ``None`` for no cap. The defaults are the documented ones, so every
    documented refusal reads the same; the two parity budgets are off by default.

    Parameters:
        max_game_vertices: most states ``compile_game`` and the parity solver accept.
        max_parity_depth: deepest nesting of Zielonka's recursion (on the compressed game).
        max_karp_vertices: most vertices the mean-payoff solver accepts.
        parity_steps: most units of parity-solver work (one unit per vertex attracted or edge
            scanned), or ``None``.
        parity_seconds: most wall-clock seconds for one parity solve, or ``None``.

    Raises:
        TypeError: when a cap is not a whole number (or a number of seconds) or ``None``.
        ValueError: when a cap is negative, or ``parity_seconds`` is not positive (or NaN);
            the message names the setting.

    .. versionchanged:: Unreleased ``None`` caps, ``parity_steps`` and ``parity_seconds``.
    """

    max_game_vertices: int | None = attrs.field(default=200, validator=_cap)
    max_parity_depth: int | None = attrs.field(default=64, validator=_cap)
    max_karp_vertices: int | None = attrs.field(default=200, validator=_cap)
    parity_steps: int | None = attrs.field(default=None, kw_only=True, validator=_cap)
    parity_seconds: float | None = attrs.field(default=None, kw_only=True, validator=_seconds)


NO_LIMITS = Limits(None, None, None)
"""Limits with every cap off, for games far larger than a policy's chart."""


Edge = tuple[int, str, float]

#: the types an edge's weight may have (exact: a bool is not a weight)
_WEIGHT_TYPES = (int, float)


class GameGraphError(GroundedDecisionError, ValueError):
    """A game graph built by hand is inconsistent."""


def _distinct(values: Iterable[int]) -> tuple[int, ...]:
    return tuple(dict.fromkeys(values))


@attrs.frozen
class GameGraph:
    """A finite game: vertices ``0..n-1`` with priorities, owners and weighted edges.

    Parameters:
        names: vertex names (state names for compiled charts).
        start: index of the initial vertex.
        edges: for each vertex, its outgoing ``(successor, event, weight)`` tuples.
        priority: parity priority of each vertex.
        owner: ``0`` (controller, Even) or ``1`` (environment, Odd) for each vertex.

    Raises:
        GameGraphError: when lengths differ, an index is out of range, an owner is not the
            int 0 or 1, a priority is not an int of 0 or more, a weight is not an int or a
            float, or a vertex has no outgoing edge.
    """

    names: tuple[str, ...]
    start: int
    edges: tuple[tuple[Edge, ...], ...]
    priority: tuple[int, ...]
    owner: tuple[int, ...]
    successors: tuple[tuple[int, ...], ...] = attrs.field(init=False, eq=False, repr=False)
    predecessors: tuple[tuple[int, ...], ...] = attrs.field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        n = len(self.names)
        if not (len(self.edges) == len(self.priority) == len(self.owner) == n):
            msg = (
                f"game graph has {n} names, {len(self.edges)} edge lists, "
                f"{len(self.priority)} priorities and {len(self.owner)} owners; give one of each"
                " per vertex"
            )
            raise GameGraphError(msg)
        if type(self.start) is not int or not 0 <= self.start < n:
            msg = f"start vertex {self.start!r} is not in 0..{n - 1}; give a vertex index"
            raise GameGraphError(msg)
        preds: list[list[int]] = [[] for _ in range(n)]
        succs: list[tuple[int, ...]] = []
        for v, out in enumerate(self.edges):
            if not out:
                msg = (
                    f"vertex {v} ({self.names[v]!r}) has no outgoing edge; every vertex needs one"
                    f" (compile_game adds a {FINAL_EVENT!r} self-loop to final states)"
                )
                raise GameGraphError(msg)
            if type(self.owner[v]) is not int or self.owner[v] not in (CONTROLLER, ENVIRONMENT):
                msg = f"vertex {v} has owner {self.owner[v]!r}; use the int 0 or 1"
                raise GameGraphError(msg)
            if type(self.priority[v]) is not int or self.priority[v] < 0:
                msg = f"vertex {v} has priority {self.priority[v]!r}; give an int of 0 or more"
                raise GameGraphError(msg)
            for w, _, weight in out:
                if type(weight) not in _WEIGHT_TYPES:
                    msg = (
                        f"edge {v} -> {w} has weight {weight!r} of type "
                        f"{type(weight).__name__}; give an int or a float"
                    )
                    raise GameGraphError(msg)
            targets = _distinct(w for w, _, _ in out)
            for w in targets:
                if not 0 <= w < n:
                    msg = f"edge {v} -> {w} leaves the vertices 0..{n - 1}"
                    raise GameGraphError(msg)
                preds[w].append(v)
            succs.append(targets)
        object.__setattr__(self, "successors", tuple(succs))
        object.__setattr__(self, "predecessors", tuple(tuple(p) for p in preds))

    def __len__(self) -> int:
        """Return the number of vertices."""
        return len(self.names)

    def index(self, name: str) -> int:
        """Return the vertex index of a state name."""
        return self.names.index(name)


def _arrays_module_of(game: object, caller: str) -> ModuleType:
    """The module of ``arrays.ArrayGame`` when ``game`` is one (an ArrayGame exists only once
    its module, which needs numpy, is imported); a TypeError naming ``caller`` otherwise."""
    arrays = sys.modules.get("grounded_decision.statechart.arrays")
    if arrays is None or not isinstance(game, arrays.ArrayGame):
        msg = f"{caller}: game must be a GameGraph or an ArrayGame, got {type(game).__name__}"
        raise TypeError(msg)
    return arrays


def compile_game(chart: Statechart, limits: Limits | None = None) -> GameGraph:
    """Build the game graph of a chart.

    One vertex per state (in ``chart.states()`` order); one edge per transition, weighted by
    the transition's payoff plus the payoff of the state it enters; and a ``_final``
    self-loop, weighted by the state's payoff, on each state without outgoing transitions
    (and on no other state). Environment-owned states get owner ``1``.

    Raises:
        ChartError: when the chart does not validate.
        GameTooLarge: when the chart has more states than ``limits.max_game_vertices``.
    """
    limits = limits or Limits()
    chart.validate()
    names = chart.states()
    if limits.max_game_vertices is not None and len(names) > limits.max_game_vertices:
        msg = f"{len(names)} vertices exceed limit {limits.max_game_vertices}"
        raise GameTooLarge(
            msg,
            vertices=len(names),
            limit=limits.max_game_vertices,
        )
    index = {name: i for i, name in enumerate(names)}
    edges: list[list[Edge]] = [[] for _ in names]
    for move in chart.transitions:
        weight = float(move.payoff) + float(chart.payoff_of(move.target))
        edges[index[move.source]].append((index[move.target], move.event, weight))
    for i, name in enumerate(names):
        if not edges[i]:
            edges[i].append((i, FINAL_EVENT, float(chart.payoff_of(name))))
    return GameGraph(
        names=names,
        start=index[chart.initial],
        edges=tuple(tuple(out) for out in edges),
        priority=tuple(chart.priority_of(name) for name in names),
        owner=tuple(ENVIRONMENT if chart.get(name).environment else CONTROLLER for name in names),
    )


def attractor(
    game: GameGraph, universe: Iterable[int], target: Iterable[int], *, player: int
) -> frozenset[int]:
    """Return the vertices of ``universe`` from which ``player`` can force a visit to ``target``.

    A vertex of ``player`` joins when any of its moves inside the universe leads in; a vertex
    of the opponent joins when all of them do (one with no move left inside is stuck and
    joins). Runs in time linear in the edges inside the universe, with predecessor lists and
    a counter of remaining moves per opponent vertex.
    """
    inside = universe if isinstance(universe, frozenset | set) else frozenset(universe)
    attracted = {v for v in target if v in inside}
    owner = game.owner
    successors = game.successors
    predecessors = game.predecessors
    remaining: dict[int, int] = {}
    queue = deque(attracted)
    for v in inside:
        if v in attracted or owner[v] == player:
            continue
        count = sum(1 for w in successors[v] if w in inside)
        if count == 0:
            attracted.add(v)
            queue.append(v)
        else:
            remaining[v] = count
    while queue:
        w = queue.popleft()
        for v in predecessors[w]:
            if v in attracted or v not in inside:
                continue
            if owner[v] == player:
                attracted.add(v)
                queue.append(v)
            else:
                remaining[v] -= 1
                if remaining[v] == 0:
                    attracted.add(v)
                    queue.append(v)
    return frozenset(attracted)
