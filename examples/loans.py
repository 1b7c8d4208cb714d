"""Loans: learn whether an application will be repaid, and stop paying for what adds nothing.

A bank decides loan applications. Its hand-written rule reads a credit bureau
report, a paid lookup (declared at 250 ms; simulated here with a 2 ms sleep),
next to the bank's own payment history (5 ms) and ratios computed from the
application. The example makes synthetic applications, seeded, together with
whether each loan was repaid, then asks ``system.fit`` for a head that answers
``decision`` from the facts worth their cost. The head's flow no longer calls
the bureau: the bank's own history says nearly as much.

Run it with ``python examples/loans.py``; ``benchmarks/heads.py`` measures the
same comparison on larger samples. Other code imports ``catalog``,
``applications``, ``head_system``, ``rule_system`` and ``accuracy`` from here.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import Any

from solvi import Catalog, Question, Response, System

__all__ = [
    "BUREAU_DELAY",
    "PURPOSES",
    "accuracy",
    "applications",
    "catalog",
    "declared_ms",
    "head_system",
    "main",
    "rule_system",
]

#: seconds the simulated bureau lookup sleeps (its declared cost is 250 ms)
BUREAU_DELAY = 0.002
PURPOSES = ("car", "home", "education", "business")

# -- the outside world, simulated: a pure function of who applies ---------------------


def _who(application: dict[str, Any]) -> str:
    """Who applies, as the bank's and the bureau's records know them."""
    return "|".join(str(application[k]) for k in ("age", "income", "debts", "years_employed"))


def _history_of(application: dict[str, Any]) -> dict[str, int]:
    rng = random.Random(f"history-{_who(application)}")
    return {"late_payments": min(9, int(rng.expovariate(1 / 1.3))), "accounts": rng.randint(1, 8)}


def _external_of(application: dict[str, Any]) -> float:
    """What only the bureau sees: the applicant's record at other lenders."""
    return random.Random(f"bureau-{_who(application)}").gauss(0.0, 1.0)


# -- the catalog ---------------------------------------------------------------------

catalog = Catalog("loans")


@catalog.check(hard=True, cost=0.01)
def of_age(application: dict[str, Any]) -> bool:
    """Lend only to adults."""
    return bool(application["age"] >= 18)


@catalog.fn(cost=5.0)
def history(application: dict[str, Any]) -> dict[str, int]:
    """The bank's own records: late payments and open accounts."""
    return _history_of(application)


@catalog.fn(cost=250.0)
def bureau(application: dict[str, Any]) -> dict[str, int]:
    """A paid credit bureau report (the expensive part)."""
    time.sleep(BUREAU_DELAY)
    rng = random.Random(f"report-{_who(application)}")
    late = _history_of(application)["late_payments"]
    score = 720 - 30 * late - 40 * _external_of(application) + rng.gauss(0.0, 20.0)
    return {"score": max(300, min(850, round(score))), "inquiries": rng.randint(0, 6)}


@catalog.fn(cost=0.01)
def debt_ratio(application: dict[str, Any]) -> float:
    """Debts over yearly income."""
    return float(application["debts"] / application["income"])


@catalog.fn(cost=0.01)
def loan_to_income(application: dict[str, Any]) -> float:
    """The amount asked for over yearly income."""
    return float(application["amount"] / application["income"])


@catalog.check(cost=0.01)
def bureau_clean(bureau: dict[str, int]) -> bool:
    """A soft check: a score the bank's old rule liked."""
    return bureau["score"] >= 640


@catalog.rule
def approve(of_age: bool, bureau_clean: bool, debt_ratio: float) -> bool:
    """The bank's hand-written rule: a good bureau score and little debt."""
    return bureau_clean and debt_ratio < 0.35


def rule_system() -> System:
    """The hand-written rule: ``approve``."""
    return System(catalog, [Question("approve", forced=False)])


def head_system() -> System:
    """``decision``, a question without a rule, for a head to answer (minors are declined)."""
    return System(catalog, [Question("decision", requires=["of_age"], forced=False)])


# -- synthetic applications and what became of them ------------------------------------


def applications(n: int, seed: int) -> tuple[list[dict[str, Any]], list[bool]]:
    """`n` applications drawn with `seed`, and whether each loan was repaid.

    Whether a loan is repaid depends on the ratios, the bank's history, the
    years employed, the purpose, and a little on what only the bureau sees.
    """
    rng = random.Random(seed)
    states: list[dict[str, Any]] = []
    repaid: list[bool] = []
    for _ in range(n):
        income = rng.randint(18, 180) * 1000
        application = {
            "age": rng.randint(17, 75),
            "income": income,
            "debts": round(income * rng.uniform(0.0, 0.7)),
            "amount": rng.randint(1, 60) * 1000,
            "years_employed": rng.randint(0, 30),
            "purpose": rng.choice(PURPOSES),
        }
        late = _history_of(application)["late_payments"]
        risk = (
            -2.3
            + 5.0 * application["debts"] / income
            + 3.0 * application["amount"] / income
            + 0.5 * late
            - 0.05 * application["years_employed"]
            + (0.6 if application["purpose"] == "business" else 0.0)
            + 0.15 * _external_of(application)
            + random.Random(f"outcome-{_who(application)}").gauss(0.0, 0.3)
        )
        states.append({"application": application})
        repaid.append(application["age"] >= 18 and risk < 0)
    return states, repaid


def accuracy(responses: Sequence[Response], question: str, truth: Sequence[bool]) -> float:
    """The share of answers that equal the truth (an abstention counts as wrong)."""
    right = sum(res[question].value == t for res, t in zip(responses, truth, strict=True))
    return right / len(truth)


def declared_ms(res: Response) -> float:
    """The declared cost (ms) of the steps a response ran."""
    return sum(catalog.part(step.part).cost or 0.0 for step in res.trace.steps)


def _summary(
    label: str, responses: Sequence[Response], question: str, truth: Sequence[bool]
) -> str:
    cost = sum(declared_ms(r) for r in responses) / len(responses)
    calls = sum(any(step.part == "bureau" for step in r.trace.steps) for r in responses)
    return (
        f"{label:<20} accuracy {accuracy(responses, question, truth):.3f}, "
        f"{cost:6.2f} ms per decision (declared), {calls} bureau calls"
    )


def main() -> None:
    """Fit heads on 600 applications and compare them with the rule on 400 others."""
    train, repaid = applications(600, seed=7)
    test, outcome = applications(400, seed=8)
    print(f"{len(train)} applications to learn from, {len(test)} held out (seeded)")

    rules = rule_system()
    by_rule = [rules.ask(s) for s in test]
    print(_summary("hand-written rule", by_rule, "approve", outcome))

    system = head_system()
    print(f"before fit, decision runs: {', '.join(system.plan(['application']).steps)}")
    table = system.facts_for(train)  # the whole flow of each application, run once

    every = head_system()
    every.fit("decision", table, repaid, features=table.facts)
    by_every = [every.ask(s) for s in test]
    print(_summary("head on every fact", by_every, "decision", outcome))

    head = system.fit("decision", table, repaid)
    print(f"fitted head on {', '.join(head.facts)}")
    flow = system.plan(["application"])
    print(f"  its flow runs: {', '.join(flow.steps)}")
    for part, why in flow.skipped.items():
        print(f"  skipped {part}: {why}")
    by_head = [system.ask(s) for s in test]
    print(_summary("fitted head", by_head, "decision", outcome))

    cheap = head_system()
    small = cheap.fit("decision", table, repaid, budget_ms=1.0)
    by_small = [cheap.ask(s) for s in test]
    print(_summary("within budget_ms=1", by_small, "decision", outcome))
    print(f"  on {', '.join(small.facts)}")

    before = sum(declared_ms(r) for r in by_every)
    after = sum(declared_ms(r) for r in by_head)
    saved = 1 - after / before
    print(f"the fitted head saves {saved:.0%} of the declared cost per decision of the head on")
    print("every fact, and every call to the bureau")
    print()
    print(by_head[0].show(timings=False))


if __name__ == "__main__":
    main()
