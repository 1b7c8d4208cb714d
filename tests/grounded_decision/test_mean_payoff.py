"""Karp's mean-cycle solver: the worked table, limits and brute-force cross-checks."""

from __future__ import annotations

import math

import pytest
from gd_strategies import brute_cycle_means, games
from hypothesis import given, settings

from grounded_decision.statechart import (
    GameGraph,
    GameTooLarge,
    Limits,
    Statechart,
    compile_game,
    max_mean_payoff,
    min_mean_payoff,
    nonnegative_mean,
    walk_weights,
)

NEG = -math.inf

KARP_CHART = (
    Statechart("k")
    .state("a", initial=True)
    .state("b")
    .on("a", "go", "b", payoff=2.0)
    .on("b", "back", "a", payoff=4.0)
)


def test_karp_worked_table_rows() -> None:
    """The walk table of the two-state chart is 0/-inf, -inf/2, 6/-inf."""
    game = compile_game(KARP_CHART)
    assert game.edges == (((1, "go", 2.0),), ((0, "back", 4.0),))
    assert walk_weights(game, 2) == ((0.0, NEG), (NEG, 2.0), (6.0, NEG))


def test_karp_worked_example_gives_three_both_ways() -> None:
    """The only cycle a -> b -> a has mean 3.0, so maximum and minimum agree."""
    game = compile_game(KARP_CHART)
    assert max_mean_payoff(game) == 3.0
    assert min_mean_payoff(game) == 3.0


def test_mean_limit_message() -> None:
    """Above max_karp_vertices the solver raises with the documents' message."""
    game = compile_game(KARP_CHART)
    with pytest.raises(GameTooLarge, match=r"^2 vertices exceed the mean-payoff limit 1$"):
        max_mean_payoff(game, Limits(max_karp_vertices=1))
    with pytest.raises(GameTooLarge, match=r"^2 vertices exceed the mean-payoff limit 1$"):
        nonnegative_mean(game, Limits(max_karp_vertices=1))


def test_unreachable_cycles_do_not_count() -> None:
    """A rich cycle the start cannot reach does not lift the best mean."""
    game = GameGraph(
        names=("s", "x"),
        start=0,
        edges=(((0, "loop", -1.0),), ((0, "e", 0.0), (1, "rich", 9.0))),
        priority=(0, 0),
        owner=(0, 0),
    )
    assert max_mean_payoff(game) == -1.0
    assert nonnegative_mean(game) is False


def test_inner_minimum_picks_the_weakest_cycle_for_each_end_vertex() -> None:
    """With a poor cycle and a rich cycle on one vertex, the maximum is the rich one."""
    game = GameGraph(
        names=("a", "b"),
        start=0,
        edges=(((0, "poor", -2.0), (1, "go", 1.0)), ((0, "back", 3.0),)),
        priority=(0, 0),
        owner=(0, 0),
    )
    assert max_mean_payoff(game) == 2.0
    assert min_mean_payoff(game) == -2.0


def test_tolerance_accepts_rounding_below_zero() -> None:
    """A best mean within 1e-12 below zero still counts as nonnegative."""
    game = GameGraph(names=("a",), start=0, edges=(((0, "e", -1e-13),),), priority=(0,), owner=(0,))
    assert nonnegative_mean(game) is True


@settings(max_examples=200, deadline=None)
@given(games(max_vertices=8))
def test_karp_matches_brute_force_cycle_enumeration(game: GameGraph) -> None:
    """Karp's maximum and minimum equal the best and worst simple reachable cycle means."""
    means = brute_cycle_means(game)
    assert means, "a total graph always has a reachable cycle"
    assert max_mean_payoff(game) == pytest.approx(float(max(means)), abs=1e-9)
    assert min_mean_payoff(game) == pytest.approx(float(min(means)), abs=1e-9)
