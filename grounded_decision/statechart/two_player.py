"""Two-player mean payoff: the controller maximises the long-run average, the environment
minimises it, and both play positionally.

Strategy improvement for the controller, with the environment's best reply solved exactly
by Howard's policy iteration (after Dhingra and Gaubert 2006), in integer arithmetic. The
answer is then certified independently: with the controller's strategy fixed, the worst
cycle the environment can reach from the start has exactly the value as its mean; with the
environment's strategy fixed, the best cycle the controller can reach has it too. By
Ehrenfeucht and Mycielski (1979) positional strategies suffice, so the value is exact.
"""

from __future__ import annotations

from fractions import Fraction

import attrs

from grounded_decision.statechart._policy_iteration import (
    Evaluation,
    IntEdges,
    heaviest,
    howard_max,
    int_graph,
    lightest,
)
from grounded_decision.statechart.game import CONTROLLER, GameGraph, Limits
from grounded_decision.statechart.mean_payoff import _check_size, max_mean_cycle

__all__ = [
    "MeanPayoffSolution",
    "mean_payoff_value",
    "solve_mean_payoff",
    "strategy_guarantees",
]


@attrs.frozen
class MeanPayoffSolution:
    """The value of a two-player mean-payoff game and optimal positional strategies.

    Parameters:
        value: the value from the start: what the controller (owner 0) can guarantee as the
            long-run average edge weight, and the most the environment (owner 1) must concede.
        values: the value from every vertex.
        strategy: for every vertex, the index into ``game.edges[v]`` of the move its owner
            plays; the controller's entries form its optimal strategy, the environment's
            entries form the environment's.
    """

    value: Fraction
    values: tuple[Fraction, ...]
    strategy: tuple[int, ...]

    def successor(self, game: GameGraph, v: int) -> int:
        """Return the vertex the owner of ``v`` moves to."""
        return game.edges[v][self.strategy[v]][0]


def _fix(game: GameGraph, strategy: tuple[int, ...] | list[int], owner: int) -> GameGraph:
    """Return the game where the vertices of ``owner`` keep only their strategy's move."""
    edges = tuple(
        (out[strategy[v]],) if game.owner[v] == owner else out for v, out in enumerate(game.edges)
    )
    return attrs.evolve(game, edges=edges)


def strategy_guarantees(game: GameGraph, strategy: tuple[int, ...]) -> tuple[Fraction, Fraction]:
    """Return what each side of ``strategy`` guarantees from the start, solved exactly.

    The first item is the worst reachable cycle mean once the controller's moves are fixed
    (the environment picks everything else): the controller's strategy guarantees at least
    that. The second is the best reachable cycle mean once the environment's moves are fixed:
    the environment's strategy concedes at most that. Both strategies are optimal exactly
    when the two are equal, and then they equal the game's value.

    Raises:
        GameGraphError: when a weight is not finite.
        IndexError: when a strategy entry is not an edge index of its vertex.
    """
    low, _ = max_mean_cycle(_fix(game, strategy, CONTROLLER), maximise=False)
    high, _ = max_mean_cycle(_fix(game, strategy, 1 - CONTROLLER))
    return low, high


def _environment_reply(
    scaled: IntEdges,
    game: GameGraph,
    controller: list[int],
    environment: list[int],
    reference: Evaluation | None,
) -> tuple[list[int], Evaluation]:
    """Solve the environment's problem against ``controller`` exactly (weights negated).

    Returns the environment's policy (edge indices; 0 at controller vertices) and the
    evaluation in the negated weights, so its gains are minus the controller's.
    """
    edges = tuple(
        ((scaled[v][controller[v]][0], -scaled[v][controller[v]][1]),)
        if game.owner[v] == CONTROLLER
        else tuple((w, -x) for w, x in scaled[v])
        for v in range(len(game))
    )
    start = [0 if game.owner[v] == CONTROLLER else environment[v] for v in range(len(game))]
    return howard_max(edges, start, reference)


def _improve_controller(
    scaled: IntEdges, game: GameGraph, controller: list[int], value: Evaluation
) -> bool:
    """Switch, in place, each controller vertex with a strictly better move; return whether any.

    ``value`` is the environment's exact reply in negated weights. A move is better when it
    leads to a higher value, or to the same value with a higher ``weight - value + bias``.
    """
    gain, bias, classes, rank = value.gain, value.bias, value.classes, value.rank
    changed = False
    for u, out in enumerate(scaled):
        if game.owner[u] != CONTROLLER or len(out) == 1:
            continue
        g = gain[u]
        p, q = classes[g]  # the controller's value at u is -p/q; its bias is -bias[u]
        best_i = -1
        best_rank = rank[g]
        best_bias = -bias[u]
        for i, (v, w) in enumerate(out):
            gv = gain[v]
            if gv == g:
                if best_rank == rank[g]:
                    candidate = q * w + p - bias[v]
                    if candidate > best_bias:
                        best_i, best_bias = i, candidate
            elif rank[gv] < best_rank:  # a lower gain in negated weights is a higher value
                best_i, best_rank = i, rank[gv]
        if best_i >= 0 and best_i != controller[u]:
            controller[u] = best_i
            changed = True
    return changed


def solve_mean_payoff(game: GameGraph, limits: Limits | None = None) -> MeanPayoffSolution:
    """Solve the two-player mean-payoff game exactly, with optimal positional strategies.

    The controller (owner 0) maximises the long-run average edge weight, the environment
    (owner 1) minimises it. Each round the environment's best reply to the controller's
    current strategy is solved exactly; the controller then switches every vertex where a
    move is strictly better against that reply, until none is. The result is certified
    with ``strategy_guarantees`` before it is returned.

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
        GameGraphError: when a weight is not finite.
        RuntimeError: when the certificate fails, which would be a bug; the message asks
            for the game to be reported.

    .. versionadded:: Unreleased
    """
    _check_size(game, limits)
    integer = int_graph(game)
    scaled = integer.edges
    controller = [heaviest(out) for out in scaled]
    environment = [lightest(out) for out in scaled]
    reference: Evaluation | None = None
    seen: set[tuple[int, ...]] = set()
    while True:
        key = tuple(controller)
        if key in seen:
            msg = "internal error: the controller's strategy repeated; please report this game"
            raise RuntimeError(msg)
        seen.add(key)
        environment, reply = _environment_reply(scaled, game, controller, environment, reference)
        if not _improve_controller(scaled, game, controller, reply):
            break
        reference = reply
    strategy = tuple(
        controller[v] if game.owner[v] == CONTROLLER else environment[v] for v in range(len(game))
    )
    values = tuple(
        Fraction(-p, q * integer.scale) for p, q in (reply.gain_of(v) for v in range(len(game)))
    )
    low, high = strategy_guarantees(game, strategy)
    if not low == high == values[game.start]:
        msg = (
            f"internal error: the strategies guarantee {low} and concede {high}, but the"
            f" solver's value is {values[game.start]}; please report this game"
        )
        raise RuntimeError(msg)
    return MeanPayoffSolution(value=low, values=values, strategy=strategy)


def mean_payoff_value(game: GameGraph, limits: Limits | None = None) -> Fraction:
    """Return the exact two-player mean-payoff value from the start (``solve_mean_payoff``).

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
        GameGraphError: when a weight is not finite.

    .. versionadded:: Unreleased
    """
    return solve_mean_payoff(game, limits).value
