"""Recursive tangle learning: larger random games, van Dijk's two counters, its safety net."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from games_benchmark import GAMES
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision.statechart import (
    NO_LIMITS,
    GameGraph,
    Limits,
    ParityUnsolved,
    check_certificate,
    solve_parity,
)
from grounded_decision.statechart._parity_core import Budget
from grounded_decision.statechart._rtl import RecursiveTangleSolver, solve_recursive_tangles
from grounded_decision.statechart._tangle import solve_tangles

Args = tuple[Sequence[Sequence[int]], Sequence[Sequence[int]], Sequence[int], Sequence[int]]


def _args(game: GameGraph) -> Args:
    return (game.successors, game.predecessors, game.owner, game.priority)


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(1, 80),
    seed=st.integers(0, 2**32 - 1),
    priorities=st.sampled_from([2, 3, 5, 8, None]),
)
def test_rtl_agrees_with_zielonka_on_random_games(
    n: int, seed: int, priorities: int | None
) -> None:
    """On random games too large for brute force, rtl's certified winners equal Zielonka's."""
    game = GAMES.random_parity_game(n, random.Random(seed), priorities=priorities)
    recursive = solve_parity(game, NO_LIMITS, algorithm="rtl")
    assert check_certificate(game, recursive.winner, recursive.strategy).valid
    assert recursive.algorithm == "rtl"
    assert recursive.winner == solve_parity(game, NO_LIMITS, algorithm="zielonka").winner


def test_van_dijk_counters_take_rtl_far_fewer_steps() -> None:
    """On the two-counter game (8 bits) rtl works 4x less than Zielonka and 20x less than tl."""
    game = GAMES.van_dijk_counters(8)
    assert len(game) == 8 * 8 + 3 * 8 * 7
    zielonka = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    tangles = solve_parity(game, NO_LIMITS, algorithm="tl")
    recursive = solve_parity(game, NO_LIMITS, algorithm="rtl")
    assert zielonka.winner == tangles.winner == recursive.winner
    assert check_certificate(game, recursive.winner, recursive.strategy).valid
    assert recursive.steps * 4 < zielonka.steps
    assert recursive.steps * 20 < tangles.steps


def test_auto_hands_the_two_counters_to_rtl() -> None:
    """auto's race between Zielonka and rtl is won by rtl on the two-counter game."""
    game = GAMES.van_dijk_counters(8)
    solution = solve_parity(game, NO_LIMITS)
    assert solution.algorithm == "rtl"
    assert check_certificate(game, solution.winner, solution.strategy).valid


def test_rtl_on_a_subgame_leaves_the_rest_undecided() -> None:
    """Given the vertices of a subgame, rtl decides exactly those and marks the others -1."""
    game = GameGraph(
        names=("a", "b", "c"),
        start=0,
        edges=(((1, "e", 0.0),), ((1, "e", 0.0),), ((2, "e", 0.0), (0, "e", 0.0))),
        priority=(0, 3, 2),
        owner=(0, 0, 1),
    )
    winner, strategy = solve_recursive_tangles(
        *_args(game), budget=Budget(None, None), vertices=[1]
    )
    assert (winner, strategy) == ([-1, 1, -1], [-1, -1, -1])


def test_the_fallback_completes_a_solve_with_tangle_learning() -> None:
    """When a pass makes no progress the rest goes to tl: from scratch that is tl's answer."""
    game = GAMES.van_dijk_counters(4)
    solver = RecursiveTangleSolver(*_args(game), Budget(None, None), None)
    solver.finish_with_tangles()
    winner, strategy = solver.answer()
    expected = solve_tangles(*_args(game), budget=Budget(None, None))
    assert (winner, strategy) == expected
    assert check_certificate(game, winner, strategy).valid


def test_rtl_steps_report_each_region() -> None:
    """rtl runs a region per step, so a race can interleave it; the steps end in an answer."""
    game = GAMES.counter_core(6)
    solver = RecursiveTangleSolver(*_args(game), Budget(None, None), None)
    regions = sum(1 for _ in solver.steps())
    assert regions > 1
    winner, strategy = solver.answer()
    assert check_certificate(game, winner, strategy).valid
    assert len(solver.known) == len(solver.t_player)


def test_rtl_refuses_past_its_step_budget() -> None:
    """A spent step budget stops rtl with ParityUnsolved naming parity_steps."""
    with pytest.raises(
        ParityUnsolved, match=r"more than 100 steps \(Limits\.parity_steps\)"
    ) as err:
        solve_parity(
            GAMES.van_dijk_counters(6), Limits(None, None, None, parity_steps=100), algorithm="rtl"
        )
    assert err.value.setting == "parity_steps"
