"""The check-order and measured-cost benchmarks: what they compare is right (never timings)."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest
from benchmark_modules import load_benchmark


@pytest.fixture(scope="module")
def order_bench() -> Iterator[ModuleType]:
    """benchmarks/check_order.py, imported by path (benchmarks/ is not a package)."""
    yield from load_benchmark("check_order.py")


@pytest.fixture(scope="module")
def costs_bench() -> Iterator[ModuleType]:
    """benchmarks/measured_costs.py, imported by path."""
    yield from load_benchmark("measured_costs.py")


@pytest.fixture(scope="module")
def tiny(order_bench: ModuleType) -> object:
    """Settings small enough for a test: a few dozen requests per scenario."""
    return order_bench.Settings(
        requests=30,
        steady_from=10,
        drift_at=15,
        drift_requests=40,
        recover=10,
        warmup=10,
        confirm=2,
    )


@pytest.fixture(scope="module")
def results(order_bench: ModuleType, tiny: object) -> list[Any]:
    """Every scenario on every shape, run once on tiny settings."""
    return list(order_bench.run(tiny, seed=3))


def test_every_mode_answers_like_the_default_order(
    order_bench: ModuleType, results: list[Any]
) -> None:
    """Each scenario and shape completes, so every mode's answers matched the default's."""
    assert {(r.scenario, r.shape) for r in results} == {
        (s, h) for s in order_bench.SCENARIOS for h in order_bench.SHAPES
    }
    for result in results:
        assert len(result.costs[("default", "declared")]) == result.requests


def test_hindsight_oracle_is_never_beaten(results: list[Any]) -> None:
    """Per request, the hindsight oracle costs no more than any mode under the same guards."""
    for result in results:
        for (mode, guards), costs in result.costs.items():
            oracle = result.costs[("oracle: hindsight", guards)]
            assert all(o <= c + 1e-9 for o, c in zip(oracle, costs, strict=True)), mode
        found = result.costs[("oracle: hindsight", "found")]
        declared = result.costs[("oracle: hindsight", "declared")]
        assert all(f <= d + 1e-9 for f, d in zip(found, declared, strict=True))


def test_declaration_order_is_the_declared_optimum(results: list[Any]) -> None:
    """Under declared guards, declaration order costs exactly what the hindsight oracle does."""
    for result in results:
        assert result.costs[("declaration", "declared")] == pytest.approx(
            result.costs[("oracle: hindsight", "declared")]
        )


def test_simulator_mismatch_aborts(order_bench: ModuleType, tiny: object) -> None:
    """A simulator whose costs disagree with solvi's run makes the benchmark raise."""
    shape, scenario = order_bench.SHAPES["multi"], order_bench.SCENARIOS["independent"]
    original = order_bench.Flowsim.default_cost
    try:
        order_bench.Flowsim.default_cost = lambda self, fails: original(self, fails) + 1.0
        with pytest.raises(order_bench.BenchmarkError, match="the simulator says"):
            order_bench.run_scenario(shape, scenario, tiny, seed=6)
    finally:
        order_bench.Flowsim.default_cost = original


def test_quick_order_run_prints_tables_and_goals(
    order_bench: ModuleType,
    tiny: object,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The quick run prints a table per scenario and shape and a verdict per goal."""
    monkeypatch.setattr(order_bench.Settings, "quick", classmethod(lambda cls: tiny))
    monkeypatch.setattr(order_bench, "SCENARIOS", {"drift": order_bench.SCENARIOS["drift"]})
    assert order_bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert out.count("== drift checks") == len(order_bench.SHAPES)
    assert "oracle: known P" in out
    assert "first 10 after drift" in out
    assert "MET" in out or "MISSED" in out
    assert "answers (status, value) of every mode equal the default order's" in out


def test_measured_shares_are_fractions(costs_bench: ModuleType) -> None:
    """Each source is counted once per request and every share lies between 0 and 1."""
    settings = costs_bench.Settings(requests=40, crossover=20, recheck=8)
    for alpha in (None, 0.5):
        outcome = costs_bench.run(settings, alpha)
        assert sum(outcome.counts().values()) == settings.requests
        assert set(outcome.sources) <= set(costs_bench.SOURCES)
        assert outcome.counts()["warm-up"] >= 2 * settings.min_samples
        for share in (outcome.share(), outcome.share(0, 20), outcome.share(20)):
            assert share is None or 0.0 <= share <= 1.0
        assert set(outcome.producers) <= set(costs_bench.PRODUCERS)
        assert len(set(outcome.answers[:7])) == 7


def test_quick_measured_run_prints_a_row_per_alpha(
    costs_bench: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    """The quick run prints one row per alpha tried."""
    assert costs_bench.main(["--quick", "--alpha", "None", "0.4"]) == 0
    rows = [
        ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith(("None", "0.4"))
    ]
    assert len(rows) == 2
