"""Howard's policy iteration (what the mean-payoff functions use) against Karp and brute force."""

from __future__ import annotations

import random
from fractions import Fraction

from gd_strategies import brute_cycle_means, games
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision.examples.payment import payment_chart
from grounded_decision.statechart import (
    GameGraph,
    compile_game,
    max_mean_cycle,
    max_mean_payoff,
    min_mean_payoff,
)
from grounded_decision.statechart._policy_iteration import IntEdges, evaluate, howard_max, int_graph
from grounded_decision.statechart.mean_payoff import _karp_reference
from grounded_decision.statechart.two_player import _fix


def random_graph(n: int, rng: random.Random, *, step: float = 1.0) -> GameGraph:
    """A one-player total graph: out-degree 1 to 3, weights multiples of ``step`` in [-5, 5]."""
    edges = tuple(
        tuple(
            (rng.randrange(n), f"e{v}_{i}", step * rng.randint(int(-5 / step), int(5 / step)))
            for i in range(rng.randint(1, 3))
        )
        for v in range(n)
    )
    return GameGraph(
        names=tuple(f"v{i}" for i in range(n)),
        start=0,
        edges=edges,
        priority=(0,) * n,
        owner=(0,) * n,
    )


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=10))
def test_howard_equals_karp_exactly_on_random_graphs(game: GameGraph) -> None:
    """Maximum and minimum cycle means are the very floats Karp computes on integer weights."""
    assert max_mean_payoff(game) == _karp_reference(game)
    assert min_mean_payoff(game) == _karp_reference(game, maximise=False)


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=8))
def test_howard_equals_the_best_simple_cycle_exactly(game: GameGraph) -> None:
    """The exact mean and its cycle match enumeration of the simple reachable cycles."""
    means = brute_cycle_means(game)
    best, cycle = max_mean_cycle(game)
    worst, _ = max_mean_cycle(game, maximise=False)
    assert best == max(means)
    assert worst == min(means)
    assert len(set(cycle)) == len(cycle)
    for u, v in zip(cycle, (*cycle[1:], cycle[0]), strict=True):
        assert v in game.successors[u]


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([1.0, 0.5, 0.25]))
def test_howard_equals_karp_on_larger_graphs(seed: int, step: float) -> None:
    """On 150-vertex graphs with dyadic weights Howard and Karp agree to the last bit."""
    game = random_graph(150, random.Random(seed), step=step)
    assert max_mean_payoff(game) == _karp_reference(game)
    assert min_mean_payoff(game) == _karp_reference(game, maximise=False)


def test_decimal_weights_give_the_exact_mean_of_the_floats() -> None:
    """With weights 0.1 and 0.2 the result is the rounded exact mean of the two floats."""
    game = GameGraph(
        names=("a", "b"),
        start=0,
        edges=(((1, "go", 0.1),), ((0, "back", 0.2),)),
        priority=(0, 0),
        owner=(0, 0),
    )
    mean, cycle = max_mean_cycle(game)
    assert mean == (Fraction(0.1) + Fraction(0.2)) / 2
    assert sorted(cycle) == [0, 1]
    assert max_mean_payoff(game) == float(mean)


def test_fixing_a_strategy_keeps_only_that_move() -> None:
    """The one-player rest of a game keeps one edge at each vertex of the fixed player."""
    game = compile_game(payment_chart())
    fixed = _fix(game, tuple(len(out) - 1 for out in game.edges), 1)
    for v, out in enumerate(fixed.edges):
        assert len(out) == (1 if game.owner[v] == 1 else len(game.edges[v]))


def _exact_gains(edges: IntEdges, spread: bool) -> tuple[list[tuple[int, int]], list[int]]:
    """Howard's final gains and biases, checked against a full evaluation of its policy."""
    policy, value = howard_max(edges, spread=spread)
    full = evaluate(edges, policy)
    gains = [value.gain_of(v) for v in range(len(edges))]
    assert gains == [full.gain_of(v) for v in range(len(edges))]
    assert value.bias == full.bias
    return gains, policy


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=10))
def test_rounds_that_redo_only_what_changed_end_as_a_full_evaluation(game: GameGraph) -> None:
    """The gains and biases Howard returns are exactly those of evaluating its policy afresh."""
    edges = int_graph(game).edges
    _exact_gains(edges, spread=False)
    _exact_gains(edges, spread=True)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32))
def test_spreading_gains_keeps_every_optimal_gain(seed: int) -> None:
    """On 300-vertex graphs, spreading higher gains ends at the same gain at every vertex."""
    edges = int_graph(random_graph(300, random.Random(seed))).edges
    plain, _ = _exact_gains(edges, spread=False)
    spread, _ = _exact_gains(edges, spread=True)
    assert plain == spread


def test_spreading_switches_every_vertex_that_can_reach_a_higher_gain() -> None:
    """A chain into a heavy loop takes the loop's gain in one spread, with no cycle made."""
    # 0 <-> 1 weigh 0 (the heaviest first moves), 1 -> 2 weighs -1, 2 loops with weight 5.
    edges: IntEdges = (((1, 0),), ((0, 0), (2, -1)), ((2, 5),))
    policy, value = howard_max(edges, spread=True)
    assert policy == [0, 1, 0]
    assert [value.gain_of(v) for v in range(3)] == [(5, 1)] * 3
