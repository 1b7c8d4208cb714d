"""The grounded-decision command line: examples, policy checks, and clean errors."""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grounded_decision.cli import BROKEN_PIPE, INTERRUPTED, REFUSED, main
from grounded_decision.examples import EXAMPLES


def test_examples_prints_the_six_checks(capsys: pytest.CaptureFixture[str]) -> None:
    """examples NAME prints each decision with a PASS/FAIL line per check."""
    assert main(["examples", "incident_response"]) == 0
    out = capsys.readouterr().out
    line = (
        "         game             PASS  can the policy keep making progress"
        " (parity win, nonnegative mean)?"
    )
    assert line in out.splitlines()
    assert out.count("freshness        FAIL") == 1


def test_examples_all_json_reports_every_game_passed(capsys: pytest.CaptureFixture[str]) -> None:
    """--all --json prints every example's records, and every game entry passed."""
    assert main(["examples", "--all", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) == set(EXAMPLES)
    games = [c for records in payload.values() for r in records for c in r["channels"]]
    games = [c for c in games if c["name"] == "game"]
    assert games
    assert all(c["passed"] and c["metrics"]["parity_win"] for c in games)


def test_examples_list(capsys: pytest.CaptureFixture[str]) -> None:
    """--list names every example."""
    assert main(["examples", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in EXAMPLES)


def test_unknown_example_is_a_clean_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown name prints the choices, no traceback, and exits 2."""
    assert main(["examples", "nope"]) == 2
    err = capsys.readouterr().err
    assert "no example named 'nope'; choose one of: two_path_module" in err
    assert "Traceback" not in err


def test_syntax_error_in_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed policy prints file:line:column and the expectation, exit 1, no traceback."""
    path = tmp_path / "bad.policy"
    path.write_text("test(a) ;\n  | act(b)\n", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2:3: expected test(...), act(...) or '('" in err
    assert "Traceback" not in err


def test_a_game_refused_by_a_cap_is_its_own_exit_code_and_no_limits_solves_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """301 states pass the 200-vertex cap: exit 4 (not 3, a failed check) with a line
    naming the cap and the option; with --no-limits the game is solved and passes."""
    path = tmp_path / "long.policy"
    path.write_text(" ; ".join(f"test(e{i})" for i in range(300)) + " ; act(x)\n")
    assert main(["check", str(path)]) == REFUSED == 4
    captured = capsys.readouterr()
    assert "301 vertices exceed limit 200" in captured.out
    assert captured.err == (
        f"grounded-decision: {path}: the game check was refused by Limits.max_game_vertices,"
        " not failed; run with --no-limits to solve it whatever its size\n"
    )
    assert main(["check", "--no-limits", "--json", str(path)]) == 0
    game = next(c for c in json.loads(capsys.readouterr().out) if c["name"] == "game")
    assert (game["passed"], game["metrics"]["limit"]) == (True, None)


def test_missing_policy_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A missing file is reported in one line with exit 1."""
    assert main(["check", str(tmp_path / "none.policy")]) == 1
    assert "cannot read" in capsys.readouterr().err


def test_check_reports_policy_channels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """check prints the shape and game reports; a failing policy exits 3."""
    good = tmp_path / "page.policy"
    good.write_text("(test(ping))* ; test(alert) ; act(page)", encoding="utf-8")
    assert main(["check", str(good)]) == 0
    bad = tmp_path / "ping.policy"
    bad.write_text("(test(ping))*", encoding="utf-8")
    assert main(["check", str(bad), "--json"]) == 3
    out = capsys.readouterr().out
    reports = json.loads(out[out.index("[") :])
    assert reports[1]["summary"] == "parity_win=False nonnegative_mean=True"


def test_check_mermaid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--mermaid prints the compiled chart."""
    path = tmp_path / "one.policy"
    path.write_text("test(suspicious) ; act(block)", encoding="utf-8")
    assert main(["check", str(path), "--mermaid"]) == 0
    assert 's0 -- "suspicious / 0.0" --> s1' in capsys.readouterr().out


def test_compile_error_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A policy that would propose two actions at once is reported without a traceback."""
    path = tmp_path / "two.policy"
    path.write_text("test(a) ; (act(x) | act(y))", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert "one state can propose both 'x' and 'y'" in capsys.readouterr().err


SPARSE = "parity 20;\nstart 20;\n5 2 0 10;\n10 1 1 20;\n20 3 1 20;\n"


def _game(tmp_path: Path, text: str = SPARSE) -> Path:
    path = tmp_path / "sparse.pg"
    path.write_text(text, encoding="utf-8")
    return path


def test_solve_writes_and_reports_the_file_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The solution and both reports name vertices by their ids in the game file."""
    game, out = _game(tmp_path), tmp_path / "sparse.sol"
    assert main(["solve", str(game), "--solution", str(out), "--verify"]) == 0
    assert out.read_text(encoding="utf-8") == "paritysol 3;\n5 1;\n10 1 20;\n20 1 20;\n"
    printed = capsys.readouterr().out
    assert "vertex 20 is won by Odd" in printed
    assert "certificate: verified" in printed
    assert main(["solve", str(game), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["start"], report["start_winner"]) == (20, 1)


def test_solve_names_the_file_and_line_of_a_format_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed game is one line on stderr: file, line (named once) and what is wrong."""
    game = _game(tmp_path, "parity " + "9" * 5000 + ";\n0 0 0 0;\n")
    assert main(["solve", str(game)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {game}:1: a number has 5000 digits; use at most 18\n"
    )


@pytest.mark.parametrize(("command", "suffix"), [("solve", ".pg"), ("check", ".policy")])
def test_a_file_that_is_not_utf8_is_one_line_naming_the_byte(
    command: str, suffix: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bytes that are not UTF-8 are reported with the file, line and offset, exit 1."""
    path = tmp_path / f"latin1{suffix}"
    path.write_bytes(b'parity 0;\n0 0 0 0 "caf\xe9";\n')
    assert main([command, str(path)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {path}:2: not UTF-8 text: byte 0xe9 at offset 22;"
        " save the file as UTF-8\n"
    )


def test_a_byte_order_mark_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file saved as 'UTF-8 with BOM' reads like one without."""
    path = tmp_path / "bom.pg"
    path.write_bytes(b"\xef\xbb\xbf" + SPARSE.encode())
    assert main(["solve", str(path)]) == 0
    assert "vertex 20 is won by Odd" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("where", "reason"),
    [("", "it is a directory"), ("none/x.sol", "there is no directory")],
)
def test_an_unwritable_solution_path_is_refused_before_solving(
    where: str, reason: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory or a missing folder as --solution fails first, as a write error."""
    out = tmp_path / where
    assert main(["solve", str(_game(tmp_path)), "--solution", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith(f"grounded-decision: cannot write {out}: {reason}")
    assert captured.out == ""


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_is_a_write_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed write of the solution names the path and the reason."""
    assert main(["solve", str(_game(tmp_path)), "--solution", "/dev/full"]) == 1
    err = capsys.readouterr().err
    assert err == "grounded-decision: cannot write /dev/full: No space left on device\n"


class _Stdout(io.StringIO):
    """A standard output whose every write fails with the given error."""

    def __init__(self, error: OSError) -> None:
        super().__init__()
        self.error = error

    def write(self, text: str) -> int:
        raise self.error


def test_a_full_standard_output_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failing to print the report says 'cannot write standard output'."""
    monkeypatch.setattr(sys, "stdout", _Stdout(OSError(errno.ENOSPC, "No space left on device")))
    assert main(["solve", str(_game(tmp_path)), "--json"]) == 1
    err = capsys.readouterr().err
    assert err == "grounded-decision: cannot write standard output: No space left on device\n"


def test_a_broken_pipe_ends_quietly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the reader of the output goes away, nothing is printed and the code is 141."""
    monkeypatch.setattr(sys, "stdout", _Stdout(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    assert main(["solve", str(_game(tmp_path)), "--json"]) == BROKEN_PIPE == 141
    assert capsys.readouterr().err == ""


def test_a_closed_pipe_leaves_no_traceback() -> None:
    """A real pipe closed before the output is written: exit 141, nothing on stderr."""
    child = subprocess.Popen(
        [sys.executable, "-m", "grounded_decision.cli", "examples", "--all", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdout is not None
    child.stdout.close()
    _, err = child.communicate()
    assert (child.returncode, err) == (BROKEN_PIPE, b"")


def test_syntax_error_names_its_location_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The file:line:column prefix is the only location on the line."""
    policy = tmp_path / "empty.pol"
    policy.write_text("\r\n\r\n", encoding="utf-8")
    assert main(["check", str(policy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"grounded-decision: {policy}:3:1: expected test(...)")
    assert "policy line" not in err


def test_a_file_past_the_input_cap_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Input is read up to MAX_INPUT_BYTES and no further (/dev/zero once ran out of memory)."""
    import grounded_decision.cli as cli

    monkeypatch.setattr(cli, "MAX_INPUT_BYTES", 2**20)
    policy = tmp_path / "big.pol"
    policy.write_bytes(b" " * (2**20 + 1))
    assert main(["check", str(policy)]) == 1
    err = capsys.readouterr().err
    assert err == f"grounded-decision: cannot read {policy}: larger than 1 MiB, the most read\n"


def test_check_json_and_mermaid_exclude_each_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Asking for both outputs is a usage error, not Mermaid alone."""
    policy = tmp_path / "p.pol"
    policy.write_text("test(a) ; act(b)", encoding="utf-8")
    with pytest.raises(SystemExit) as exit_:
        main(["check", "--json", "--mermaid", str(policy)])
    assert exit_.value.code == 2
    assert "not allowed with argument --json" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["examples", "--all", "--list"], "not allowed with argument --all"),
        (["examples", "payment", "--all"], "give an example's name or --all, not both"),
        (["examples", "payment", "--list"], "give an example's name or --list, not both"),
    ],
)
def test_examples_refuses_options_that_contradict_each_other(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Conflicting choices are a usage error, not one of them silently."""
    try:
        status = main(argv)
    except SystemExit as exit_:
        status = int(exit_.code or 0)
    assert status == 2
    assert message in capsys.readouterr().err


IDS = 'parity 7;\nstart 7;\n7 2 0 3,5 "start";\n3 1 1 7;\n5 0 0 6;\n6 3 1 6,5 "end";\n'
IDS_SOLUTION = "paritysol 4;\n3 0;\n5 1;\n6 1 6;\n7 0 3;\n"


def test_check_accepts_a_right_solution_and_locates_a_wrong_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check reads a paritysol file in the game's ids; a wrong pick is named in those ids."""
    game = _game(tmp_path, IDS)
    good, bad = tmp_path / "good.sol", tmp_path / "bad.sol"
    good.write_text(IDS_SOLUTION, encoding="utf-8")
    bad.write_text(IDS_SOLUTION.replace("7 0 3;", "7 0 5;"), encoding="utf-8")
    assert main(["solve", str(game), "--check", str(good)]) == 0
    assert capsys.readouterr().out == f"{good}: certificate: verified for {game} (4 vertices)\n"
    assert main(["solve", str(game), "--check", str(bad)]) == 3
    assert capsys.readouterr().out == (
        f"{bad}: certificate: vertex 7 ('start'): its winner's pick 5 leaves the region\n"
    )
    assert main(["solve", str(game), "--check", str(bad), "--json"]) == 3
    report = json.loads(capsys.readouterr().out)
    assert (report["verified"], report["vertex"]) == (False, 7)


def test_check_names_the_solution_file_and_line_of_a_format_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed solution is one line naming the solution file, exit 1."""
    game, sol = _game(tmp_path, IDS), tmp_path / "x.sol"
    sol.write_text(IDS_SOLUTION.replace("7 0 3;", "7 0 99;"), encoding="utf-8")
    assert main(["solve", str(game), "--check", str(sol)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {sol}:5: vertex 7's strategy moves to 99, not a vertex; check it\n"
    )


def test_check_refuses_the_options_of_a_solve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--check solves nothing, so --verify (or a budget) beside it is a usage error."""
    game, sol = _game(tmp_path, IDS), tmp_path / "s.sol"
    sol.write_text(IDS_SOLUTION, encoding="utf-8")
    assert main(["solve", str(game), "--check", str(sol), "--verify"]) == 2
    assert "drop --verify" in capsys.readouterr().err


def test_verify_names_vertices_by_the_file_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected --verify names the vertex and pick as the file does, not by index."""
    import grounded_decision.cli as cli
    from grounded_decision.statechart.parity import ParitySolution

    def wrong(*_: object, **__: object) -> ParitySolution:
        return ParitySolution((0, 1, 1, 0), (-1, -1, 2, 1), "zielonka", 0)

    monkeypatch.setattr(cli, "solve_parity", wrong)
    assert main(["solve", str(_game(tmp_path, IDS)), "--verify"]) == 3
    out = capsys.readouterr().out
    assert "certificate: vertex 7 ('start'): its winner's pick 5 leaves the region" in out


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--steps", "gave up after more than 10 steps of work; raise --steps"),
        ("--seconds", "gave up after 1e-09 s; raise --seconds"),
    ],
)
def test_a_spent_budget_names_its_option(
    option: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--steps and --seconds bound the solve; running out is exit 4 naming the option."""
    lines = "".join(f"{v} {v} {v % 2} {(v + 1) % 300},{(v + 7) % 300};\n" for v in range(300))
    game = _game(tmp_path, f"parity 299;\n{lines}")
    value = "10" if option == "--steps" else "1e-9"
    assert main(["solve", str(game), option, value]) == REFUSED
    err = capsys.readouterr().err
    assert (
        err == f"grounded-decision: {game}: not solved: {message}, or leave it out for no budget\n"
    )
    assert main(["solve", str(game), "--steps", "10000000", "--seconds", "60"]) == 0


@pytest.mark.parametrize("value", ["0", "-3", "x", "nan"])
def test_budgets_must_be_positive(value: str, tmp_path: Path) -> None:
    """A budget or size cap of 0, below 0 or not a number is a usage error."""
    with pytest.raises(SystemExit) as exit_:
        main(["solve", str(_game(tmp_path)), "--seconds", value])
    assert exit_.value.code == 2


def test_max_bytes_raises_the_input_cap_and_the_refusal_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A game past the cap is refused naming --max-bytes; with it the game is read."""
    import grounded_decision.cli as cli

    monkeypatch.setattr(cli, "MAX_INPUT_BYTES", 20)
    game = _game(tmp_path, IDS)
    assert main(["solve", str(game)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: cannot read {game}: larger than 20 bytes, the most read;"
        " pass --max-bytes N to read up to N bytes\n"
    )
    assert main(["solve", str(game), "--max-bytes", "1000"]) == 0
    assert "vertex 7 is won by Even" in capsys.readouterr().out


def test_ctrl_c_is_one_line_and_exit_130(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted solve prints one line, no traceback, and exits 128 + SIGINT."""
    import grounded_decision.cli as cli

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "solve_parity", interrupted)
    assert main(["solve", str(_game(tmp_path))]) == INTERRUPTED == 130
    assert capsys.readouterr().err == "grounded-decision: interrupted\n"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
@pytest.mark.parametrize("command", ["check", "solve"])
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A FIFO (also through a symlink) is one line and exit 1 at once, never a hang."""
    pipe = tmp_path / "pipe.pg"
    os.mkfifo(pipe)
    link = tmp_path / "link.pg"
    link.symlink_to(pipe)
    for path in (pipe, link):
        assert main([command, str(path)]) == 1
        assert capsys.readouterr().err == (
            f"grounded-decision: cannot read {path}: it is a named pipe, not a regular file;"
            " give a file's path\n"
        )


def test_a_directory_is_refused_as_not_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(tmp_path)]) == 1
    assert "it is a directory, not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize("cap", ["1000000000000", str(10**22)])
def test_a_huge_max_bytes_allocates_nothing_up_front(
    cap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-bytes of a terabyte or 10**22 reads the small file (in chunks): no
    MemoryError or OverflowError from a buffer of the cap's size."""
    assert main(["solve", str(_game(tmp_path, IDS)), "--max-bytes", cap]) == 0
    assert "vertex 7 is won by Even" in capsys.readouterr().out


def test_the_cap_is_kept_across_chunks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read 8 bytes at a time, a file one byte past the cap is still refused."""
    import grounded_decision.cli as cli

    monkeypatch.setattr(cli, "_CHUNK", 8)
    game = _game(tmp_path, IDS)
    size = len(IDS.encode())
    assert main(["solve", str(game), "--max-bytes", str(size - 1)]) == 1
    assert f"larger than {size - 1} bytes" in capsys.readouterr().err
    assert main(["solve", str(game), "--max-bytes", str(size)]) == 0


@pytest.mark.parametrize(
    ("command", "data", "line"),
    [
        # the policy parser ends lines as str.splitlines does: \r, \r\n, \v, \f, \x85 ...
        ("check", b"test(a) ;\r\r test(b) ; \xff", 3),
        ("check", b"test(a) ;\r\n\x0b test(b) ; \xff", 3),
        # the PGSolver reader ends them at \n, \r\n or \r, and not at \v or \f
        ("solve", b'parity 1;\r0 2 0 1;\r1 2 0 0 "\xff";\r', 3),
        ("solve", b'parity 1;\r\n0 2 0 1 "a\x0cb";\r\n1 2 0 0 "\xff";\r\n', 3),
    ],
)
def test_a_byte_that_is_not_utf8_is_on_the_line_its_parser_counts(
    command: str, data: bytes, line: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CR-only and other line ends count as the file's parser counts them, so the line
    named matches what the parser would name and what an editor shows."""
    path = tmp_path / "file.txt"
    path.write_bytes(data)
    assert main([command, str(path)]) == 1
    assert capsys.readouterr().err.startswith(f"grounded-decision: {path}:{line}: not UTF-8")


def test_a_game_with_cr_only_line_ends_is_solved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The header of a CR-only file is found (it was 'expected the header' before)."""
    path = tmp_path / "mac.pg"
    path.write_bytes(IDS.replace("\n", "\r").encode())
    assert main(["solve", str(path)]) == 0
    assert "vertex 7 is won by Even" in capsys.readouterr().out


#: a file name that retitles a terminal printing it raw, and that name as shown
HOSTILE = "pol\x1b]0;pwned\x07"
SHOWN = "pol\\x1b]0;pwned\\x07"


def test_check_shows_a_hostile_file_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path holding an escape sequence is escaped in the report, a syntax error and a
    read error, so it cannot act on the terminal."""
    good = tmp_path / f"{HOSTILE}.policy"
    good.write_text("test(ping) ; act(page)\n", encoding="utf-8")
    assert main(["check", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"policy {tmp_path}/{SHOWN}.policy: test(ping) ; act(page)"
    assert "\x1b" not in out
    bad = tmp_path / f"{HOSTILE}.bad"
    bad.write_text("test(ping) ;\n", encoding="utf-8")
    assert main(["check", str(bad)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {tmp_path}/{SHOWN}.bad:2:1: expected test(...), act(...) or '(',"
        " got end of policy; a step is missing here\n"
    )
    assert main(["check", str(tmp_path / f"{HOSTILE}\r.none")]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: cannot read {tmp_path}/{SHOWN}\\r.none: No such file or directory\n"
    )


def test_solve_shows_hostile_file_names_escaped_and_json_keeps_them_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """solve and solve --check escape the game's and the solution's paths in their
    lines; --json gives them exactly, as JSON escapes them."""
    game, sol = tmp_path / f"{HOSTILE}.pg", tmp_path / f"{HOSTILE}.sol"
    game.write_text(IDS, encoding="utf-8")
    sol.write_text(IDS_SOLUTION, encoding="utf-8")
    assert main(["solve", str(game), "--check", str(sol)]) == 0
    assert capsys.readouterr().out == (
        f"{tmp_path}/{SHOWN}.sol: certificate: verified for {tmp_path}/{SHOWN}.pg (4 vertices)\n"
    )
    assert main(["solve", str(game), "--check", str(sol), "--json"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    report = json.loads(out)
    assert (report["game"], report["solution"]) == (str(game), str(sol))
    assert main(["solve", str(game)]) == 0
    assert capsys.readouterr().out.startswith(f"{tmp_path}/{SHOWN}.pg: 4 vertices, ")
    sol.write_text(IDS_SOLUTION.replace("7 0 3;", "7 0 99;"), encoding="utf-8")
    assert main(["solve", str(game), "--check", str(sol)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {tmp_path}/{SHOWN}.sol:5: vertex 7's strategy moves to 99,"
        " not a vertex; check it\n"
    )


def test_a_huge_vertex_name_makes_a_short_certificate_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A vertex name of a megabyte is cut to 200 characters in the problem --check prints,
    and in --json's problem, not printed whole."""
    game = _game(tmp_path, f'parity 1;\n0 1 0 1 "{"A" * 1_000_000}";\n1 1 0 0;\n')
    sol = tmp_path / "bad.sol"
    sol.write_text("paritysol 1;\n0 0 0;\n1 0 0;\n", encoding="utf-8")
    problem = (
        f"vertex 0 ('{'A' * 199}... (999,802 more characters)): its winner picks 0, not a successor"
    )
    assert main(["solve", str(game), "--check", str(sol)]) == 3
    assert capsys.readouterr().out == f"{sol}: certificate: {problem}\n"
    assert main(["solve", str(game), "--check", str(sol), "--json"]) == 3
    assert json.loads(capsys.readouterr().out)["problem"] == problem


def test_a_huge_name_in_a_policy_or_game_error_is_cut(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error quoting the file (a stray name, a clashing action, successors without
    commas) shows 1,000 characters of its message and says how many more there were."""
    path = tmp_path / "long.policy"
    path.write_text("test(a) ; " + "N" * 5000, encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {path}:1:11: expected test(...), act(...) or '(', got"
        f" '{'N' * 958}... (4,089 more characters)\n"
    )
    path.write_text(f"test(a) ; (act({'X' * 5000}) | act(y))", encoding="utf-8")
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: policy 'long': one state can propose both"
        f" '{'X' * 957}... (4,130 more characters)\n"
    )
    game = _game(tmp_path, f"parity 1;\n0 1 0 {' '.join(['1'] * 1000)};\n")
    assert main(["solve", str(game)]) == 1
    assert capsys.readouterr().err == (
        f"grounded-decision: {game}:2: vertex 0 lists successors"
        f" '{'1 ' * 486}1... (1,052 more characters)\n"
    )
