"""The PGSolver format, solution files and the ``grounded-decision solve`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gd_strategies import games
from hypothesis import given, settings

from grounded_decision.cli import main
from grounded_decision.statechart import (
    NO_LIMITS,
    GameGraph,
    PgsolverFormatError,
    check_certificate,
    read_pgsolver,
    read_solution,
    solve_parity,
    write_pgsolver,
    write_solution,
)

SMALL = """parity 3;
0 2 0 1,2 "start";
1 1 1 0;
2 0 0 3;
3 3 1 3,2 "end";
"""


def _same_game(left: GameGraph, right: GameGraph) -> bool:
    return (
        left.names == right.names
        and left.start == right.start
        and left.priority == right.priority
        and left.owner == right.owner
        and left.successors == right.successors
    )


@settings(max_examples=80, deadline=None)
@given(games(two_player=True, max_priority=6))
def test_a_written_game_reads_back_the_same(game: GameGraph) -> None:
    """write_pgsolver then read_pgsolver keeps names, start, priorities, owners and moves."""
    assert _same_game(read_pgsolver(write_pgsolver(game)), game)


def test_reading_a_small_file() -> None:
    """Ids, priorities, owners, successors and optional names are read."""
    game = read_pgsolver(SMALL)
    assert game.names == ("start", "1", "2", "end")
    assert game.priority == (2, 1, 0, 3)
    assert game.owner == (0, 1, 0, 1)
    assert game.successors == ((1, 2), (0,), (3,), (3, 2))


def test_sparse_ids_and_a_start_line_are_renumbered() -> None:
    """Ids may be sparse and unordered; 'start S;' sets the start vertex."""
    game = read_pgsolver('parity 9;\nstart 9;\n9 1 1 4;\n4 0 0 9,4 "four";\n')
    assert game.names == ("four", "9")
    assert game.start == 1
    assert game.successors == ((1, 0), (0,))


def test_names_with_quotes_round_trip() -> None:
    """A name holding a quote or a backslash is escaped and read back."""
    game = read_pgsolver('parity 0;\n0 0 0 0 "say \\"hi\\" \\\\ ok";\n')
    assert game.names == ('say "hi" \\ ok',)
    assert read_pgsolver(write_pgsolver(game)).names == game.names


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("", 1, "expected the header 'parity N;'"),
        ("parity 1;\n0 0 0 1;\n1 0 x 0;\n", 3, "cannot read"),
        ("parity 1;\n0 0 2 0;\n", 2, "owner 2"),
        ("parity 1;\n0 0 0 0;\n0 1 1 0;\n", 3, "defined twice"),
        ("parity 0;\n0 0 0 0;\n1 0 0 0;\n", 3, "exceeds the header"),
        ("parity 1;\n\n0 0 0 1;\n", 3, "moves to 1, which is not defined"),
        ("parity 1;\n0 0 0 0\n", 2, "cannot read"),
        ("parity 1;\n", 1, "no vertex"),
        ("parity 1;\nstart 5;\n0 0 0 0;\n", 2, "start vertex 5"),
        ("parity 1;\n0 0 0 0,,0;\n", 2, "empty successor"),
    ],
)
def test_bad_files_name_the_line(text: str, line: int, words: str) -> None:
    """Each malformed file raises PgsolverFormatError carrying the line at fault."""
    with pytest.raises(PgsolverFormatError, match=words) as caught:
        read_pgsolver(text)
    assert caught.value.line == line
    assert str(caught.value).startswith(f"line {line}: ")


def test_solutions_round_trip() -> None:
    """write_solution then read_solution gives the winners and strategies back."""
    game = read_pgsolver(SMALL)
    solution = solve_parity(game, NO_LIMITS)
    text = write_solution(solution.winner, solution.strategy)
    assert text.startswith("paritysol 4;\n")
    assert read_solution(text, len(game)) == (solution.winner, solution.strategy)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("0 1;\n", 1, "expected the header 'paritysol N;'"),
        ("paritysol 2;\n0 1;\n0 1;\n", 3, "appears twice"),
        ("paritysol 2;\n0 3;\n", 2, "winner 3"),
        ("paritysol 2;\n5 0;\n", 2, "not in 0..1"),
        ("paritysol 2;\n0 0;\n", 2, "1 vertices have no winner"),
        ("paritysol 2;\n0 zero;\n", 2, "cannot read"),
    ],
)
def test_bad_solutions_name_the_line(text: str, line: int, words: str) -> None:
    """Each malformed solution raises PgsolverFormatError carrying the line at fault."""
    with pytest.raises(PgsolverFormatError, match=words) as caught:
        read_solution(text, 2)
    assert caught.value.line == line


def test_solve_round_trips_a_file_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """solve on a file written by write_pgsolver: --verify passes, the solution reads back."""
    game = read_pgsolver(SMALL)
    path = tmp_path / "small.pg"
    path.write_text(write_pgsolver(game), encoding="utf-8")
    out = tmp_path / "small.sol"
    assert main(["solve", str(path), "--solution", str(out), "--verify"]) == 0
    printed = capsys.readouterr().out
    assert "certificate: verified" in printed
    winner, strategy = read_solution(out.read_text(encoding="utf-8"), len(game))
    assert check_certificate(
        read_pgsolver(path.read_text(encoding="utf-8")), winner, strategy
    ).valid
    again = tmp_path / "again.pg"
    again.write_text(
        write_pgsolver(read_pgsolver(path.read_text(encoding="utf-8"))), encoding="utf-8"
    )
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("algorithm", ["auto", "zielonka", "promotion", "tl", "rtl"])
def test_solve_json_reports_the_algorithm(
    algorithm: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json prints the report with the algorithm used and the verified flag."""
    path = tmp_path / "small.pg"
    path.write_text(SMALL, encoding="utf-8")
    assert main(["solve", str(path), "--algorithm", algorithm, "--verify", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True
    assert report["vertices"] == 4
    assert report["algorithm"] in {"zielonka", "promotion", "tl", "rtl"}
    if algorithm != "auto":
        assert report["algorithm"] == algorithm


def test_solve_reports_a_bad_file_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed game file exits 1 with the line at fault on stderr."""
    path = tmp_path / "bad.pg"
    path.write_text("parity 1;\n0 0 7 0;\n", encoding="utf-8")
    assert main(["solve", str(path)]) == 1
    assert "line 2: vertex 0 has owner 7" in capsys.readouterr().err
