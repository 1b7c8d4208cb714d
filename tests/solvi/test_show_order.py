"""show (and solvi show) close with the explain_order lines when a learned order ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from solvi import Catalog, Question, Response, System
from solvi.cli import main
from solvi.response import render


def _gates() -> Catalog:
    """A cheap check declared after a costly one, both hard."""
    cat = Catalog("gates")

    @cat.fn(cost=200.0)
    def credit_report(customer: dict[str, Any]) -> int:
        return int(customer["score"])

    @cat.check(hard=True, cost=0.1)
    def report_ok(credit_report: int) -> bool:
        return credit_report > 300

    @cat.check(hard=True, cost=0.1)
    def known_customer(customer: dict[str, Any]) -> bool:
        return bool(customer["known"])

    @cat.rule
    def approve(known_customer: bool, report_ok: bool, credit_report: int) -> bool:
        return credit_report > 500

    return cat


QUESTIONS = [Question("approve", forced=False)]
BAD_REPORT = {"customer": {"known": False, "score": 100}}


class Oracle:
    """Fixed probabilities of failing, for a fixed order."""

    def row(self, vals: Any, init_keys: Any) -> dict[str, float]:
        """No features."""
        return {}

    def p_fail(self, check: str, row: dict[str, float]) -> float:
        """known_customer nearly always fails, report_ok never."""
        return 0.9 if check == "known_customer" else 0.0


def _order_section(res: Response) -> list[str]:
    lines = res.show(timings=False).splitlines()
    return lines[lines.index("order") + 1 :] if "order" in lines else []


def test_show_ends_with_the_learned_order() -> None:
    """Under order="learned" the view closes with explain_order's lines, indented."""
    res = System(_gates(), QUESTIONS, order="learned").ask(BAD_REPORT)
    explained = res.trace.explain_order().splitlines()
    assert explained
    assert _order_section(res) == ["  " + line for line in explained]
    assert explained[0].startswith("1. report_ok: P(fail) 0.50 × saves")


def test_show_explains_an_order_object() -> None:
    """An order given to ask is explained the same way, [unblocks ...] included."""
    res = System(_gates(), QUESTIONS).ask(BAD_REPORT, order=Oracle())
    assert _order_section(res) == [
        "  1. known_customer: P(fail) 0.90 × saves 200.1 ms ÷ costs 0.1 ms = 1.8e+03 → failed",
        "  2. report_ok: P(fail) 0.00 × saves 0.0 ms ÷ costs 200.1 ms = 0 [unblocks approve "
        "(already decided by a failed check)] → failed; settles approve",
    ]


def test_show_says_nothing_of_the_default_order() -> None:
    """With every hard check first there is no order to explain."""
    res = System(_gates(), QUESTIONS).ask(BAD_REPORT)
    assert res.trace.order  # the default order's lines are in the record ...
    assert _order_section(res) == []  # ... but not in the view
    assert "order" not in res.show().splitlines()


def test_solvi_show_prints_the_order_of_a_stored_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """solvi show prints what res.show() prints, order included."""
    res = System(_gates(), QUESTIONS, order="learned").ask(BAD_REPORT)
    path = tmp_path / "decision.json"
    path.write_text(res.to_json())
    assert main(["show", str(path)]) == 0
    assert capsys.readouterr().out == res.show() + "\n"


def test_a_record_without_an_order_still_shows() -> None:
    """Records written before the order was kept have no "order" key: shown without it."""
    res = System(_gates(), QUESTIONS, order="learned").ask(BAD_REPORT)
    record = res.record
    del record["order"]
    assert "order" not in render(record).splitlines()
