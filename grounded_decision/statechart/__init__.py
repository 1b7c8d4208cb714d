"""Statecharts and the games the progress check solves on them."""

from __future__ import annotations

from grounded_decision.errors import (
    CertificateError,
    GameTooLarge,
    ParityUnsolved,
    PgsolverFormatError,
    SolverChoiceError,
)
from grounded_decision.statechart.certificate import (
    Certificate,
    check_certificate,
    verify_certificate,
)
from grounded_decision.statechart.chart import State, Statechart, Transition
from grounded_decision.statechart.game import (
    CONTROLLER,
    ENVIRONMENT,
    FINAL_EVENT,
    NO_LIMITS,
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
    ALGORITHMS,
    ParitySolution,
    controller_wins_from_start,
    even_wins,
    fast_solver_available,
    solve_parity,
    winning_regions,
)
from grounded_decision.statechart.pgsolver import (
    read_pgsolver,
    read_pgsolver_with_ids,
    read_solution,
    write_pgsolver,
    write_solution,
)
from grounded_decision.statechart.two_player import (
    MeanPayoffSolution,
    mean_payoff_value,
    solve_mean_payoff,
    strategy_guarantees,
)

__all__ = [
    "ALGORITHMS",
    "CONTROLLER",
    "ENVIRONMENT",
    "FINAL_EVENT",
    "MEAN_TOLERANCE",
    "NO_LIMITS",
    "Certificate",
    "CertificateError",
    "GameGraph",
    "GameGraphError",
    "GameTooLarge",
    "Limits",
    "MeanPayoffSolution",
    "ParitySolution",
    "ParityUnsolved",
    "PgsolverFormatError",
    "SolverChoiceError",
    "State",
    "Statechart",
    "Transition",
    "attractor",
    "check_certificate",
    "compile_game",
    "controller_wins_from_start",
    "even_wins",
    "fast_solver_available",
    "max_mean_cycle",
    "max_mean_payoff",
    "mean_payoff_value",
    "min_mean_payoff",
    "nonnegative_mean",
    "read_pgsolver",
    "read_pgsolver_with_ids",
    "read_solution",
    "solve_mean_payoff",
    "solve_parity",
    "strategy_guarantees",
    "verify_certificate",
    "walk_weights",
    "winning_regions",
    "write_pgsolver",
    "write_solution",
]
