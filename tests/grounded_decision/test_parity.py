"""Zielonka's parity solver: the documents' worked examples and brute-force cross-checks."""

from __future__ import annotations

import pytest
from gd_strategies import brute_even_wins, games
from hypothesis import given, settings

from grounded_decision.statechart import (
    GameGraph,
    Limits,
    ParityUnsolved,
    Statechart,
    attractor,
    compile_game,
    controller_wins_from_start,
    even_wins,
    nonnegative_mean,
    winning_regions,
)

ODD_TRAP = (
    Statechart("t").state("a", initial=True).state("p", action="page", priority=1).on("a", "e", "p")
)
WAY_OUT = (
    Statechart("w")
    .state("a", initial=True)
    .state("p", priority=1)
    .state("done")
    .on("a", "e", "p")
    .on("p", "e", "p")
    .on("p", "fix", "done")
)
WAY_OUT_ENV = (
    Statechart("w")
    .state("a", initial=True)
    .state("p", priority=1, environment=True)
    .state("done")
    .on("a", "e", "p")
    .on("p", "e", "p")
    .on("p", "fix", "done")
)

CONTRIBUTOR_TABLE = [
    ("odd final state", ODD_TRAP, False, True),
    (
        "ends in even",
        Statechart("c").state("a", initial=True, priority=1).state("b").on("a", "e", "b"),
        True,
        True,
    ),
    (
        "odd two-cycle",
        Statechart("c")
        .state("a", initial=True, priority=1)
        .state("b", priority=1)
        .on("a", "e", "b")
        .on("b", "e", "a"),
        False,
        True,
    ),
    (
        "costly",
        Statechart("c")
        .state("a", initial=True, payoff=-1.0)
        .state("b", payoff=-1.0)
        .on("a", "e", "b"),
        True,
        False,
    ),
    ("service way out", WAY_OUT, True, True),
    ("environment keeps looping", WAY_OUT_ENV, False, True),
]


@pytest.mark.parametrize(
    ("label", "chart", "parity", "mean"),
    CONTRIBUTOR_TABLE,
    ids=[row[0] for row in CONTRIBUTOR_TABLE],
)
def test_contributor_table_rows(label: str, chart: Statechart, parity: bool, mean: bool) -> None:
    """Each chart of the contributors' table gives its parity_win and nonnegative_mean values."""
    game = compile_game(chart)
    assert controller_wins_from_start(game) is parity
    assert nonnegative_mean(game) is mean


def test_all_even_chart_is_won_everywhere() -> None:
    """Two even vertices a -> b with b final: Even wins both."""
    game = compile_game(Statechart("c").state("a", initial=True).state("b").on("a", "e", "b"))
    assert even_wins(game) == (True, True)


def test_odd_trap_attracts_the_start() -> None:
    """Odd's attractor of {p} includes a, whose only move leads to p, and Odd wins everything."""
    game = compile_game(ODD_TRAP)
    assert attractor(game, range(2), [1], player=1) == frozenset({0, 1})
    assert winning_regions(game) == (frozenset(), frozenset({0, 1}))


def test_service_way_out_attractors() -> None:
    """Even's attractor of {done} takes p (one good move) and then a; Even wins all three."""
    game = compile_game(WAY_OUT)
    assert attractor(game, range(3), [1], player=1) == frozenset({0, 1})
    assert attractor(game, range(3), [2], player=0) == frozenset({0, 1, 2})
    assert even_wins(game) == (True, True, True)


def test_environment_owned_loop_blocks_the_way_out() -> None:
    """With p environment-owned, Even attracts only {done} and loses from a and p."""
    game = compile_game(WAY_OUT_ENV)
    assert attractor(game, range(3), [2], player=0) == frozenset({2})
    assert even_wins(game) == (False, False, True)


def test_attractor_keeps_a_stuck_opponent() -> None:
    """An opponent vertex with no move left inside the universe is attracted."""
    game = GameGraph(
        names=("a", "b", "c"),
        start=0,
        edges=(((1, "e", 0.0),), ((2, "e", 0.0),), ((2, "e", 0.0),)),
        priority=(0, 0, 0),
        owner=(1, 1, 0),
    )
    assert attractor(game, {0, 1}, [], player=0) == frozenset({1, 0})


def test_depth_limit_raises_parity_unsolved() -> None:
    """Six nested priorities need six levels of recursion; a limit of five is refused."""
    chart = Statechart("deep").state("s0", initial=True).on("s0", "stay", "s0")
    for i in range(1, 6):
        chart = chart.state(f"s{i}", priority=i, environment=i % 2 == 1)
        chart = chart.on(f"s{i - 1}", "next", f"s{i}")
        if i < 5:
            chart = chart.on(f"s{i}", "stay", f"s{i}")
    game = compile_game(chart)
    assert even_wins(game, Limits(max_parity_depth=6)) == (True, False, True, False, True, False)
    with pytest.raises(
        ParityUnsolved,
        match=(
            r"^parity recursion deeper than limit 5 \(Limits\.max_parity_depth\);"
            r" raise max_parity_depth, or pass None for no cap$"
        ),
    ):
        even_wins(game, Limits(max_parity_depth=5))


def test_vertex_limit_raises_parity_unsolved() -> None:
    """even_wins itself refuses a game with more vertices than max_game_vertices."""
    game = compile_game(ODD_TRAP)
    with pytest.raises(
        ParityUnsolved,
        match=(
            r"^2 vertices exceed limit 1 \(Limits\.max_game_vertices\);"
            r" raise max_game_vertices, or pass None for no cap$"
        ),
    ):
        even_wins(game, Limits(max_game_vertices=1))


@settings(max_examples=150, deadline=None)
@given(games(two_player=True))
def test_zielonka_matches_brute_force_on_random_games(game: GameGraph) -> None:
    """Zielonka agrees with strategy enumeration on random two-player games."""
    assert even_wins(game) == brute_even_wins(game)


@settings(max_examples=100, deadline=None)
@given(games(two_player=False))
def test_zielonka_matches_brute_force_on_one_player_games(game: GameGraph) -> None:
    """Zielonka agrees with strategy enumeration when the controller owns every vertex."""
    assert even_wins(game) == brute_even_wins(game)


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=10, max_priority=4))
def test_winning_regions_partition_the_vertices(game: GameGraph) -> None:
    """The two winning regions are disjoint and cover every vertex."""
    even, odd = winning_regions(game)
    assert not even & odd
    assert even | odd == frozenset(range(len(game)))


@settings(max_examples=100, deadline=None)
@given(games(max_vertices=10, max_priority=4))
def test_winning_regions_are_closed_under_the_owners_rules(game: GameGraph) -> None:
    """Each winner can stay in its region and the loser cannot leave the other's."""
    regions = winning_regions(game)
    for player, region in enumerate(regions):
        for v in region:
            inside = [w in region for w in game.successors[v]]
            if game.owner[v] == player:
                assert any(inside)
            else:
                assert all(inside)
