"""producers="learned": equivalent producers chosen per request by learned P(fail) and cost."""

from __future__ import annotations

import anyio
import pytest

from solvi import Catalog, Question, System

RATES = {"EUR": 1.08, "GBP": 1.27, "CHF": 1.12}


def _catalog(calls: list[str]) -> Catalog:
    cat = Catalog("pricing")

    @cat.fn(provides="rate", cost=2.0)
    def rate_from_bank(currency):
        calls.append("bank")
        if currency == "CHF":
            raise ConnectionError("the bank does not quote CHF")
        return RATES[currency]

    @cat.fn(provides="rate", cost=8.0)
    def rate_from_table(currency):
        calls.append("table")
        return RATES[currency]

    @cat.rule
    def price(amount, rate):
        return round(amount * rate, 2)

    return cat


def _trained(calls: list[str], **options: object) -> System:
    system = System(_catalog(calls), [Question("price")], producers="learned", **options)
    for n in range(60):
        system.ask({"amount": 10, "currency": ("EUR", "CHF", "GBP")[n % 3]})
    calls.clear()
    return system


def test_the_producer_likely_to_fail_on_this_request_is_not_chosen() -> None:
    """After learning, CHF goes to the table and EUR to the cheaper bank."""
    calls: list[str] = []
    system = _trained(calls)
    chf = system.ask({"amount": 10, "currency": "CHF"})
    eur = system.ask({"amount": 10, "currency": "EUR"})
    assert calls == ["table", "bank"]
    assert chf["price"].value == 11.2
    assert eur["price"].value == 10.8
    assert chf.safeguards == eur.safeguards == ()


def test_the_trace_says_why() -> None:
    """The plan record names the learned choice, the probabilities and expected costs."""
    system = _trained([])
    plan = system.ask({"amount": 10, "currency": "CHF"}).trace.plan["rate"]
    assert plan["producer"] == "rate_from_table"
    assert plan["source"] == "learned"
    why = plan["why"]
    assert why.startswith("least expected cost: rate_from_bank 2 ms / (1 - P(fail) 0.")
    assert "; rate_from_table 8 ms / (1 - P(fail) 0." in why


def test_warm_up_tries_each_producer_first() -> None:
    """Before min_samples outcomes each, producers are tried cheapest first."""
    calls: list[str] = []
    system = System(_catalog(calls), [Question("price")], producers="learned")
    plan = system.ask({"amount": 10, "currency": "EUR"}).trace.plan["rate"]
    assert plan["source"] == "warm-up"
    assert plan["why"] == "warm-up: tried 0 of 3 times before P(fail) decides"
    assert calls == ["bank"]


def test_every_driver_makes_the_same_choice() -> None:
    """ask, ask(workers=4) and aask choose alike and answer alike."""
    calls: list[str] = []
    system = _trained(calls)
    state = {"amount": 10, "currency": "CHF"}
    one = system.ask(state)
    threaded = system.ask(state, workers=4)

    async def main() -> str:
        return (await system.aask(state)).hash

    assert one.hash == threaded.hash == anyio.run(main)
    assert calls == ["table"] * 3


def test_replay_uses_the_recorded_choice(tmp_path: object) -> None:
    """A stored learned choice replays as the same."""
    system = _trained([], store=f"{tmp_path}/s.db")
    res = system.ask({"amount": 10, "currency": "CHF"})
    assert system.replay(res.request_id).same
    system.close()


def test_an_unknown_producers_value_is_refused() -> None:
    """A misspelt producers= names the three choices."""
    with pytest.raises(ValueError, match='producers must be "all" or "equivalent" or "learned"'):
        System(_catalog([]), producers="learnt")  # type: ignore[arg-type]
