"""Karp's maximum (and minimum) mean-cycle algorithm on the part reachable from the start."""

from __future__ import annotations

from grounded_decision.errors import GameTooLarge
from grounded_decision.statechart.game import GameGraph, Limits

__all__ = [
    "MEAN_TOLERANCE",
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
    if len(game) > limit:
        msg = f"{len(game)} vertices exceed the mean-payoff limit {limit}"
        raise GameTooLarge(
            msg,
            vertices=len(game),
            limit=limit,
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


def max_mean_payoff(game: GameGraph, limits: Limits | None = None) -> float:
    """Return the best average edge weight over cycles reachable from the start (Karp).

    Owners are ignored: the answer is exact for one-player graphs and a best case otherwise.
    Returns ``0.0`` when no cycle is reachable (impossible for compiled charts).

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
    """
    _check_size(game, limits)
    return _karp(game, 1.0)


def min_mean_payoff(game: GameGraph, limits: Limits | None = None) -> float:
    """Return the worst average edge weight over reachable cycles (Karp on negated weights).

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
    """
    _check_size(game, limits)
    return 0.0 - _karp(game, -1.0)


def nonnegative_mean(game: GameGraph, limits: Limits | None = None) -> bool:
    """Return whether ``max_mean_payoff(game)`` is at least ``-MEAN_TOLERANCE``.

    Raises:
        GameTooLarge: when the game has more vertices than ``limits.max_karp_vertices``.
    """
    return max_mean_payoff(game, limits) >= -MEAN_TOLERANCE
