"""The blocking calls benchmark itself: its JSON has the figures and every answer is right.

Timings are never asserted: they depend on the machine.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The benchmark module, imported by path."""
    yield from load_benchmark("blocking_calls.py")


def _tiny(bench: ModuleType) -> Any:
    """Sizes small enough for a test run well under a second."""
    return bench.Settings(requests=8, threads=4, rounds=2, warmup=1)


def test_quick_json_run_has_the_figures_and_right_answers(
    bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both sides of both measurements are there, and every request got 3 * (x + 1)."""
    assert bench.main(["--quick", "--json"], settings=_tiny(bench)) == 0
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["benchmark"] == "blocking_calls"
    assert data["agree"] is True
    for kind, figure in (("concurrent", "median_ms"), ("sequential", "us_per_call")):
        assert data[kind]["requests"] == 8
        assert set(data[kind][figure]) == {"aask", "hand"}
        assert all(len(rounds) == 2 for rounds in data[kind]["seconds"].values())
    assert data["concurrent"]["throughput_ratio"] > 0
    assert data["sequential"]["per_call_ratio"] > 0


def test_quick_run_prints_the_tables(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json the run prints both tables and says every answer was right."""
    assert bench.main(["--quick"], settings=_tiny(bench)) == 0
    out = capsys.readouterr().out
    for text in ("at once", "one after another", "hand-written wall / aask wall", "µs/request"):
        assert text in out
    assert "every answer right: yes" in out


def test_a_wrong_answer_fails_the_run(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """If the answers differ from what was expected, the JSON says so and the run exits 1."""
    monkeypatch.setattr(bench, "expected", lambda x: 3 * (x + 1) + 1)
    assert bench.main(["--quick", "--json"], settings=_tiny(bench)) == 1
    data = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert data["agree"] is False
