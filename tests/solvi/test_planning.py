"""The Planner: one System's compiled flows, its producer choice and its journal version."""

from __future__ import annotations

from typing import Any

import pytest

from solvi import Catalog, MeasuredCosts, RequestError, System
from solvi._run.steps import Program
from solvi.strategy import DeterministicStrategist


def _priced() -> Catalog:
    cat = Catalog("priced")

    @cat.fn(provides="score", cost=1.0)
    def score_a(applicant: dict[str, Any]) -> int:
        return 700

    @cat.fn(provides="score", cost=2.0)
    def score_b(applicant: dict[str, Any]) -> int:
        return 700

    @cat.check(hard=True)
    def adult(applicant: dict[str, Any]) -> bool:
        return bool(applicant.get("age", 0) >= 18)

    @cat.rule
    def approve(adult: bool, score: int) -> bool:
        return adult and score > 600

    return cat


def test_a_key_set_is_planned_once_and_then_served_from_the_cache() -> None:
    planner = System(_priced()).planner
    keys = frozenset({"applicant"})
    assert planner.cached(keys) is None
    first = planner.program(keys)
    assert planner.cached(keys) is first
    assert planner.program(keys) is first
    assert len(planner) == 1
    assert planner.plan(keys) is first.flow


def _producer(program: Program) -> str:
    return next(n for n in program.nodes if n.fact == "score").parts[0].name


def test_program_for_checks_an_uncached_state_and_refuses_a_guarded_key() -> None:
    planner = System(_priced()).planner
    program, prices = planner.program_for({"applicant": {"age": 30}})
    assert prices is None  # declared costs: no producer choice
    assert _producer(program) == "score_a"  # the cheaper declared cost
    with pytest.raises(RequestError, match="adult"):
        planner.program_for({"applicant": {}, "adult": True})


def test_replan_forgets_every_flow_and_pins_the_new_version() -> None:
    planner = System(_priced()).planner
    planner.program(frozenset({"applicant"}))
    digest = planner.journal_version.rsplit(".", 1)[-1]
    planner.replan(DeterministicStrategist(), f"v2.{digest}")
    assert len(planner) == 0
    assert planner.journal_version == f"v2.{digest}"


def test_node_cost_is_the_measured_mean_else_the_declared_cost() -> None:
    system = System(_priced())
    planner = system.planner
    program = planner.program(frozenset({"applicant"}))
    node = next(n for n in program.nodes if n.fact == "score")
    declared = node.parts[0].cost
    assert planner.node_cost(node) == declared
    system.cost_book.observe([(node.parts[0].name, 0.040)])
    assert planner.node_cost(node) == pytest.approx(40.0)
    checks = next(n for n in program.nodes if n.fact == "adult")
    assert planner.node_cost(checks) == 0.0  # no cost declared, none measured


def test_a_recorded_plan_names_its_producer_whatever_the_book_prefers_now() -> None:
    system = System(
        _priced(), producers="equivalent", cost_policy="measured", costs=MeasuredCosts()
    )
    planner = system.planner
    assert planner.chooser is not None
    keys = frozenset({"applicant"})
    preferred = _producer(planner.program_for({"applicant": {}})[0])
    other = "score_b" if preferred == "score_a" else "score_a"
    plan = {"score": {"producer": other, "candidates": {"score_a": 5.0, "score_b": 1.0}}}
    asks = planner.chooser.asks
    program, prices = planner.recorded_program(keys, plan)
    assert _producer(program) == other
    assert prices is not None
    assert prices[other].preferred
    assert planner.chooser.asks == asks  # replaying a record counts no ask
    # A plan that names no producer of the group leaves the current choice.
    program, _ = planner.recorded_program(keys, {"score": {"producer": "nobody"}})
    assert _producer(program) == preferred
