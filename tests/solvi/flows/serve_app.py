"""A small loans System for the server tests: an async lookup, a hard check, a part that raises.

`debt_ratio` raises ZeroDivisionError when ``income`` is 0, so a request with
no income is answered with an `error` safeguard; `adult` is a hard check that
forces ``approve`` to False for anyone under 18. ``solvi serve
tests/solvi/flows/serve_app.py:system`` serves it.
"""

from __future__ import annotations

import anyio

from solvi import Catalog, Question, System

__all__ = ["LOANS", "make_system", "system"]

#: Requests whose answers the tests compare between the server and `System.ask`.
LOANS: list[dict[str, object]] = [
    {"customer": "ana", "age": 34, "income": 5200, "debts": 900},
    {"customer": "ben", "age": 17, "income": 900, "debts": 0},
    {"customer": "chloe", "age": 51, "income": 0, "debts": 4000},
    {"customer": "dan", "age": 29, "income": 3100, "debts": 2900},
    {"customer": "eve", "age": "unknown", "income": 4000, "debts": 100},
    {"customer": "fay", "age": 40},
    {"age": 40, "income": 1000, "debts": 10},
]


def make_system() -> System:
    """A fresh loans System (its own cost book and statistics)."""
    cat = Catalog("loans")

    @cat.fn
    async def credit_score(customer: str) -> int:
        await anyio.sleep(0.001)
        return 300 + sum(map(ord, customer)) % 550

    @cat.check(hard=True)
    def adult(age: int) -> bool:
        return age >= 18

    @cat.fn
    def debt_ratio(income: float, debts: float) -> float:
        return round(debts / income, 4)

    @cat.check
    def affordable(debt_ratio: float) -> bool:
        return debt_ratio < 0.4

    @cat.rule
    def approve(adult: bool, credit_score: int, affordable: bool) -> bool:
        return affordable and credit_score >= 600

    @cat.rule
    def limit(credit_score: int) -> int:
        return max(0, credit_score - 500) * 100

    return System(cat, [Question("approve", forced=False), "limit"])


system = make_system()
