"""Zielonka's recursive algorithm for parity games (max-parity, both owners)."""

from __future__ import annotations

from grounded_decision.errors import ParityUnsolved
from grounded_decision.statechart.game import GameGraph, Limits, attractor

__all__ = ["controller_wins_from_start", "even_wins", "winning_regions"]


def winning_regions(
    game: GameGraph, limits: Limits | None = None
) -> tuple[frozenset[int], frozenset[int]]:
    """Return the winning regions ``(controller, environment)``; together they partition the game.

    The controller (Even) wins a play when the largest priority seen infinitely often is even.

    Raises:
        ParityUnsolved: when the game has more vertices than ``limits.max_game_vertices`` or the
            recursion nests deeper than ``limits.max_parity_depth``.
    """
    limits = limits or Limits()
    n = len(game)
    if n > limits.max_game_vertices:
        msg = f"{n} vertices exceed limit {limits.max_game_vertices}"
        raise ParityUnsolved(
            msg,
            limit=limits.max_game_vertices,
        )
    return _solve(game, frozenset(range(n)), 1, limits.max_parity_depth)


def _solve(
    game: GameGraph, vertices: frozenset[int], depth: int, max_depth: int
) -> tuple[frozenset[int], frozenset[int]]:
    """Solve the subgame on a trap; the second recursive call is folded into the loop."""
    won: list[set[int]] = [set(), set()]
    priority = game.priority
    while vertices:
        if depth > max_depth:
            msg = f"parity recursion deeper than limit {max_depth}"
            raise ParityUnsolved(msg, limit=max_depth)
        top_priority = max(priority[v] for v in vertices)
        top = [v for v in vertices if priority[v] == top_priority]
        favoured = top_priority % 2
        other = 1 - favoured
        pulled = attractor(game, vertices, top, player=favoured)
        sub = _solve(game, vertices - pulled, depth + 1, max_depth)
        if not sub[other]:
            won[favoured] |= vertices
            break
        lost = attractor(game, vertices, sub[other], player=other)
        won[other] |= lost
        vertices = vertices - lost
    return frozenset(won[0]), frozenset(won[1])


def even_wins(game: GameGraph, limits: Limits | None = None) -> tuple[bool, ...]:
    """Return, for each vertex, whether the controller (Even) wins the parity game from it.

    Raises:
        ParityUnsolved: see ``winning_regions``.
    """
    controller, _ = winning_regions(game, limits)
    return tuple(v in controller for v in range(len(game)))


def controller_wins_from_start(game: GameGraph, limits: Limits | None = None) -> bool:
    """Return whether the controller wins the parity game from ``game.start``.

    Raises:
        ParityUnsolved: see ``winning_regions``.
    """
    return even_wins(game, limits)[game.start]
