"""The learned order of hard checks."""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import CatalogSpec, Log, build, catalogs, states, system_of

from solvi import Catalog, Question, System
from solvi.order import OrderModel, features_of


def _gate_catalog(log: list[str]) -> Catalog:
    """`approve` is governed by a cheap check declared first and a costly one after it."""
    cat = Catalog("gates")

    @cat.check(hard=True, cost=0.1)
    def known_customer(customer: dict[str, Any]) -> bool:
        log.append("known_customer")
        return bool(customer["known"])

    @cat.fn(cost=200.0)
    def credit_report(customer: dict[str, Any]) -> int:
        log.append("credit_report")
        return int(customer["score"])

    @cat.check(hard=True, cost=0.1)
    def report_ok(credit_report: int) -> bool:
        log.append("report_ok")
        return credit_report > 300

    @cat.fn(cost=50.0)
    def limit(credit_report: int) -> int:
        log.append("limit")
        return credit_report * 10

    @cat.rule
    def approve(known_customer: bool, report_ok: bool, limit: int) -> bool:
        return limit > 5000

    return cat


def _customers(n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "customer": {
                "known": rng.random() < 0.2,
                "score": rng.randint(100, 900),
                "segment": rng.choice(["retail", "business"]),
            }
        }
        for _ in range(n)
    ]


def test_learned_order_skips_work_where_a_check_usually_fails() -> None:
    """After learning that known_customer usually fails, the costly report is not fetched."""
    log: list[str] = []
    system = System(_gate_catalog(log), [Question("approve", forced=False)])
    model = system.learn_order(_customers(100, seed=1))
    assert system.order == "learned"
    fails, total = model.counts("known_customer")
    assert total == 100
    assert 60 <= fails <= 95
    log.clear()
    res = system.ask({"customer": {"known": False, "score": 800, "segment": "retail"}})
    assert res["approve"].status == "forced"
    assert log == ["known_customer"]
    assert ("credit_report", "not needed: hard check known_customer failed") in res.trace.skipped
    log.clear()
    default = system.ask(
        {"customer": {"known": False, "score": 800, "segment": "retail"}}, order="default"
    )
    assert log == ["known_customer", "credit_report", "report_ok"]
    assert default.answers == res.answers
    assert default.decision_hash == res.decision_hash


def test_explain_order_says_why_each_check_ran() -> None:
    """explain_order prints one numbered line per evaluated hard check."""
    system = System(_gate_catalog([]), [Question("approve", forced=False)])
    system.learn_order(_customers(60, seed=2))
    res = system.ask({"customer": {"known": False, "score": 800, "segment": "retail"}})
    (line,) = res.trace.explain_order().splitlines()
    assert line.startswith("1. known_customer: P(fail) 0.")
    assert "× saves" in line
    assert "ms ÷ costs" in line
    assert line.endswith("→ failed; settles approve")
    passed = system.ask({"customer": {"known": True, "score": 800, "segment": "retail"}})
    lines = passed.trace.explain_order().splitlines()
    assert [ln.split(":")[0] for ln in lines] == ["1. known_customer", "2. report_ok"]
    assert lines[1].endswith("→ passed")


def test_earlier_declared_checks_run_next_under_declared_guards() -> None:
    """A failing later-declared check makes its earlier-declared siblings run next."""
    system = System(_gate_catalog([]), [Question("approve", forced=False)])

    class Oracle:
        """Says report_ok almost surely fails and known_customer never does."""

        features: tuple[str, ...] = ()

        def row(self, vals: Mapping[str, Any], init_keys: Iterable[str]) -> dict[str, float]:
            return {}

        def p_fail(self, check: str, row: dict[str, float]) -> float:
            return 0.99 if check == "report_ok" else 0.0

    res = system.ask({"customer": {"known": False, "score": 100, "segment": "x"}}, order=Oracle())
    lines = res.trace.explain_order().splitlines()
    assert lines[0].startswith("1. report_ok:")
    assert lines[0].endswith("→ failed")
    assert lines[1].startswith("2. known_customer:")
    assert "[unblocks approve (already decided by a failed check)]" in lines[1]
    assert lines[1].endswith("→ failed; settles approve")
    assert res["approve"].guard == "known_customer"


def test_found_guards_name_the_check_that_was_found() -> None:
    """guards="found" stops at the first failing check found; status and value are unchanged."""
    log: list[str] = []
    found = System(_gate_catalog(log), [Question("approve", forced=False)], guards="found")
    declared = System(_gate_catalog([]), [Question("approve", forced=False)])

    class Oracle:
        """Ranks report_ok first."""

        def row(self, vals: Mapping[str, Any], init_keys: Iterable[str]) -> dict[str, float]:
            return {}

        def p_fail(self, check: str, row: dict[str, float]) -> float:
            return 0.99 if check == "report_ok" else 0.0

    state = {"customer": {"known": False, "score": 100, "segment": "x"}}
    a = found.ask(state, order=Oracle())
    b = declared.ask(state, order=Oracle())
    assert (a["approve"].status, a["approve"].value) == (b["approve"].status, b["approve"].value)
    assert a["approve"].guard == "report_ok"
    assert b["approve"].guard == "known_customer"
    assert "known_customer" not in log


@pytest.mark.parametrize("guards", ["declared", "found"])
def test_a_check_reading_another_waits_for_it(guards: str) -> None:
    """The order ranks first a hard check that reads another's fact; that other runs
    first all the same, in its batch, so it is the check evaluated (with its own line):
    when it fails it settles the questions. Under found guards it was left out of the
    checks found, so the reader's pass let the rules run on the failed check's False."""
    cat = Catalog("nested_checks")

    @cat.check(hard=True, cost=1.0)
    def registered(account: str) -> bool:
        return account != "ghost"

    @cat.check(hard=True, cost=1.0)
    def in_good_standing(registered: bool, balance: int) -> bool:
        return balance >= 0

    @cat.rule(cost=10.0)
    def approve(registered: bool) -> bool:
        return registered

    class Oracle:
        """Ranks in_good_standing first: 0.99 x 10 ms saved / 2 ms against 0.01 x 11 / 1."""

        def row(self, vals: Mapping[str, Any], init_keys: Iterable[str]) -> dict[str, float]:
            return {}

        def p_fail(self, check: str, row: dict[str, float]) -> float:
            return 0.99 if check == "in_good_standing" else 0.01

    system = System(cat, [Question("approve", forced=False)], guards=guards)  # type: ignore[arg-type]
    res = system.ask({"account": "ghost", "balance": 10}, order=Oracle())
    assert (res["approve"].status, res["approve"].guard) == ("forced", "registered")
    assert [step.part for step in res.trace.steps] == ["registered"]
    lines = res.trace.explain_order().splitlines()
    assert [line.split(":")[0] for line in lines] == ["1. registered"]
    assert lines[0].endswith("→ failed; settles approve")


def test_default_system_learns_nothing() -> None:
    """Without learn= or a learned order, asking records no check outcomes."""
    system = System(_gate_catalog([]), [Question("approve", forced=False)])
    for state in _customers(5, seed=3):
        system.ask(state)
    assert system.order_model.counts("known_customer") == (0, 0)
    learning = System(_gate_catalog([]), [Question("approve", forced=False)], learn=True)
    for state in _customers(5, seed=3):
        learning.ask(state)
    assert learning.order_model.counts("known_customer")[1] == 5


@pytest.mark.asyncio
async def test_speculation_under_a_learned_order_warns_and_is_ignored() -> None:
    """speculate=True meets a learned order: a UserWarning, then the learned order runs."""
    system = System(_gate_catalog([]), [Question("approve", forced=False)], order="learned")
    with pytest.warns(UserWarning, match="speculate=True is ignored under a learned order"):
        res = await system.aask(
            {"customer": {"known": True, "score": 800, "segment": "x"}}, speculate=True
        )
    assert res["approve"].status == "decided"


def test_features_of_flattens_one_level_of_dicts() -> None:
    """Scalars, one-hot strings and one level of dicts become features."""
    row = features_of(
        {"invoice": {"currency": "EUR", "amount": 12, "lines": {"deep": 1}}, "vip": True},
        ["invoice", "vip"],
    )
    assert row == {"invoice.currency=EUR": 1.0, "invoice.amount": 12.0, "vip": 1.0}


def test_features_of_leaves_out_numbers_a_float_cannot_hold() -> None:
    """NaN, infinities and integers past float range are no feature (and no OverflowError)."""
    row = features_of(
        {"big": 10**400, "small": -(10**400), "nan": math.nan, "inf": math.inf, "n": 10**300},
        ["big", "small", "nan", "inf", "n"],
    )
    assert row == {"n": 1e300}


def test_a_check_model_learns_from_huge_feature_values() -> None:
    """Features near the float range fit a head without overflowing."""
    model = OrderModel(refit=10)
    for i in range(40):
        model.observe("check", {"amount": 1e300 * (-1) ** i, "tiny": 5e-324}, i % 2 == 0)
    assert 0.0 <= model.p_fail("check", {"amount": 1e300}) <= 1.0
    again = OrderModel.from_json(model.to_json())
    assert again.p_fail("check", {"amount": 1e300}) == model.p_fail("check", {"amount": 1e300})


def test_order_model_learns_a_segment_dependent_failure_rate() -> None:
    """With enough rows the head separates a feature that predicts failure."""
    model = OrderModel(refit=50)
    rng = random.Random(5)
    for _ in range(400):
        segment = rng.choice(["retail", "business"])
        failed = rng.random() < (0.9 if segment == "retail" else 0.1)
        model.observe("check", {f"segment={segment}": 1.0}, failed)
    assert model.p_fail("check", {"segment=retail": 1.0}) > 0.7
    assert model.p_fail("check", {"segment=business": 1.0}) < 0.3
    again = OrderModel.from_json(model.to_json())
    assert again.p_fail("check", {"segment=retail": 1.0}) == pytest.approx(
        model.p_fail("check", {"segment=retail": 1.0})
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(spec=catalogs(), examples=st.lists(states(), min_size=1, max_size=4))
def test_learned_order_gives_the_default_answers(
    spec: CatalogSpec, examples: list[dict[str, int]]
) -> None:
    """On random catalogs, a learned order answers exactly as the default order."""
    cat, questions = build(spec, Log())
    for guards in ("declared", "found"):
        system = system_of(cat, questions, guards=guards)  # type: ignore[arg-type]
        system.learn_order(examples)
        for state in examples:
            learned = system.ask(state)
            default = system.ask(state, order="default")
            threaded = system.ask(state, workers=3)
            asynchronous = anyio.run(system.aask, state)
            for other in (default, threaded, asynchronous):
                for name, answer in learned.answers.items():
                    mine = other[name]
                    if guards == "declared":
                        assert answer == mine
                    elif "could not be evaluated" not in mine.reason + answer.reason:
                        # Found guards promise the same status and value, except where
                        # a check that errors would have decided under declared guards.
                        assert (answer.status, answer.value) == (mine.status, mine.value)
        system.close()


def test_no_warning_for_default_speculation() -> None:
    """Speculation under the default order raises no warning."""
    system = System(_gate_catalog([]), [Question("approve", forced=False)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        anyio.run(
            lambda: system.aask(
                {"customer": {"known": True, "score": 1, "segment": "x"}}, speculate=True
            )
        )


def test_a_check_model_keeps_no_column_of_rows_past_its_window() -> None:
    """Each request with a new string value adds a one-hot column; once a refit runs,
    only the columns of the rows in the window are kept, so the model (and the blob a
    store keeps of it) stays bounded however many distinct values come."""
    model = OrderModel(refit=50, window=200)
    for i in range(3000):
        model.observe("check", {f"customer=c{i}": 1.0, "amount": float(i % 7)}, i % 3 == 0)
    head = model._checks["check"].head
    assert head is not None
    assert len(head.scale) <= 200 + 50 + 1
    assert len(model.to_json()) < 40_000
