"""Every parity algorithm against brute force, crafted families, budgets and deep games."""

from __future__ import annotations

import pytest
from games_benchmark import GAMES
from gd_strategies import brute_even_wins, games
from hypothesis import given, settings

from grounded_decision.statechart import (
    ALGORITHMS,
    NO_LIMITS,
    GameGraph,
    Limits,
    ParityUnsolved,
    SolverChoiceError,
    check_certificate,
    solve_parity,
)
from grounded_decision.statechart._peel import peel
from grounded_decision.statechart.parity import AUTO_WORK_FLOOR, AUTO_WORK_PER_EDGE


def _wins(game: GameGraph, algorithm: str, limits: Limits = NO_LIMITS) -> tuple[bool, ...]:
    solution = solve_parity(game, limits, algorithm=algorithm)
    assert check_certificate(game, solution.winner, solution.strategy).valid
    return tuple(side == 0 for side in solution.winner)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=120, deadline=None)
@given(game=games(two_player=True, max_priority=6))
def test_every_algorithm_matches_brute_force(algorithm: str, game: GameGraph) -> None:
    """Each algorithm's certified regions equal strategy enumeration on two-player games."""
    assert _wins(game, algorithm) == brute_even_wins(game)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=60, deadline=None)
@given(game=games(two_player=False, max_priority=6))
def test_every_algorithm_matches_brute_force_one_player(algorithm: str, game: GameGraph) -> None:
    """Each algorithm agrees with enumeration when the controller owns every vertex."""
    assert _wins(game, algorithm) == brute_even_wins(game)


@settings(max_examples=60, deadline=None)
@given(game=games(two_player=True, max_priority=6))
def test_auto_under_the_default_depth_cap_matches_brute_force(game: GameGraph) -> None:
    """auto with the default Limits (Zielonka first) gives the brute-force answer."""
    assert _wins(game, "auto", Limits()) == brute_even_wins(game)


def test_random_games_agree_across_algorithms() -> None:
    """On seeded random games of 300 vertices every algorithm gives the same winners."""
    import random

    rng = random.Random(7)
    for _ in range(5):
        game = GAMES.random_parity_game(300, rng)
        answers = {_wins(game, algorithm) for algorithm in ALGORITHMS}
        assert len(answers) == 1


@pytest.mark.parametrize(
    "label",
    [
        "counter_core",
        "ladder",
        "jurdzinski",
        "two_counters",
        "van_dijk",
        "jurdzinski_pgsolver",
        "recursive_ladder",
    ],
)
def test_crafted_families_agree_with_the_previous_zielonka(label: str) -> None:
    """Small members of each crafted family: every algorithm matches the previous Zielonka."""
    game = {
        "counter_core": lambda: GAMES.counter_core(4),
        "ladder": lambda: GAMES.ladder(30),
        "jurdzinski": lambda: GAMES.jurdzinski(4, 4),
        "two_counters": lambda: GAMES.two_counters(4),
        "van_dijk": lambda: GAMES.van_dijk_counters(3),
        "jurdzinski_pgsolver": lambda: GAMES.jurdzinski_pgsolver(3, 3),
        "recursive_ladder": lambda: GAMES.recursive_ladder(8),
    }[label]()
    even, _ = GAMES.old_zielonka(game)
    expected = tuple(v in even for v in range(len(game)))
    for algorithm in ALGORITHMS:
        assert _wins(game, algorithm) == expected


def test_recursive_ladder_is_pgsolvers_game() -> None:
    """``recursive_ladder(2)`` written out from PGSolver's definition: three rungs, the
    first keeping its last three vertices and the last its first two."""
    game = GAMES.recursive_ladder(2)
    table = [  # priority, owner, successors
        (5, 1, (4, 1)),
        (4, 0, (6, 2)),
        (3, 1, (1, 4)),
        (0, 0, (1, 4)),
        (0, 1, (3, 5)),
        (8, 0, (9, 6)),
        (7, 1, (1, 7)),
        (6, 0, (6, 9)),
        (1, 1, (6, 9)),
        (1, 0, (8,)),
    ]
    assert [(game.priority[v], game.owner[v], game.successors[v]) for v in range(10)] == table
    assert all(len(GAMES.recursive_ladder(n)) == 5 * n for n in range(1, 12))


def test_recursive_ladder_takes_zielonka_far_more_steps_than_the_others() -> None:
    """The family is built against Zielonka's recursion (its steps grow exponentially with
    the rungs); the other solvers answer it in far fewer, and auto hands it to recursive tangle
    learning once Zielonka's allowance is spent."""
    game = GAMES.recursive_ladder(18)
    zielonka = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    for algorithm in ("promotion", "tl", "rtl", "auto"):
        other = solve_parity(game, NO_LIMITS, algorithm=algorithm)
        assert other.winner == zielonka.winner
        assert other.steps * 10 < zielonka.steps
    assert solve_parity(game, NO_LIMITS).algorithm == "rtl"


def test_promotion_and_tangles_solve_the_core_counter_quickly() -> None:
    """The core counter that makes Zielonka exponential takes promotion, tl and rtl far fewer
    steps."""
    game = GAMES.counter_core(8)
    zielonka = solve_parity(game, NO_LIMITS, algorithm="zielonka")
    promotion = solve_parity(game, NO_LIMITS, algorithm="promotion")
    tangles = solve_parity(game, NO_LIMITS, algorithm="tl")
    recursive = solve_parity(game, NO_LIMITS, algorithm="rtl")
    assert zielonka.winner == promotion.winner == tangles.winner == recursive.winner
    assert promotion.steps * 10 < zielonka.steps
    assert tangles.steps * 50 < zielonka.steps
    assert recursive.steps * 50 < zielonka.steps


def test_auto_without_a_depth_cap_hands_a_crafted_game_to_recursive_tangle_learning() -> None:
    """With no depth cap auto gives Zielonka an allowance, then races recursive tangle learning."""
    solution = solve_parity(GAMES.counter_core(10), NO_LIMITS)
    assert solution.algorithm == "rtl"
    assert solve_parity(GAMES.ladder(200), NO_LIMITS).algorithm == "zielonka"


def test_auto_under_the_depth_cap_hands_over_to_recursive_tangle_learning() -> None:
    """Under a depth cap auto runs the plain Zielonka first and the race once it is spent."""
    limits = Limits(max_game_vertices=None, max_parity_depth=1_000)
    game = GAMES.counter_core(12)
    solution = solve_parity(game, limits)
    assert solution.algorithm == "rtl"
    assert check_certificate(game, solution.winner, solution.strategy).valid
    # The learner takes the race's first turn, so after the trial Zielonka does at most one
    # more level: the steps are the trial's and the learner's (a few thousand), not a
    # further turn of Zielonka's, which would add far more in its 50 ms.
    trial = AUTO_WORK_FLOOR + AUTO_WORK_PER_EDGE * (len(game) + sum(map(len, game.successors)))
    learner = solve_parity(game, NO_LIMITS, algorithm="rtl").steps
    assert solution.steps < trial + 2 * learner + 1_000


def _chain(n: int) -> GameGraph:
    """A path of n vertices with rising priorities, ending in a self-loop."""
    return GameGraph(
        names=tuple(f"v{v}" for v in range(n)),
        start=0,
        edges=tuple(((min(v + 1, n - 1), "next", 0.0),) for v in range(n)),
        priority=tuple(range(n)),
        owner=tuple(v % 2 for v in range(n)),
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_a_deep_chain_needs_no_recursion_limit(algorithm: str) -> None:
    """A 20,000-vertex chain with 20,000 priorities solves without Python recursion."""
    game = _chain(20_000)
    solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    top_side = (20_000 - 1) % 2
    assert set(solution.winner) == {top_side}
    assert check_certificate(game, solution.winner, solution.strategy).valid


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_twenty_thousand_nested_priorities_need_no_recursion_limit(algorithm: str) -> None:
    """A 20,000-vertex ladder of self-loops that nothing peels off: each owner keeps its loop."""
    n = 20_000
    game = GameGraph(
        names=tuple(f"v{v}" for v in range(n)),
        start=0,
        edges=tuple(((v, "stay", 0.0), (min(v + 1, n - 1), "next", 0.0)) for v in range(n)),
        priority=tuple(range(n)),
        owner=tuple(v % 2 for v in range(n)),
    )
    solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    assert solution.winner == game.owner
    assert check_certificate(game, solution.winner, solution.strategy).valid


def test_peeling_takes_off_what_no_move_returns_to() -> None:
    """A path into a loop peels from its free end; only the loop is left to solve."""
    game = _chain(5)
    peeling = peel(game.successors, game.predecessors)
    assert peeling.peeled == [0, 1, 2, 3]
    assert peeling.core == [4]
    looped = GameGraph(
        names=("a", "b", "c"),
        start=0,
        edges=(((1, "e", 0.0),), ((0, "e", 0.0), (2, "e", 0.0)), ((2, "e", 0.0),)),
        priority=(0, 1, 2),
        owner=(0, 1, 0),
    )
    assert peel(looped.successors, looped.predecessors).peeled == []


def test_peeled_vertices_are_won_by_moving_into_the_owners_region() -> None:
    """An Odd vertex nothing moves to, with a move to each region, is won by Odd via its move."""
    game = GameGraph(
        names=("lead", "even", "odd"),
        start=0,
        edges=(((1, "e", 0.0), (2, "o", 0.0)), ((1, "e", 0.0),), ((2, "o", 0.0),)),
        priority=(4, 0, 1),
        owner=(1, 0, 1),
    )
    for algorithm in ALGORITHMS:
        solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
        assert (solution.winner, solution.strategy) == ((1, 0, 1), (2, 1, 2))


def test_step_budget_refusal_names_the_setting() -> None:
    """A spent step budget raises ParityUnsolved naming parity_steps and how to raise it."""
    with pytest.raises(ParityUnsolved, match=r"Limits\.parity_steps.*raise parity_steps") as err:
        solve_parity(_chain(200), Limits(None, None, None, parity_steps=10))
    assert err.value.setting == "parity_steps"


def test_time_budget_refusal_names_the_setting() -> None:
    """A spent time budget raises ParityUnsolved naming parity_seconds."""
    with pytest.raises(ParityUnsolved, match=r"Limits\.parity_seconds") as err:
        solve_parity(GAMES.counter_core(8), Limits(None, None, None, parity_seconds=1e-9))
    assert err.value.setting == "parity_seconds"


def test_documented_refusals_read_the_same() -> None:
    """The vertex and depth refusals keep their documented opening, then name the Limits
    field and how to raise it, as the budget refusals do."""
    with pytest.raises(
        ParityUnsolved,
        match=(
            r"^3 vertices exceed limit 2 \(Limits\.max_game_vertices\);"
            r" raise max_game_vertices, or pass None for no cap$"
        ),
    ) as err:
        solve_parity(_chain(3), Limits(max_game_vertices=2))
    assert err.value.setting == "max_game_vertices"
    nested = GameGraph(
        names=tuple(f"s{v}" for v in range(6)),
        start=0,
        edges=tuple(((v, "stay", 0.0), (min(v + 1, 5), "next", 0.0)) for v in range(6)),
        priority=tuple(range(6)),
        owner=tuple(v % 2 for v in range(6)),
    )
    with pytest.raises(
        ParityUnsolved,
        match=(
            r"^parity recursion deeper than limit 2 \(Limits\.max_parity_depth\);"
            r" raise max_parity_depth, or pass None for no cap$"
        ),
    ):
        solve_parity(nested, Limits(max_parity_depth=2))


def test_limits_accept_none_and_reject_other_types() -> None:
    """Limits caps take None for no cap; a string or negative number is refused."""
    assert Limits(None, None, None).max_game_vertices is None
    assert Limits().parity_steps is None
    with pytest.raises(TypeError, match="whole number >= 0 or None"):
        Limits(max_game_vertices="200")  # type: ignore[arg-type]  # the wrong type on purpose
    with pytest.raises(ValueError, match="positive"):
        Limits(parity_seconds=0)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("max_game_vertices", -1),
        ("max_parity_depth", -3),
        ("max_karp_vertices", -1),
        ("parity_steps", -10),
        ("parity_seconds", float("nan")),
        ("parity_seconds", -1.5),
    ],
)
def test_limits_refuse_negative_and_nan_values_naming_the_setting(
    setting: str, value: float
) -> None:
    """A negative cap or a NaN or negative time budget is a ValueError naming the setting."""
    with pytest.raises(ValueError, match=rf"^Limits\.{setting} must be"):
        Limits(**{setting: value})


@pytest.mark.parametrize("value", [10**400, 10**5000], ids=["401 digits", "5001 digits"])
def test_limits_refuse_a_time_budget_no_float_holds(value: int) -> None:
    """An int past a float's range is a ValueError naming the setting, not an
    OverflowError when a solve adds it to the clock."""
    with pytest.raises(ValueError, match=r"^Limits\.parity_seconds must be a number of seconds a"):
        Limits(parity_seconds=value)
    assert Limits(parity_seconds=10**300).parity_seconds == 10**300


def _nested() -> GameGraph:
    return GameGraph(
        names=tuple(f"s{v}" for v in range(6)),
        start=0,
        edges=tuple(((v, "stay", 0.0), (min(v + 1, 5), "next", 0.0)) for v in range(6)),
        priority=tuple(range(6)),
        owner=tuple(v % 2 for v in range(6)),
    )


@pytest.mark.parametrize(
    ("limits", "game", "setting"),
    [
        (Limits(max_game_vertices=2), _chain(3), "max_game_vertices"),
        (Limits(max_parity_depth=2), _nested(), "max_parity_depth"),
        (Limits(max_parity_depth=0), _nested(), "max_parity_depth"),
        (Limits(None, None, None, parity_steps=2), _nested(), "parity_steps"),
        (Limits(None, None, None, parity_seconds=1e-9), GAMES.counter_core(8), "parity_seconds"),
    ],
)
def test_every_parity_refusal_ends_naming_its_limit_and_the_fix(
    limits: Limits, game: GameGraph, setting: str
) -> None:
    """Each cap and budget of solve_parity is refused the same way: the Limits field in
    brackets, then how to raise it (the budget refusals' form)."""
    with pytest.raises(ParityUnsolved) as err:
        solve_parity(game, limits)
    assert str(err.value).endswith(f" (Limits.{setting}); raise {setting}, or pass None for no cap")
    assert err.value.setting == setting


def test_limits_accept_an_infinite_time_budget() -> None:
    """parity_seconds=inf is a budget that never runs out."""
    assert solve_parity(_chain(3), Limits(parity_seconds=float("inf"))).winner == (0, 0, 0)


def test_unknown_algorithm_names_the_choices() -> None:
    """An unknown algorithm raises SolverChoiceError listing the ones there are."""
    with pytest.raises(SolverChoiceError, match="choose one of: auto, zielonka, promotion"):
        solve_parity(_chain(2), algorithm="strategy-improvement")


def test_limits_of_the_wrong_type_are_refused() -> None:
    """A number where a Limits belongs is a TypeError, not an AttributeError inside."""
    with pytest.raises(TypeError, match="limits must be a Limits or None, got int"):
        solve_parity(_chain(2), 5)  # type: ignore[arg-type]
