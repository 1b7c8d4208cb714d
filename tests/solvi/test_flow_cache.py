"""The bounded flow cache: planned once per key set, least recently used forgotten first."""

from __future__ import annotations

import pytest
from threads import errors_in_threads

from solvi import Catalog, Question, RequestError, System


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
