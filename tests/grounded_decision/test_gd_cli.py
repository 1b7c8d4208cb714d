"""The grounded-decision command line: examples, policy checks, and clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grounded_decision.cli import main
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
    assert f"{path}:2:3: policy line 2, column 3: expected test(...), act(...) or '('" in err
    assert "Traceback" not in err


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
