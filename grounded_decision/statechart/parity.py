"""Parity games (max-parity, both owners): winning regions with strategies that prove them.

``solve_parity`` runs one of the solvers in ``ALGORITHMS`` on the game with its priorities
compressed and returns a ``ParitySolution``: the winner of every vertex and both players'
positional strategies. ``winning_regions``, ``even_wins`` and ``controller_wins_from_start``
(the progress check's entry point) solve with ``auto`` and run the independent checker of
``statechart.certificate`` on every answer before returning it.
"""

from __future__ import annotations

import attrs

from grounded_decision.errors import ParityUnsolved, SolverChoiceError
from grounded_decision.statechart._parity_core import Budget, compress_priorities
from grounded_decision.statechart._promotion import solve_promotion
from grounded_decision.statechart._zielonka import solve_zielonka
from grounded_decision.statechart.certificate import verify_certificate
from grounded_decision.statechart.game import GameGraph, Limits

__all__ = [
    "ALGORITHMS",
    "ParitySolution",
    "controller_wins_from_start",
    "even_wins",
    "solve_parity",
    "winning_regions",
]

ALGORITHMS = ("auto", "zielonka", "promotion")
"""Solver names ``solve_parity`` accepts.

``zielonka`` is Zielonka's recursive algorithm, run iteratively; ``promotion`` is priority
promotion. ``auto`` runs priority promotion when ``Limits.max_parity_depth`` is ``None``;
under a depth cap (the default 64, defined by Zielonka's nesting) it runs Zielonka, so
every documented refusal reads the same, and hands the game to priority promotion once
Zielonka has done far more work than the game's size calls for.
"""

AUTO_WORK_PER_EDGE = 16
"""``auto`` gives Zielonka this many units of work per vertex and edge (plus a floor)."""
AUTO_WORK_FLOOR = 200_000
"""The least work ``auto`` lets Zielonka do before handing over."""


@attrs.frozen
class ParitySolution:
    """The solution of a parity game.

    Parameters:
        winner: ``0`` (controller, Even) or ``1`` (environment, Odd) for each vertex.
        strategy: for each vertex whose owner wins there, the successor the owner picks;
            ``-1`` at vertices whose owner loses (any move loses there).
        algorithm: the solver that produced it (``zielonka`` or ``promotion``).
        steps: units of work spent (vertices attracted plus edges scanned).

    .. versionadded:: Unreleased
    """

    winner: tuple[int, ...]
    strategy: tuple[int, ...]
    algorithm: str
    steps: int

    @property
    def regions(self) -> tuple[frozenset[int], frozenset[int]]:
        """The winning regions ``(controller, environment)``."""
        even = frozenset(v for v, side in enumerate(self.winner) if side == 0)
        odd = frozenset(v for v, side in enumerate(self.winner) if side == 1)
        return even, odd


def solve_parity(
    game: GameGraph, limits: Limits | None = None, *, algorithm: str = "auto"
) -> ParitySolution:
    """Solve the parity game and return both players' winning regions and strategies.

    The result is not checked here; pass it to ``check_certificate`` (or use
    ``winning_regions``, which does).

    Parameters:
        game: the game.
        limits: ``max_game_vertices``, ``max_parity_depth`` (Zielonka's nesting),
            ``parity_steps`` and ``parity_seconds`` apply; ``None`` in any of them is no cap.
        algorithm: one of ``ALGORITHMS``.

    Raises:
        SolverChoiceError: when ``algorithm`` is not one of ``ALGORITHMS``.
        ParityUnsolved: when the game has more vertices than ``limits.max_game_vertices``,
            Zielonka nests deeper than ``limits.max_parity_depth``, or a budget is spent; the
            message names the setting.

    .. versionadded:: Unreleased
    """
    if algorithm not in ALGORITHMS:
        msg = f"no parity algorithm named {algorithm!r}; choose one of: {', '.join(ALGORITHMS)}"
        raise SolverChoiceError(msg)
    limits = limits or Limits()
    n = len(game)
    if limits.max_game_vertices is not None and n > limits.max_game_vertices:
        msg = f"{n} vertices exceed limit {limits.max_game_vertices}"
        raise ParityUnsolved(msg, limit=limits.max_game_vertices, setting="max_game_vertices")
    priority = compress_priorities(game.priority)
    budget = Budget(limits.parity_steps, limits.parity_seconds)
    args = (game.successors, game.predecessors, game.owner, priority)
    used = algorithm
    if algorithm == "promotion":
        winner, strategy = solve_promotion(*args, budget=budget)
    elif algorithm == "zielonka":
        winner, strategy = solve_zielonka(*args, max_depth=limits.max_parity_depth, budget=budget)
    elif limits.max_parity_depth is None:
        used = "promotion"
        winner, strategy = solve_promotion(*args, budget=budget)
    else:
        used = "zielonka"
        edges = sum(len(out) for out in game.successors)
        trial = Budget(AUTO_WORK_FLOOR + AUTO_WORK_PER_EDGE * (n + edges), None)
        try:
            winner, strategy = solve_zielonka(
                *args, max_depth=limits.max_parity_depth, budget=_Both(trial, budget)
            )
        except _Handover:
            used = "promotion"
            winner, strategy = solve_promotion(*args, budget=budget)
    return ParitySolution(
        winner=tuple(winner), strategy=tuple(strategy), algorithm=used, steps=budget.steps
    )


class _Handover(Exception):
    """Zielonka's trial allowance is spent; ``auto`` moves on to priority promotion."""


class _Both(Budget):
    """The user's budget, plus the trial allowance ``auto`` gives Zielonka."""

    __slots__ = ("outer", "trial")

    def __init__(self, trial: Budget, outer: Budget) -> None:
        super().__init__(None, None)
        self.trial = trial
        self.outer = outer

    def charge(self, units: int) -> None:
        """Charge both; the trial running out hands over instead of failing."""
        self.outer.charge(units)
        self.trial.steps += units
        if self.trial.max_steps is not None and self.trial.steps > self.trial.max_steps:
            raise _Handover


def winning_regions(
    game: GameGraph, limits: Limits | None = None
) -> tuple[frozenset[int], frozenset[int]]:
    """Return the winning regions ``(controller, environment)``; together they partition the game.

    The controller (Even) wins a play when the largest priority seen infinitely often is
    even. The answer is solved with ``auto`` and checked by ``verify_certificate``.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: if the checker rejected the solver's strategies (a solver bug).
    """
    solution = solve_parity(game, limits)
    verify_certificate(game, solution.winner, solution.strategy)
    return solution.regions


def even_wins(game: GameGraph, limits: Limits | None = None) -> tuple[bool, ...]:
    """Return, for each vertex, whether the controller (Even) wins the parity game from it.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: see ``winning_regions``.
    """
    controller, _ = winning_regions(game, limits)
    return tuple(v in controller for v in range(len(game)))


def controller_wins_from_start(game: GameGraph, limits: Limits | None = None) -> bool:
    """Return whether the controller wins the parity game from ``game.start``.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: see ``winning_regions``.
    """
    return even_wins(game, limits)[game.start]
