"""The two-player mean-payoff solver against enumeration of positional strategies."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from gd_strategies import games
from hypothesis import given, settings

from grounded_decision.statechart import (
    GameGraph,
    GameGraphError,
    GameTooLarge,
    Limits,
    MeanPayoffSolution,
    Statechart,
    compile_game,
    max_mean_payoff,
    mean_payoff_value,
    solve_mean_payoff,
    strategy_guarantees,
)


def lasso_mean(game: GameGraph, moves: list[int]) -> Fraction:
    """Exact mean of the cycle that the play from the start ends in under ``moves``."""
    seen: dict[int, int] = {}
    path: list[int] = []
    v = game.start
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        v = game.edges[v][moves[v]][0]
    cycle = path[seen[v] :]
    total = sum((Fraction(game.edges[u][moves[u]][2]) for u in cycle), Fraction(0))
    return total / len(cycle)


def brute_value(game: GameGraph) -> Fraction:
    """Max over controller strategies of min over environment strategies of the lasso mean."""
    n = len(game)
    mine = [v for v in range(n) if game.owner[v] == 0]
    theirs = [v for v in range(n) if game.owner[v] == 1]
    best: Fraction | None = None
    for pick in itertools.product(*(range(len(game.edges[v])) for v in mine)):
        worst: Fraction | None = None
        for reply in itertools.product(*(range(len(game.edges[v])) for v in theirs)):
            moves = [0] * n
            for v, i in (*zip(mine, pick, strict=True), *zip(theirs, reply, strict=True)):
                moves[v] = i
            mean = lasso_mean(game, moves)
            worst = mean if worst is None or mean < worst else worst
        assert worst is not None
        best = worst if best is None or worst > best else best
    assert best is not None
    return best


def one_vertex(weight: float) -> GameGraph:
    """A single vertex with one self-loop of the given weight."""
    return GameGraph(names=("a",), start=0, edges=(((0, "e", weight),),), priority=(0,), owner=(0,))


@settings(max_examples=150, deadline=None)
@given(games(max_vertices=8))
def test_value_matches_enumeration_of_positional_strategies(game: GameGraph) -> None:
    """The value from the start equals max-min over positional strategies of the lasso mean."""
    assert mean_payoff_value(game, Limits(max_karp_vertices=None)) == brute_value(game)


@settings(max_examples=60, deadline=None)
@given(games(max_vertices=8))
def test_returned_strategies_are_optimal_for_both_players(game: GameGraph) -> None:
    """Fixing either returned strategy and solving the rest exactly gives the value."""
    solution = solve_mean_payoff(game)
    assert strategy_guarantees(game, solution.strategy) == (solution.value, solution.value)
    for v in range(len(game)):
        assert 0 <= solution.strategy[v] < len(game.edges[v])
        assert solution.values[v] == mean_payoff_value(_from(game, v))


def _from(game: GameGraph, v: int) -> GameGraph:
    """The same game, started at ``v``."""
    return GameGraph(
        names=game.names, start=v, edges=game.edges, priority=game.priority, owner=game.owner
    )


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=8, two_player=False))
def test_one_player_value_is_the_best_cycle_mean(game: GameGraph) -> None:
    """With no environment vertex, the value is the best reachable cycle mean."""
    assert float(mean_payoff_value(game)) == max_mean_payoff(game)


def test_environment_choice_lowers_the_value_below_the_best_case() -> None:
    """A customer who can keep failing drags the value to the costly loop; best case ignores it."""
    chart = (
        Statechart("retries")
        .state("submitted", initial=True)
        .state("retrying", action="retry", payoff=-1.0, environment=True)
        .state("closed", action="close", payoff=1.0)
        .on("submitted", "fail", "retrying")
        .on("retrying", "fail", "retrying")
        .on("retrying", "give_up", "closed")
        .validate()
    )
    game = compile_game(chart)
    solution = solve_mean_payoff(game)
    assert solution.value == -1
    assert max_mean_payoff(game) == 1.0
    assert solution.successor(game, game.index("retrying")) == game.index("retrying")
    assert isinstance(solution, MeanPayoffSolution)


def test_exact_value_of_non_integer_weights() -> None:
    """Weights such as 0.1 are solved exactly as the fractions the floats hold."""
    assert mean_payoff_value(one_vertex(0.1)) == Fraction(0.1)


def test_size_limit_and_bad_weight_are_refused() -> None:
    """Above max_karp_vertices it refuses with the mean-payoff message; inf weights are named."""
    game = compile_game(
        Statechart("k").state("a", initial=True).state("b").on("a", "go", "b").on("b", "back", "a")
    )
    with pytest.raises(GameTooLarge, match=r"^2 vertices exceed the mean-payoff limit 1$"):
        solve_mean_payoff(game, Limits(max_karp_vertices=1))
    with pytest.raises(GameGraphError, match=r"edge 0 -> 0 \('e'\) has weight inf"):
        mean_payoff_value(one_vertex(float("inf")))
