"""The PGSolver format, solution files and the ``grounded-decision solve`` command."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from gd_strategies import games
from hypothesis import given, settings
from hypothesis import strategies as st

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
from grounded_decision.statechart.pgsolver import read_pgsolver_with_ids

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


def _loops(names: tuple[str, ...], priority: tuple[int, ...]) -> GameGraph:
    """Vertices each with a loop onto itself, the controller's."""
    edges = tuple(((v, "loop", 0.0),) for v in range(len(names)))
    return GameGraph(names, 0, edges, priority, (0,) * len(names))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=12), min_size=1, max_size=4))
def test_any_names_round_trip(names: list[str]) -> None:
    """Line breaks, quotes, backslashes and semicolons in names come back as they were."""
    game = _loops(tuple(names), (0,) * len(names))
    assert read_pgsolver(write_pgsolver(game)).names == tuple(names)


def test_a_priority_no_file_may_hold_is_refused_by_the_writer() -> None:
    """A file of it could not be read back: the writer says so, naming the vertex."""
    game = _loops(("a",), (10**18,))
    with pytest.raises(ValueError, match=r"^vertex 0 has priority 10{18}, of more than 18 digits"):
        write_pgsolver(game)
    fits = _loops(("a",), (10**18 - 1,))
    assert read_pgsolver(write_pgsolver(fits)).priority == (10**18 - 1,)


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
    assert capsys.readouterr().err == (
        f"grounded-decision: {path}:2: vertex 0 has owner 7; use 0 (Even) or 1 (Odd)\n"
    )


def test_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    """200,000 spaces on one line (hours for the old backtracking pattern) fail at once."""
    with pytest.raises(PgsolverFormatError, match="cannot read") as caught:
        read_pgsolver("parity 1;\n0 1 0 0" + " " * 200_000 + "x;\n")
    assert caught.value.line == 2
    spaced = "parity 0;\n0 1 0" + " \t" * 100_000 + "0" + " " * 100_000 + '"a";\n'
    assert read_pgsolver(spaced).names == ("a",)


def test_a_long_name_is_read_in_memory_proportional_to_it() -> None:
    """A 1 MB name takes a few MB to read (the old pattern took about 300 MB)."""
    name = "a" * 1_000_000
    tracemalloc.start()
    try:
        game = read_pgsolver(f'parity 0;\n0 0 0 0 "{name}";\n')
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert game.names == (name,)
    assert peak < 20_000_000


@pytest.mark.parametrize(
    ("line", "successors"),
    [("0 0 0 1, 0;", (1, 0)), ("0 0 0 1 ,0 ;", (1, 0)), ('0 0 0 0"n";', (0,))],
)
def test_spacing_around_commas_and_names_is_free(line: str, successors: tuple[int, ...]) -> None:
    """Blanks may surround commas, and the name may follow the successors directly."""
    game = read_pgsolver(f"parity 1;\n{line}\n1 0 0 1;\n")
    assert game.successors[0] == successors


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("parity 1;\n0 0 0 1 0;\n", 2, "vertex 0 lists successors '1 0'; put commas"),
        ('parity 0;\n0 0 0 0 "open;\n', 2, "cannot read"),
        ('parity 0;\n0 0 0 0 "a\\";\n', 2, "cannot read"),
        ('parity 0;\n0 0 0 0 "a" b;\n', 2, "cannot read"),
        ("parity 0;\n0 0 0 ٣;\n", 2, "cannot read"),
        ("parity " + "9" * 5000 + ";\n0 0 0 0;\n", 1, "a number has 5000 digits"),
        ("parity 1;\n0 0 0 " + "1" * 19 + ";\n", 2, "a number has 19 digits"),
        ("parity 1;\f\n0 0 0 0;\x85\n1 0 x 0;\n", 3, "cannot read"),
        ("parity 1;\r\n\r\n0 0 2 0;\r\n", 3, "owner 2"),
    ],
)
def test_more_bad_files_name_the_line(text: str, line: int, words: str) -> None:
    """Unclosed names, long numbers, missing commas; only newlines count as line ends."""
    with pytest.raises(PgsolverFormatError, match=words) as caught:
        read_pgsolver(text)
    assert caught.value.line == line


def test_a_name_may_hold_form_feeds_and_a_byte_order_mark_is_ignored() -> None:
    """Only '\\n' ends a line, so a name keeps a form feed; a leading BOM is skipped."""
    game = read_pgsolver('\ufeffparity 0;\n0 0 0 0 "a\fb\x85c";\n')
    assert game.names == ("a\fb\x85c",)


def test_bytes_are_refused_with_a_type_error() -> None:
    """The readers take str; bytes must be decoded by the caller, who knows the encoding."""
    with pytest.raises(TypeError, match=r"read_pgsolver takes the file's text as str, got bytes"):
        read_pgsolver(b"parity 0;\n0 0 0 0;\n")  # type: ignore[arg-type]  # on purpose
    with pytest.raises(TypeError, match=r"read_solution takes .* decode bytes first"):
        read_solution(b"paritysol 1;\n0 0;\n", 1)  # type: ignore[arg-type]  # on purpose


SPARSE = "parity 20;\nstart 20;\n5 2 0 10;\n10 1 1 20;\n20 3 1 20;\n"


def test_ids_give_each_vertex_its_id_in_the_file() -> None:
    """read_pgsolver_with_ids returns the game and the file's id of each vertex."""
    game, ids = read_pgsolver_with_ids(SPARSE)
    assert ids == (5, 10, 20)
    assert game.start == 2


def test_a_solution_in_the_file_ids_round_trips() -> None:
    """With ids, solutions are written and read in the file's ids, strategies included."""
    game, ids = read_pgsolver_with_ids(SPARSE)
    solved = solve_parity(game, NO_LIMITS)
    text = write_solution(solved.winner, solved.strategy, ids=ids)
    assert text == "paritysol 3;\n5 1;\n10 1 20;\n20 1 20;\n"
    assert read_solution(text, len(game), ids=ids) == (solved.winner, solved.strategy)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("paritysol 3;\n5 1;\n10 1 20;\n2 1;\n", "vertex 2 is not a vertex of the game"),
        ("paritysol 3;\n5 1;\n10 1 7;\n20 1;\n", "vertex 10's strategy moves to 7, not a vertex"),
        ("paritysol 3;\n5 1;\n10 1;\n", "1 vertices have no winner, e.g. 20"),
    ],
)
def test_a_solution_in_file_ids_names_them_in_errors(text: str, words: str) -> None:
    """Errors name the file's ids, not the renumbered ones."""
    with pytest.raises(PgsolverFormatError, match=words):
        read_solution(text, 3, ids=(5, 10, 20))


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (
            "parity 1;\n0 1 0 1;\n1 2 1;\n",
            3,
            "vertex 1 has no successors; every vertex needs at least one move",
        ),
        ('parity 1;\n0 1 0 1;\n1 2 1 "end";\n', 3, "vertex 1 has no successors"),
        ("parity 1;\n0 -1 0 1;\n1 2 1 0;\n", 2, "vertex 0: priority -1 is negative; write"),
        ("parity 1;\n0 +1 0 1;\n1 2 1 0;\n", 2, "vertex 0: priority \\+1 has a \\+ sign"),
        ("parity 1;\n0 1 -1 1;\n1 2 1 0;\n", 2, "vertex 0: owner -1 is negative"),
        ("parity 1;\n0 1 0 +1;\n1 2 1 0;\n", 2, "the number \\+1 has a \\+ sign"),
        ("parity -1;\n0 1 0 0;\n", 1, "the number -1 is negative"),
    ],
)
def test_dead_ends_and_signs_get_their_own_message(text: str, line: int, message: str) -> None:
    """A vertex without moves, or a signed number, is named as such, not 'cannot read'."""
    with pytest.raises(PgsolverFormatError, match=f"^line {line}: {message}") as caught:
        read_pgsolver(text)
    assert caught.value.line == line


def test_moves_into_one_vertex_share_their_edge() -> None:
    """Every move into a vertex is the same edge tuple (one label per target, not per move),
    so a large file is not held as a tuple and a string per edge."""
    game = read_pgsolver("parity 2;\n0 0 0 2;\n1 0 0 2;\n2 0 0 2,0;\n")
    assert game.edges[0][0] == (2, "to 2", 0.0)
    assert game.edges[0][0] is game.edges[1][0] is game.edges[2][0]


@pytest.mark.parametrize("end", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
def test_every_editor_line_end_reads_the_same(end: str) -> None:
    """A game saved with CR-only (old Mac) or CRLF line ends reads like the LF file, and
    its errors name the line an editor shows."""
    lines = ["parity 7;", "start 7;", '7 2 0 3,5 "start";', "3 1 1 7;", "5 0 0 6;", "6 3 1 6,5;"]
    assert read_pgsolver_with_ids(end.join(lines) + end) == read_pgsolver_with_ids(
        "\n".join(lines) + "\n"
    )
    with pytest.raises(PgsolverFormatError, match=r"^line 4: cannot read") as caught:
        read_pgsolver(end.join(["parity 1;", "", "0 0 0 1;", "1 0 x 0;"]))
    assert caught.value.line == 4
    winner, _ = read_solution(end.join(["paritysol 1;", "0 0 1;", "1 0;"]), 2)
    assert winner == (0, 0)
