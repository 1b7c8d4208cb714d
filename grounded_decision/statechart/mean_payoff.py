"""The maximum (and minimum) cycle mean reachable from the start, one player.

Howard's policy iteration computes it, in exact integer arithmetic, and the value returned is
the exact mean of the cycle it chose, as a ``Fraction`` of the game's own weights, rounded to
the nearest float once. Karp's algorithm stays here as the reference (``_karp_reference``) that
the tests and benchmarks compare Howard with, and ``walk_weights`` shows its table.
"""

from __future__ import annotations

from fractions import Fraction

from grounded_decision.errors import GameTooLarge
from grounded_decision.statechart._policy_iteration import (
    cycle_from,
    cycle_mean,
    cyclic_components,
    howard_max,
    int_graph,
)
from grounded_decision.statechart.game import GameGraph, Limits

__all__ = [
    "MEAN_TOLERANCE",
    "max_mean_cycle",
    "max_mean_payoff",
    "min_mean_payoff",
    "nonnegative_mean",
    "walk_weights",
]

MEAN_TOLERANCE = 1e-12
"""Rounding allowance: a best cycle mean of ``-MEAN_TOLERANCE`` or more counts as nonnegative."""

_NEG = float("-inf")
_POS = float("inf")

_Edges = list[tuple[int, int, float]]


def _check_size(game: GameGraph, limits: Limits | None) -> None:
    limit = (limits or Limits()).max_karp_vertices
    if limit is not None and len(game) > limit:
        msg = f"{len(game)} vertices exceed the mean-payoff limit {limit}"
        raise GameTooLarge(
            msg,
            vertices=len(game),
            limit=limit,
            setting="max_karp_vertices",
        )


def _reachable_edges(game: GameGraph, sign: float) -> tuple[list[int], _Edges]:
    """Return the vertices reachable from the start (start first) and their edges, renumbered."""
    order = [game.start]
    local = {game.start: 0}
    for v in order:
        for w in game.successors[v]:
            if w not in local:
                local[w] = len(order)
                order.append(w)
    edges = [(local[v], local[w], sign * weight) for v in order for w, _, weight in game.edges[v]]
    return order, edges


def _advance(edges: _Edges, row: list[float]) -> list[float]:
    """One step of the recurrence: ``next[v] = max_u (row[u] + w(u, v))``."""
    nxt = [_NEG] * len(row)
    for u, v, weight in edges:
        base = row[u]
        if base != _NEG:
            candidate = base + weight
            if candidate > nxt[v]:
                nxt[v] = candidate
    return nxt


def _first_row(n: int) -> list[float]:
    row = [_NEG] * n
    row[0] = 0.0
    return row


def _karp(game: GameGraph, sign: float) -> float:
    """Return the maximum cycle mean of ``sign * weight`` over cycles reachable from the start.

    With ``dp[k][v]`` the best weight of a walk of exactly ``k`` edges from the start to
    ``v`` and ``n`` the number of reachable vertices, the answer is
    ``max_v min_k (dp[n][v] - dp[k][v]) / (n - k)`` with infinite entries skipped. The rows
    are computed twice (once to reach ``dp[n]``, once for the inner minimum), so memory stays
    linear in the vertices.
    """
    vertices, edges = _reachable_edges(game, sign)
    n = len(vertices)
    row = _first_row(n)
    for _ in range(n):
        row = _advance(edges, row)
    last = row
    inner = [_POS] * n
    row = _first_row(n)
    for k in range(n):
        for v in range(n):
            if last[v] != _NEG and row[v] != _NEG:
                value = (last[v] - row[v]) / (n - k)
                if value < inner[v]:
                    inner[v] = value
        row = _advance(edges, row)
    finite = [value for value in inner if value != _POS]
    return max(finite) if finite else 0.0


def walk_weights(game: GameGraph, steps: int) -> tuple[tuple[float, ...], ...]:
    """Return Karp's table: row ``k`` holds, per vertex, the best weight of a ``k``-edge walk.

    Rows ``0..steps`` are returned; ``-inf`` marks a vertex no such walk from the start reaches.
    """
    vertices, edges = _reachable_edges(game, 1.0)
    rows: list[tuple[float, ...]] = []
    row = _first_row(len(vertices))
    for k in range(steps + 1):
        full = [_NEG] * len(game)
        for i, v in enumerate(vertices):
            full[v] = row[i]
        rows.append(tuple(full))
        if k < steps:
            row = _advance(edges, row)
    return tuple(rows)


def _karp_reference(game: GameGraph, *, maximise: bool = True) -> float:
    """Return the maximum (or minimum) reachable cycle mean by Karp's algorithm, in floats.

    O(n·m) time: the reference Howard is tested and benchmarked against, not what the
    progress check uses. No size limit is applied.
    """
    if maximise:
        return _karp(game, 1.0)
    return 0.0 - _karp(game, -1.0)


def max_mean_cycle(game: GameGraph, *, maximise: bool = True) -> tuple[Fraction, tuple[int, ...]]:
    """Return the exact best (or worst) reachable cycle mean and the cycle that attains it.

    Howard's policy iteration, with weights scaled to integers, runs on each strongly
    connected component reachable from the start (every reachable cycle lies in one); the
    best component's mean is then recomputed as a ``Fraction`` of the game's own weights
    around the chosen cycle (its vertices, in order, are the second item) and must agree.
    No size limit is applied.

    Raises:
        GameGraphError: when a weight is not finite.
    """
    scaled = int_graph(game, 1 if maximise else -1)
    best: tuple[Fraction, list[int], list[int]] | None = None
    local = [-1] * len(game)
    for component in cyclic_components(game):
        for i, v in enumerate(component):
            local[v] = i
        kept: list[list[int]] = []
        edges: list[tuple[tuple[int, int], ...]] = []
        for v in component:
            out = scaled.edges[v]
            keep = [i for i, (w, _) in enumerate(out) if local[w] >= 0]
            kept.append(keep)
            edges.append(tuple([(local[out[i][0]], out[i][1]) for i in keep]))
        for v in component:
            local[v] = -1
        policy, value = howard_max(tuple(edges), spread=True)
        # Inside a component every vertex reaches every cycle, so all share the optimal gain.
        p, q = value.gain_of(0)
        gain = Fraction(p, q * scaled.scale)
        if best is None or gain > best[0]:
            moves = [kept[i][policy[i]] for i in range(len(component))]
            best = (gain, component, moves)
    if best is None:
        msg = "internal error: a total game graph always has a reachable cycle"
        raise RuntimeError(msg)
    claimed, component, local_moves = best
    moves = [0] * len(game)
    for v, i in zip(component, local_moves, strict=True):
        moves[v] = i
    cycle = cycle_from(game, moves, component[0])
    mean = cycle_mean(game, moves, cycle)
    if (mean if maximise else -mean) != claimed:
        msg = (
            f"internal error: Howard's gain {claimed} differs from the mean {mean} of its own"
            " cycle; please report this game"
        )
        raise RuntimeError(msg)
    return mean, tuple(cycle)


def max_mean_payoff(game: GameGraph, limits: Limits | None = None) -> float:
    """Return the best average edge weight over cycles reachable from the start.

    Computed exactly by Howard's policy iteration (``max_mean_cycle``) and rounded once.
    Owners are ignored: the answer is exact for one-player graphs and a best case otherwise
    (``mean_payoff_value`` is the two-player answer).

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
        GameGraphError: when a weight is not finite.
    """
    _check_size(game, limits)
    return float(max_mean_cycle(game)[0])


def min_mean_payoff(game: GameGraph, limits: Limits | None = None) -> float:
    """Return the worst average edge weight over reachable cycles (Howard, minimising).

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
        GameGraphError: when a weight is not finite.
    """
    _check_size(game, limits)
    return float(max_mean_cycle(game, maximise=False)[0])


def nonnegative_mean(game: GameGraph, limits: Limits | None = None) -> bool:
    """Return whether ``max_mean_payoff(game)`` is at least ``-MEAN_TOLERANCE``.

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
        GameGraphError: when a weight is not finite.
    """
    return max_mean_payoff(game, limits) >= -MEAN_TOLERANCE
