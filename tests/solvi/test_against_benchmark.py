"""benchmarks/against.py: its arguments and its tables, on canned numbers (nothing is timed)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """The benchmark module, imported by path."""
    yield from load_benchmark("against.py")


def _overhead(direct: float, loop: float, solvi: float) -> dict[str, Any]:
    ns = {"direct": direct, "loop": loop, "solvi": solvi}
    return {"dags": [{"dag": "chain 100", "steps": 10, "ns": ns, "agree": True}]}


def _async(aask: float, gather: float, concurrent: float, gather_all: float) -> dict[str, Any]:
    return {
        "latency": {"dag": "lattice 10x10", "median_ms": {"aask": aask, "gather": gather}},
        "throughput": {
            "requests": 1000,
            "concurrent": [concurrent, 1.0],
            "gather_concurrent": [gather_all, 1.0],
        },
    }


def _journal(p50: float, p99: float, burst: float) -> dict[str, Any]:
    off = {"p50_ms": 10.0, "p99_ms": 10.0, "burst_median_ms": 1.0}
    normal = {"p50_ms": p50, "p99_ms": p99, "burst_median_ms": burst}
    return {"modes": {"off": off, "NORMAL": normal}}


def _blocking(aask_ms: float, hand_ms: float) -> dict[str, Any]:
    return {"concurrent": {"requests": 200, "median_ms": {"aask": aask_ms, "hand": hand_ms}}}


def _record() -> dict[str, Any]:
    """Three rounds each side; the baseline meets every goal, the current side does not."""
    base = {
        "overhead": [_overhead(100, 200, 220), _overhead(100, 200, 225), _overhead(100, 200, 230)],
        "async": [_async(20.0, 20.0, 1.0, 1.0), _async(19.8, 20.0, 1.1, 1.0)],
        "journal": [_journal(10.5, 11.0, 1.1), _journal(10.6, 12.0, 1.2)],
        "blocking": [_blocking(50.0, 45.0), _blocking(50.0, 40.0)],
    }
    cur = {
        "overhead": [_overhead(100, 200, 300), _overhead(100, 200, 310), _overhead(100, 200, 320)],
        "async": [_async(21.0, 20.0, 2.0, 1.0), _async(21.2, 20.0, 2.2, 1.0)],
        "journal": [_journal(12.0, 14.0, 2.0), _journal(12.5, 15.0, 2.5)],
        "blocking": [_blocking(80.0, 40.0), _blocking(80.0, 48.0)],
    }
    here = str(Path("benchmarks").resolve() / "overhead.py")
    return {
        "date": "2026-01-01 00:00 UTC",
        "quick": False,
        "rounds": 3,
        "seconds": 60.0,
        "cpus": 2,
        "load": [1.0, 2.0, 3.0],
        "envs": {
            "baseline": {"rev": "9be2a68", "commit": "9be2a68" + "0" * 33, "python": "py"},
            "current": {"rev": ".", "commit": "abc", "python": "py"},
        },
        "scripts": {"baseline": {"overhead": here}, "current": {"overhead": here}},
        "runs": {"baseline": base, "current": cur},
    }


def test_the_tables_give_both_sides_the_ratio_the_goal_and_a_verdict(bench: ModuleType) -> None:
    """Medians with ranges, current/baseline, the goal, meets/misses and WORSE beyond noise."""
    text = bench.report(_record())
    assert "load average (1 min) over the run: median 2.00, 1.00 to 3.00, on 2 CPUs" in text
    rows = {line.split("  ")[0]: line for line in text.splitlines()}
    # overhead: (220-100)/10 / ((200-100)/10) = 1.2 .. 1.3; current 2.0 .. 2.2
    chain = rows["chain 100"]
    assert "1.250x [1.200x..1.300x]" in chain
    assert "2.100x [2.000x..2.200x]" in chain
    assert "1.680" in chain
    assert "<= 1.300x" in chain
    assert "MISSES (was: meets)" in chain
    assert chain.endswith("WORSE")
    lattice = rows["lattice 10x10"]
    assert "0.995x [0.990x..1.000x]" in lattice
    assert "MISSES (was: meets)" in lattice
    # throughput: gather wall / aask wall, higher is better
    at_once = rows["1000 at once"]
    assert "0.955x [0.909x..1.000x]" in at_once
    assert "0.477x [0.455x..0.500x]" in at_once
    assert ">= 0.900x" in at_once
    assert at_once.endswith("WORSE")
    journal = [line for line in text.splitlines() if line.startswith("NORMAL  ")]
    assert len(journal) == 3
    p50, p99, burst = journal
    assert "+5.5% [+5.0%..+6.0%]" in p50
    assert "<= +10.0%" in p50
    assert "MISSES (was: meets)" in p50
    assert "+15.0% [+10.0%..+20.0%]" in p99
    assert "0.871x [0.833x..0.909x]" in burst
    assert "0.450x [0.400x..0.500x]" in burst
    assert "MISSES (was: meets)" in burst
    # blocking: hand-written wall / aask wall, higher is better
    blocking = rows["200 at once"]
    assert "0.850x [0.800x..0.900x]" in blocking
    assert "0.550x [0.500x..0.600x]" in blocking
    assert ">= 0.800x" in blocking
    assert "MISSES (was: meets)" in blocking
    assert blocking.endswith("WORSE")


def test_noise_decides_worse_better_or_same(bench: ModuleType) -> None:
    """Overlapping ranges, or medians within 5%, are the same; apart and beyond 5% are not."""
    lower = bench.GOALS[0]
    higher = bench.GOALS[2]
    assert bench.versus(lower, [1.0, 1.1], [1.05, 1.2]) == "same"
    assert bench.versus(lower, [1.0, 1.01], [1.02, 1.03]) == "same"
    assert bench.versus(lower, [1.0, 1.01], [1.2, 1.3]) == "WORSE"
    assert bench.versus(lower, [1.2, 1.3], [1.0, 1.01]) == "better"
    assert bench.versus(higher, [1.0, 1.01], [1.2, 1.3]) == "better"
    assert bench.versus(higher, [1.2, 1.3], [1.0, 1.01]) == "WORSE"


def test_a_saved_run_prints_again(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--load prints the tables of a saved run without installing or timing anything."""
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps(_record()), encoding="utf-8")
    assert bench.main(["--load", str(saved)]) == 0
    out = capsys.readouterr().out
    assert out.count("figure: ") == len(bench.GOALS)
    assert "baseline: 9be2a68 = 9be2a68" in out
    assert "ran this checkout's benchmark scripts" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["--rounds", "0"],
        ["--only", "nonsense"],
        ["--rounds", "x"],
        ["--baseline-with", "anyio"],
        ["--baseline-with", "anyio>=4.13"],
        ["--baseline-with", "anyio @ https://example.invalid/anyio.whl"],
        ["--baseline-with", "./anyio-4.13.0-py3-none-any.whl"],
        ["--baseline-with", "--index-url=x"],
    ],
)
def test_bad_arguments_are_refused(bench: ModuleType, argv: list[str]) -> None:
    """A bad argument stops before anything is checked out or installed."""
    with pytest.raises(SystemExit) as exc:
        bench.main(argv)
    assert exc.value.code == 2


def test_a_benchmark_a_side_cannot_start_is_left_out_saying_why(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script that fails to start on one side (an earlier solvi lacking what it imports)
    is not measured, and the report says which side, which script and the error."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "overhead.py").write_text('"--json"\nimport sys\nsys.exit(0)\n', encoding="utf-8")
    (scripts / "journal_overhead.py").write_text(
        '"--json"\nimport solvi_has_no_such_module\n', encoding="utf-8"
    )
    env = bench.Env("baseline", "old", "0" * 40, sys.executable, scripts)
    reasons = bench.cannot_run([env], ["overhead", "journal"], tmp_path)
    assert list(reasons) == ["journal"]
    assert reasons["journal"].startswith("baseline old cannot start its own journal_overhead.py")
    assert "ModuleNotFoundError: No module named 'solvi_has_no_such_module'" in reasons["journal"]

    record = _record()
    del record["runs"]["baseline"]["journal"], record["runs"]["current"]["journal"]
    record["skipped"] = reasons
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps(record), encoding="utf-8")
    assert bench.main(["--load", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "  journal: not measured: baseline old cannot start its own" in out
    assert "journal on 2 ms steps" not in out


def test_a_pinned_dependency_is_shown_with_its_side(
    bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--baseline-with` pins are part of the record, and the heading names them."""
    assert bench.pin("anyio==4.13.0") == "anyio==4.13.0"
    record = _record()
    record["envs"]["baseline"]["pins"] = ["anyio==4.13.0", "attrs==25.1.0"]
    saved = tmp_path / "runs.json"
    saved.write_text(json.dumps(record), encoding="utf-8")
    assert bench.main(["--load", str(saved)]) == 0
    out = capsys.readouterr().out
    assert (
        "baseline: 9be2a68 = 9be2a68" + "0" * 33 + " with anyio==4.13.0 with attrs==25.1.0 (py)"
        in out
    )
    assert "current: . = abc (py)" in out
