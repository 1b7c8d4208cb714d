"""Games held in arrays: the same answers, work and verdicts as the same game as a GameGraph."""

from __future__ import annotations

import random

import numpy as np
import pytest
from games_benchmark import GAMES
from gd_strategies import brute_even_wins, games
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision.errors import ParityUnsolved
from grounded_decision.statechart import (
    NO_LIMITS,
    GameGraph,
    GameGraphError,
    Limits,
    _zielonka_native,
    check_certificate,
    parity,
    read_pgsolver,
    solve_parity,
    verify_certificate,
    write_pgsolver,
)
from grounded_decision.statechart.arrays import ArrayGame, ArraySolution


def _same(solution: ArraySolution, game: GameGraph, algorithm: str) -> None:
    expected = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    assert solution.winner.tolist() == list(expected.winner)
    assert solution.strategy.tolist() == list(expected.strategy)
    assert solution.steps == expected.steps
    assert solution.algorithm == expected.algorithm


@settings(max_examples=300, deadline=None)
@given(game=games(two_player=True, max_vertices=14, max_priority=7))
def test_an_array_game_is_solved_as_its_game_graph(game: GameGraph) -> None:
    """Compiled from end to end (peeling included), zielonka and auto give the GameGraph's
    winners, strategies and units of work, and the winners are brute force's."""
    array_game = ArrayGame.from_game(game)
    for algorithm in ("zielonka", "auto"):
        solution = solve_parity(array_game, NO_LIMITS, algorithm=algorithm)
        _same(solution, game, algorithm)
    assert [side == 0 for side in solution.winner.tolist()] == list(brute_even_wins(game))


@pytest.mark.parametrize("seed", range(3))
def test_seeded_random_games_of_thousands_of_vertices(seed: int) -> None:
    """Larger random games, many peeled vertices and as many priorities as vertices."""
    game = GAMES.random_parity_game(5_000, random.Random(seed))
    array_game = ArrayGame.from_game(game)
    solution = solve_parity(array_game, NO_LIMITS, algorithm="zielonka")
    _same(solution, game, "zielonka")
    assert check_certificate(array_game, solution.winner, solution.strategy).valid


@pytest.mark.parametrize(
    "make",
    [
        lambda: GAMES.counter_core(7),
        lambda: GAMES.ladder(300),
        lambda: GAMES.jurdzinski(6, 6),
        lambda: GAMES.two_counters(6),
        lambda: GAMES.van_dijk_counters(6),
        lambda: GAMES.recursive_ladder(8),
    ],
    ids=["counter_core", "ladder", "jurdzinski", "two_counters", "van_dijk", "recursive_ladder"],
)
def test_crafted_families(make: object) -> None:
    game = make()  # type: ignore[operator]
    _same(
        solve_parity(ArrayGame.from_game(game), NO_LIMITS, algorithm="zielonka"), game, "zielonka"
    )


def test_auto_hands_a_struggling_zielonka_over_to_the_race(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no allowance, auto races recursive tangle learning through a GameGraph, on the
    same budget (the compiled Zielonka's work stays counted)."""
    monkeypatch.setattr(parity, "AUTO_FAST_FLOOR", 0)
    monkeypatch.setattr(parity, "AUTO_WORK_PER_EDGE", 0)
    monkeypatch.setattr(_zielonka_native, "CHUNK", 1)
    raced: list[tuple[int, bool]] = []
    race = parity._solve_peeled

    def spy(game: GameGraph, algorithm: str, budget: object, *, alone: bool = True) -> object:
        raced.append((budget.steps, alone))  # type: ignore[attr-defined]
        return race(game, algorithm, budget, alone=alone)  # type: ignore[arg-type]

    monkeypatch.setattr(parity, "_solve_peeled", spy)
    game = GAMES.van_dijk_counters(5)
    array_game = ArrayGame.from_game(game)
    solution = solve_parity(array_game, NO_LIMITS)
    [(spent_before, alone)] = raced
    assert not alone  # no second allowance
    assert spent_before > len(game)  # peeling and a step of Zielonka, already counted
    assert solution.steps > spent_before
    assert solution.algorithm in ("zielonka", "rtl")
    verify_certificate(array_game, solution.winner, solution.strategy)
    assert solution.winner.tolist() == list(solve_parity(game, NO_LIMITS).winner)


@pytest.mark.parametrize("algorithm", ["promotion", "tl", "rtl"])
def test_other_algorithms_solve_through_a_game_graph(algorithm: str) -> None:
    game = GAMES.random_parity_game(300, random.Random(7))
    _same(solve_parity(ArrayGame.from_game(game), NO_LIMITS, algorithm=algorithm), game, algorithm)


def test_a_depth_cap_solves_through_a_game_graph_and_reads_the_same() -> None:
    game = GAMES.recursive_ladder(40)
    limits = Limits(None, 3, None)
    with pytest.raises(ParityUnsolved) as expected:
        solve_parity(game, limits, algorithm="zielonka")
    with pytest.raises(ParityUnsolved) as got:
        solve_parity(ArrayGame.from_game(game), limits, algorithm="zielonka")
    assert str(got.value) == str(expected.value)


def test_without_numba_the_python_solvers_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    game = GAMES.random_parity_game(400, random.Random(3))
    array_game = ArrayGame.from_game(game)
    monkeypatch.setattr(_zielonka_native, "available", lambda: False)
    solution = solve_parity(array_game, NO_LIMITS, algorithm="zielonka")
    _same(solution, game, "zielonka")
    verdict = check_certificate(array_game, solution.winner, solution.strategy)
    assert verdict.valid
    again = ArrayGame.from_game(game)  # predecessors and order by numpy's sorts
    assert again.sources.tolist() == array_game.sources.tolist()
    assert again.order.tolist() == array_game.order.tolist()


def test_budgets_and_the_size_cap_apply() -> None:
    game = ArrayGame.from_game(GAMES.ladder(50_000))
    with pytest.raises(ParityUnsolved, match=r"Limits\.parity_steps"):
        solve_parity(game, Limits(None, None, None, parity_steps=1_000))
    with pytest.raises(ParityUnsolved, match=r"100000 vertices exceed limit 200"):
        solve_parity(game)


def test_the_predecessors_and_the_order_are_the_game_graphs() -> None:
    game = GAMES.random_parity_game(2_000, random.Random(11), priorities=40)
    array_game = ArrayGame.from_game(game)
    offsets = array_game.pred_offsets.tolist()
    sources = array_game.sources.tolist()
    assert [tuple(sources[offsets[v] : offsets[v + 1]]) for v in range(len(game))] == list(
        game.predecessors
    )
    assert array_game.order.tolist() == sorted(
        range(len(game)), key=game.priority.__getitem__, reverse=True
    )
    wide = ArrayGame([0, 1, 0], [10**15, 3, 10**15], [0, 1, 2, 3], [1, 2, 0])
    assert wide.order.tolist() == [0, 2, 1]  # far apart: sorted, not counted


def test_a_game_graph_round_trips() -> None:
    game = GAMES.two_counters(4)
    array_game = ArrayGame.from_game(game)
    back = array_game.to_game()
    assert back.successors == game.successors
    assert back.priority == game.priority
    assert back.owner == game.owner
    assert back.start == game.start
    again = ArrayGame.from_game(back)
    for name in ("owner", "priority", "offsets", "targets"):
        assert getattr(again, name).tolist() == getattr(array_game, name).tolist()


def test_the_arrays_are_copied_and_read_only() -> None:
    targets = np.array([1, 0])
    game = ArrayGame([0, 1], [1, 2], [0, 1, 2], targets)
    targets[0] = 0
    assert game.targets.tolist() == [1, 0]
    with pytest.raises(ValueError, match="read-only"):
        game.targets[0] = 0


def test_a_move_listed_twice_changes_no_answer() -> None:
    twice = ArrayGame([0, 1, 0], [2, 1, 0], [0, 3, 5, 6], [1, 1, 2, 0, 0, 1])
    once = ArrayGame([0, 1, 0], [2, 1, 0], [0, 2, 3, 4], [1, 2, 0, 1])
    a, b = solve_parity(twice, NO_LIMITS), solve_parity(once, NO_LIMITS)
    assert a.winner.tolist() == b.winner.tolist()
    assert check_certificate(twice, a.winner, a.strategy).valid


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (([0, 1], [1], [0, 1, 2], [1, 0]), "2 owners, 1 priorities and 3 offsets"),
        (([], [], [0], []), "no vertices"),
        (([0, 1], [1, 2], [0, 1, 3], [1, 0]), "run from 0 to len"),
        (([0, 1], [1, 2], [0, 0, 2], [1, 0]), "vertex 0 has no outgoing edge"),
        (([0, 1], [1, 2], [0, 1, 2], [1, 5]), r"edge 1 -> 5 leaves the vertices 0\.\.1"),
        (([0, 2], [1, 2], [0, 1, 2], [1, 0]), "vertex 1 has owner 2; use 0 or 1"),
        (([0, 1], [1, -2], [0, 1, 2], [1, 0]), "vertex 1 has priority -2"),
        (([0, 1], [1, 2], [0, 1, 2], [[1, 0]]), "one-dimensional"),
        (([0, 1], [1, "x"], [0, 1, 2], [1, 0]), "ArrayGame.priority must be whole numbers"),
        (([0, 1], [1, 2**70], [0, 1, 2], [1, 0]), "ArrayGame.priority must be whole numbers"),
    ],
)
def test_bad_arrays_are_refused_naming_the_place(args: tuple[object, ...], message: str) -> None:
    with pytest.raises(GameGraphError, match=message):
        ArrayGame(*args)  # type: ignore[arg-type]


def test_a_start_outside_the_vertices_is_refused() -> None:
    with pytest.raises(GameGraphError, match=r"start vertex 2 is not in 0\.\.1"):
        ArrayGame([0, 1], [1, 2], [0, 1, 2], [1, 0], start=2)


def test_anything_else_is_a_type_error_naming_the_function() -> None:
    with pytest.raises(TypeError, match="solve_parity: game must be a GameGraph or an ArrayGame"):
        solve_parity({"vertices": 3}, NO_LIMITS)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="check_certificate: game must be"):
        check_certificate([1, 2], [0], [0])  # type: ignore[arg-type]


def _mutated(
    data: st.DataObject, winner: list[int], strategy: list[int], n: int
) -> tuple[list[int], list[int]]:
    winner, strategy = list(winner), list(strategy)
    for _ in range(data.draw(st.integers(1, 3))):
        v = data.draw(st.integers(0, n - 1))
        if data.draw(st.booleans()):
            winner[v] = data.draw(st.integers(0, 1))
        else:
            strategy[v] = data.draw(st.integers(-1, n - 1))
    return winner, strategy


@settings(max_examples=400, deadline=None)
@given(game=games(two_player=True, max_vertices=12, max_priority=6), data=st.data())
def test_the_compiled_checker_gives_the_python_checkers_verdicts(
    game: GameGraph, data: st.DataObject
) -> None:
    """On true and mutated solutions: the same verdict, problem and vertex."""
    array_game = ArrayGame.from_game(game)
    named = array_game.to_game()  # named by index, as the compiled checker names vertices
    solution = solve_parity(named, NO_LIMITS)
    winner, strategy = list(solution.winner), list(solution.strategy)
    if data.draw(st.booleans()):
        winner, strategy = _mutated(data, winner, strategy, len(game))
    expected = check_certificate(named, winner, strategy)
    got = check_certificate(array_game, np.array(winner), np.array(strategy))
    assert got == expected


def test_the_checker_refuses_wrong_lengths_and_ids() -> None:
    game = ArrayGame([0, 1], [1, 2], [0, 1, 2], [1, 0])
    verdict = check_certificate(game, [0], [1, -1])
    assert not verdict.valid
    assert "1 winners and 2 strategy entries for 2 vertices" in (verdict.problem or "")
    with pytest.raises(ValueError, match="an ArrayGame has none"):
        check_certificate(game, [0, 0], [1, -1], ids=[5, 6])


def test_a_winner_that_is_not_a_number_is_checked_by_the_python_checker() -> None:
    game = ArrayGame([0, 1], [1, 2], [0, 1, 2], [1, 0])
    verdict = check_certificate(game, ["x", 0], [1, -1])  # type: ignore[list-item]
    assert not verdict.valid
    assert verdict.vertex == 0
    assert "has winner 'x'" in (verdict.problem or "")


@settings(max_examples=100, deadline=None)
@given(game=games(two_player=True, max_vertices=12, max_priority=30))
def test_a_written_array_game_reads_back_as_the_same_game(game: GameGraph) -> None:
    array_game = ArrayGame.from_game(game)
    text = write_pgsolver(array_game)
    back = read_pgsolver(text)
    assert back.successors == game.successors
    assert back.priority == game.priority
    assert back.owner == game.owner
    assert back.start == game.start


def test_the_compiled_writer_writes_what_python_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    array_game = ArrayGame.from_game(GAMES.random_parity_game(500, random.Random(5)))
    compiled = write_pgsolver(array_game)
    monkeypatch.setattr(_zielonka_native, "available", lambda: False)
    assert write_pgsolver(array_game) == compiled
    assert compiled.startswith("parity 499;\n0 ")


def test_a_priority_too_long_for_a_file_is_refused() -> None:
    game = ArrayGame([0, 1], [1, 10**18], [0, 1, 2], [1, 0])
    with pytest.raises(ValueError, match="vertex 1 has priority 1000000000000000000, of more than"):
        write_pgsolver(game)


@pytest.mark.parametrize(
    ("family", "sizes"),
    [("ladder", [1, 2, 3, 40]), ("jurdzinski", [1, 2, 3, 7]), ("two_counters", [1, 2, 5, 12])],
)
def test_the_benchmarks_array_families_are_its_list_families(family: str, sizes: list[int]) -> None:
    """The scan builds the near-linear families straight as arrays: the very same games."""
    for size in sizes:
        built = GAMES.ARRAY_FAMILIES[family](size)
        listed = ArrayGame.from_game(GAMES.SCAN_FAMILIES[family][0](size))
        for name in ("owner", "priority", "offsets", "targets"):
            assert getattr(built, name).tolist() == getattr(listed, name).tolist(), (size, name)
