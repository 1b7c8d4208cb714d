"""Heads on the loans example: accuracy against the rule, cost with and without narrowing.

One run, side by side, on applications drawn by ``examples/loans.py`` (seeded):

- rule: the bank's hand-written rule ``approve`` (a bureau score and the debt ratio);
- all facts: a head trained on every fact of the whole flow (``fit(features=...)``),
  whose flow therefore runs every part, the bureau included: the flow without narrowing;
- fitted: ``fit`` with no features: greedy, cost-aware selection, and the flow
  narrowed to the selected facts;
- budget 1 ms: ``fit(budget_ms=1.0)``.

Every head is trained on the same `FactsTable` of the training applications and
scored on held-out applications, asked through ``system.ask``. Costs per
decision: declared (the ``cost=`` of each step that ran, the bureau at 250 ms)
and measured (wall time of ``ask``; the bureau sleeps ``BUREAU_DELAY``).

Goal: the fitted head within 1 point of the all-facts head's accuracy, at no
more than half its declared cost per decision.

Usage::

    .venv/bin/python benchmarks/heads.py [--quick] [--seed N]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from solvi import System

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "loans.py"


def load_loans() -> ModuleType:
    """examples/loans.py, imported by path."""
    name = "solvi_loans_example"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@attrs.frozen
class Row:
    """One model's figures on the held-out applications."""

    model: str
    facts: tuple[str, ...]
    accuracy: float
    declared_ms: float
    measured_ms: float
    bureau_calls: int


@attrs.frozen
class Result:
    """Every model of one run, and the sizes it ran with."""

    train: int
    test: int
    seed: int
    rows: tuple[Row, ...]

    def row(self, model: str) -> Row:
        """The figures of one model."""
        return next(r for r in self.rows if r.model == model)

    @property
    def accuracy_gap(self) -> float:
        """All-facts head's accuracy minus the fitted head's, in points."""
        return 100.0 * (self.row("all facts").accuracy - self.row("fitted").accuracy)

    @property
    def cost_ratio(self) -> float:
        """Fitted head's declared cost per decision over the all-facts head's."""
        return self.row("fitted").declared_ms / self.row("all facts").declared_ms

    @property
    def goal_met(self) -> bool:
        """Within 1 point of the all-facts head, at no more than half its cost."""
        return self.accuracy_gap <= 1.0 and self.cost_ratio <= 0.5


def _score(
    loans: ModuleType, system: System, question: str, model: str, test: list[Any], truth: list[bool]
) -> Row:
    responses = []
    took = []
    for state in test:
        started = time.perf_counter()
        responses.append(system.ask(state))
        took.append((time.perf_counter() - started) * 1000.0)
    head = system.heads.get(question)
    return Row(
        model=model,
        facts=() if head is None else head.facts,
        accuracy=loans.accuracy(responses, question, truth),
        declared_ms=statistics.fmean(loans.declared_ms(r) for r in responses),
        measured_ms=statistics.fmean(took),
        bureau_calls=sum(any(s.part == "bureau" for s in r.trace.steps) for r in responses),
    )


def run(train_size: int, test_size: int, seed: int) -> Result:
    """Train every head on `train_size` applications and score all on `test_size` others."""
    loans = load_loans()
    train, repaid = loans.applications(train_size, seed=seed)
    test, outcome = loans.applications(test_size, seed=seed + 1)
    rows = [_score(loans, loans.rule_system(), "approve", "rule", test, outcome)]
    table = loans.head_system().facts_for(train)
    for model, options in (
        ("all facts", {"features": table.facts}),
        ("fitted", {}),
        ("budget 1 ms", {"budget_ms": 1.0}),
    ):
        system = loans.head_system()
        system.fit("decision", table, repaid, **options)
        rows.append(_score(loans, system, "decision", model, test, outcome))
    return Result(train_size, test_size, seed, tuple(rows))


def report(result: Result) -> str:
    """The run as a Markdown table and the goal's verdict."""
    lines = [
        f"loans: {result.train} applications to train on, {result.test} held out, "
        f"seed {result.seed}",
        "",
        "| model | facts | accuracy | declared ms/decision | measured ms/decision | bureau calls |",
        "|---|---|---|---|---|---|",
    ]
    for r in result.rows:
        facts = ", ".join(r.facts) if r.facts else "(its rule's)"
        lines.append(
            f"| {r.model} | {facts} | {r.accuracy:.3f} | {r.declared_ms:.2f} | "
            f"{r.measured_ms:.3f} | {r.bureau_calls} |"
        )
    verdict = "met" if result.goal_met else "missed"
    lines += [
        "",
        f"fitted vs all facts: {result.accuracy_gap:+.1f} points of accuracy behind, "
        f"{result.cost_ratio:.3f}x the declared cost per decision "
        f"(goal: within 1 point at <= 0.5x): {verdict}",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run for CI")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    train, test = (300, 200) if args.quick else (2000, 2000)
    print(report(run(train, test, args.seed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
