"""The independent certificate checker: it accepts solver output and rejects broken proofs."""

from __future__ import annotations

import pytest
from gd_strategies import brute_even_wins, games
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grounded_decision.statechart import (
    ALGORITHMS,
    NO_LIMITS,
    CertificateError,
    GameGraph,
    check_certificate,
    compile_game,
    solve_parity,
    verify_certificate,
)
from grounded_decision.statechart.chart import Statechart


def _game(priority: list[int], owner: list[int], succ: list[list[int]]) -> GameGraph:
    return GameGraph(
        names=tuple(f"v{v}" for v in range(len(priority))),
        start=0,
        edges=tuple(tuple((w, "e", 0.0) for w in out) for out in succ),
        priority=tuple(priority),
        owner=tuple(owner),
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=100, deadline=None)
@given(game=games(two_player=True, max_priority=5), data=st.data())
def test_an_accepted_mutation_still_gives_the_true_regions(
    algorithm: str, game: GameGraph, data: st.DataObject
) -> None:
    """Change one winner or one strategy entry of any algorithm's answer: only truth passes."""
    solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    winner = list(solution.winner)
    strategy = list(solution.strategy)
    v = data.draw(st.integers(0, len(game) - 1))
    if data.draw(st.booleans()):
        winner[v] = 1 - winner[v]
    else:
        strategy[v] = data.draw(st.sampled_from([*game.successors[v], -1]))
    if check_certificate(game, winner, strategy).valid:
        assert tuple(side == 0 for side in winner) == brute_even_wins(game)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(game=games(two_player=True, max_priority=5), data=st.data())
def test_a_pick_moved_into_the_other_region_is_rejected(
    algorithm: str, game: GameGraph, data: st.DataObject
) -> None:
    """Point one winning owner's pick at the opponent's region: that vertex is named."""
    solution = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    assert check_certificate(game, solution.winner, solution.strategy).valid
    winner = solution.winner
    moves = [
        (v, w)
        for v in range(len(game))
        if game.owner[v] == winner[v]
        for w in game.successors[v]
        if winner[w] != winner[v]
    ]
    assume(moves)
    v, w = data.draw(st.sampled_from(moves))
    strategy = list(solution.strategy)
    strategy[v] = w
    verdict = check_certificate(game, winner, strategy)
    assert not verdict.valid
    assert verdict.vertex == v
    assert (
        verdict.problem
        == f"vertex {v} ({game.names[v]!r}): its winner's pick {w} leaves the region"
    )


def test_flipping_a_winner_is_rejected() -> None:
    """An Odd self-loop of priority 1 claimed for Even is rejected with the vertex named."""
    game = _game([1], [0], [[0]])
    verdict = check_certificate(game, [0], [0])
    assert not verdict.valid
    assert verdict.vertex == 0
    assert "top priority 1 is the opponent's" in str(verdict.problem)


def test_a_strategy_that_leaves_the_region_is_rejected() -> None:
    """Even's pick at a vertex of its region must stay in that region."""
    game = _game([0, 1], [0, 0], [[0, 1], [1]])
    assert check_certificate(game, [0, 1], [0, -1]).valid
    verdict = check_certificate(game, [0, 1], [1, -1])
    assert not verdict.valid
    assert "leaves the region" in str(verdict.problem)


def test_a_loser_escape_is_rejected() -> None:
    """A region the loser can leave is not closed."""
    game = _game([0, 1], [1, 1], [[0, 1], [1]])
    verdict = check_certificate(game, [0, 1], [-1, 1])
    assert not verdict.valid
    assert "the loser can move to 1" in str(verdict.problem)


def test_a_losing_cycle_under_the_strategy_is_rejected() -> None:
    """Even wins by choosing the even loop; the strategy choosing the odd loop is rejected."""
    game = _game([2, 3, 4], [0, 1, 1], [[1, 2], [0], [0]])
    assert check_certificate(game, [0, 0, 0], [2, -1, -1]).valid
    verdict = check_certificate(game, [0, 0, 0], [1, -1, -1])
    assert not verdict.valid
    assert verdict.vertex == 1


def test_a_non_successor_pick_is_rejected() -> None:
    """A strategy entry that is not an edge of the game is named as such."""
    game = _game([0, 0], [0, 0], [[1], [1]])
    verdict = check_certificate(game, [0, 0], [0, 1])
    assert "not a successor" in str(verdict.problem)


def test_wrong_lengths_are_rejected() -> None:
    """A solution of the wrong size says how many entries it has and needs."""
    game = _game([0], [0], [[0]])
    assert "for 1 vertices" in str(check_certificate(game, [0, 0], [0]).problem)


def test_verify_certificate_raises_naming_the_vertex() -> None:
    """verify_certificate raises CertificateError carrying the vertex at fault."""
    game = _game([1], [0], [[0]])
    with pytest.raises(CertificateError, match="not proven") as caught:
        verify_certificate(game, [0], [0])
    assert caught.value.vertex == 0


def test_the_progress_check_answer_is_certified() -> None:
    """A compiled chart's solution passes the checker (the game check relies on this)."""
    chart = (
        Statechart("w")
        .state("a", initial=True)
        .state("p", priority=1)
        .state("done")
        .on("a", "e", "p")
        .on("p", "e", "p")
        .on("p", "fix", "done")
    )
    game = compile_game(chart)
    solution = solve_parity(game)
    assert check_certificate(game, solution.winner, solution.strategy).valid
    assert solution.winner == (0, 0, 0)


def test_problems_name_vertices_by_the_file_ids() -> None:
    """With ids, the vertex and the pick are named as the game file names them."""
    from grounded_decision.statechart import read_pgsolver_with_ids

    game, ids = read_pgsolver_with_ids(
        'parity 7;\nstart 7;\n7 2 0 3,5 "start";\n3 1 1 7;\n5 0 0 6;\n6 3 1 6,5 "end";\n'
    )
    winner, strategy = (0, 1, 1, 0), [-1, -1, 2, 1]
    verdict = check_certificate(game, winner, strategy, ids=ids)
    assert verdict.problem == "vertex 7 ('start'): its winner's pick 5 leaves the region"
    assert verdict.vertex == 3
    loser = check_certificate(game, (0, 1, 1, 1), (-1, -1, 2, -1), ids=ids)
    assert loser.problem == "vertex 3: the loser can move to 7, outside player 0's region"
    with pytest.raises(CertificateError, match=r"vertex 7 .* picks 6, not a successor"):
        verify_certificate(game, winner, [-1, -1, 2, 2], ids=ids)
    with pytest.raises(ValueError, match="ids has 2 entries for 4 vertices"):
        check_certificate(game, winner, strategy, ids=ids[:2])


def test_a_missing_pick_says_so() -> None:
    """A winning owner with no pick (-1, a line without a strategy) is told to give one."""
    game = _game([0, 0], [0, 0], [[1], [1]])
    verdict = check_certificate(game, [0, 0], [-1, 1])
    assert verdict.problem == (
        "vertex 0 ('v0'): its owner wins it but has no pick (-1);"
        " give the successor the owner moves to"
    )


def test_a_huge_or_hostile_name_or_value_is_escaped_and_cut_in_the_problem() -> None:
    """A vertex name is shown as repr writes it, cut past 200 characters, so a name of
    megabytes makes a short problem; a printable name within the width stays whole."""
    name = "\u202e" + "A" * 100_000
    game = GameGraph(
        names=(name, "b\x1b]0;x\x07"),
        start=0,
        edges=(((1, "e", 0.0),), ((0, "e", 0.0),)),
        priority=(0, 0),
        owner=(0, 0),
    )
    shown = "'\\u202e" + "A" * 193 + "... (99,808 more characters)"
    verdict = check_certificate(game, [0, 0], [0, 0])
    assert verdict.problem == f"vertex 0 ({shown}): its winner picks 0, not a successor"
    assert verdict.vertex == 0
    # a str where an int belongs: a caller's mistake, which the problem quotes
    picked = check_certificate(game, [0, 0], [1, "z" * 500])  # type: ignore[list-item]
    assert picked.problem == (
        f"vertex 1 ('b\\x1b]0;x\\x07'): its winner picks '{'z' * 199}... (302 more"
        " characters), not a successor"
    )
    side = check_certificate(game, ["w" * 300, 0], [1, 0])  # type: ignore[list-item]
    assert side.problem == (
        f"vertex 0 ({shown}) has winner '{'w' * 199}... (102 more characters); use 0 or 1"
    )
    readable = GameGraph(
        names=("n" * 198,), start=0, edges=(((0, "e", 0.0),),), priority=(1,), owner=(0,)
    )
    assert check_certificate(readable, [0], [0]).problem == (
        f"vertex 0 ('{'n' * 198}') lies on a cycle in player 0's region whose top"
        " priority 1 is the opponent's"
    )
