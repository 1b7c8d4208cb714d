"""Statecharts and the games the progress check solves on them."""

from __future__ import annotations

from grounded_decision.errors import GameTooLarge, ParityUnsolved
from grounded_decision.statechart.chart import State, Statechart, Transition
from grounded_decision.statechart.game import (
    CONTROLLER,
    ENVIRONMENT,
    FINAL_EVENT,
    GameGraph,
    GameGraphError,
    Limits,
    attractor,
    compile_game,
)
from grounded_decision.statechart.mean_payoff import (
    MEAN_TOLERANCE,
    max_mean_cycle,
    max_mean_payoff,
    min_mean_payoff,
    nonnegative_mean,
    walk_weights,
)
from grounded_decision.statechart.parity import (
    controller_wins_from_start,
    even_wins,
    winning_regions,
)
from grounded_decision.statechart.two_player import (
    MeanPayoffSolution,
    mean_payoff_value,
    solve_mean_payoff,
    strategy_guarantees,
)

__all__ = [
    "CONTROLLER",
    "ENVIRONMENT",
    "FINAL_EVENT",
    "MEAN_TOLERANCE",
    "GameGraph",
    "GameGraphError",
    "GameTooLarge",
    "Limits",
    "MeanPayoffSolution",
    "ParityUnsolved",
    "State",
    "Statechart",
    "Transition",
    "attractor",
    "compile_game",
    "controller_wins_from_start",
    "even_wins",
    "max_mean_cycle",
    "max_mean_payoff",
    "mean_payoff_value",
    "min_mean_payoff",
    "nonnegative_mean",
    "solve_mean_payoff",
    "strategy_guarantees",
    "walk_weights",
    "winning_regions",
]
