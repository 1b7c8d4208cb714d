"""The bounded flow cache: planned once per key set, least recently used forgotten first."""

from __future__ import annotations

import re
from typing import Any

import attrs
import pytest
from threads import errors_in_threads

from solvi import Catalog, PlanError, Question, RequestError, System


def _system(max_flows: int) -> System:
    cat = Catalog("cache")

    @cat.fn
    def total(amount):
        return amount

    @cat.check(hard=True)
    def in_force(policy):
        return policy["active"]

    @cat.rule
    def approve(total, in_force):
        return total < 100

    return System(cat, [Question("approve", forced=False)], max_flows=max_flows)


BASE = {"amount": 5, "policy": {"active": True}}


def _state(extra: int) -> dict[str, object]:
    return {**BASE, f"note{extra}": extra}


def test_the_cache_never_holds_more_than_max_flows() -> None:
    """Ever new key sets fill the cache up to the bound and no further."""
    system = _system(max_flows=8)
    for n in range(50):
        assert system.ask(_state(n))["approve"].value is True
    assert len(system.planner) == 8


def test_the_least_recently_used_flow_is_forgotten_first() -> None:
    """A flow used again stays; the one untouched longest goes."""
    system = _system(max_flows=3)
    a, b, c, d = (frozenset(_state(n)) for n in range(4))
    for keys in (a, b, c):
        system.plan(keys)
    system.plan(a)  # a is now the most recent; b the least
    system.plan(d)
    assert system.planner.cached(b) is None
    assert all(system.planner.cached(k) is not None for k in (a, c, d))


def test_an_evicted_flow_is_planned_again_with_the_same_answers() -> None:
    """Eviction costs a plan, never a different answer, and the guard still applies."""
    system = _system(max_flows=1)
    first = system.ask(_state(1))
    system.ask(_state(2))
    again = system.ask(_state(1))
    assert again.hash == first.hash
    with pytest.raises(RequestError, match="in_force"):
        system.ask({**_state(1), "in_force": True})


def test_threads_filling_the_cache_keep_it_bounded() -> None:
    """Concurrent requests with distinct key sets never push the cache past its bound."""
    system = _system(max_flows=16)

    def worker(offset: int) -> None:
        for n in range(200):
            system.ask(_state(offset * 1000 + n % 40))

    assert errors_in_threads(worker, 4) == []
    assert len(system.planner) <= 16


@pytest.mark.parametrize("bad", [0, -1, 2.5, "10"])
def test_max_flows_must_be_a_positive_whole_number(bad: object) -> None:
    """A wrong bound is refused when the System is built, naming the option."""
    with pytest.raises((ValueError, TypeError), match="max_flows"):
        _system(bad)  # type: ignore[arg-type]


def test_the_default_bound_is_a_thousand_flows() -> None:
    """Without max_flows= the System keeps at most 1,000 flows."""
    cat = _system(1).catalog
    assert System(cat, [Question("approve", forced=False)]).settings.max_flows == 1000


def _plans_then(change: Any) -> Any:
    """A strategist that plans as the default one does, then changes the flow."""
    from solvi.strategy import DeterministicStrategist

    base = DeterministicStrategist()

    class Changed:
        name = "changed"

        def plan(self, parts: Any, questions: Any, keys: Any, prices: Any = None) -> Any:
            return change(base.plan(parts, questions, keys, prices))

    return Changed()


def _chain() -> Catalog:
    cat = Catalog("s")

    @cat.fn
    def a(k: int) -> int:
        return 1

    @cat.fn
    def b(a: int) -> int:
        return a + 1

    @cat.rule
    def r(b: int) -> bool:
        return b > 1

    return cat


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda flow: None, "returned NoneType, not a solvi.Flow"),
        (
            lambda flow: attrs.evolve(
                flow,
                nodes=tuple(
                    attrs.evolve(n, index=i, deps=()) for i, n in enumerate(flow.nodes[1:])
                ),
            ),
            "planned 'r' with deps [], but it reads the facts of nodes [0]",
        ),
        (
            lambda flow: attrs.evolve(
                flow, nodes=(attrs.evolve(flow.nodes[0], deps=(1,)), *flow.nodes[1:])
            ),
            "planned 'a' before the nodes it reads ([1])",
        ),
        (
            lambda flow: attrs.evolve(flow, nodes=flow.nodes[:2]),
            "left out the rule 'r' of question 'r'",
        ),
    ],
    ids=["none", "a-node-dropped", "a-cycle", "the-rule-dropped"],
)
def test_a_strategists_flow_no_driver_can_run_is_refused(change: Any, message: str) -> None:
    """A strategist of one's own may return anything: a flow out of order once failed
    with a KeyError inside a request, or answered a question "decided" with no value.
    It is refused with a PlanError naming the strategist, before anything runs."""
    system = System(_chain(), strategist=_plans_then(change))
    with pytest.raises(PlanError, match=re.escape(f"strategist 'changed' {message}")):
        system.ask({"k": 1})
    assert System(_chain(), strategist=_plans_then(lambda flow: flow)).ask({"k": 1})["r"].value
