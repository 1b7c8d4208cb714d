"""Measured costs: two equivalent producers whose speeds cross over mid-run.

One fact, ``rate``, has two producers: ``rate_local`` and ``rate_feed``. Each
really sleeps for its current latency (``time.sleep``, 1 to 5 ms). Before the
crossover the local table is fast (1 ms) and the feed slow (4 ms); after it the
local table is slow (5 ms) and the feed fast (1.5 ms). The System plans with
measured costs::

    System(cat, producers="equivalent", cost_policy="measured",
           costs=MeasuredCosts(min_samples=3, recheck=50, alpha=...))

Each request is classified by ``res.trace.plan["rate"]["source"]`` (warm-up,
recheck, measured, frozen) and by the producer that ran. The goal: outside
warm-up and rechecks (the ``measured`` requests), the producer that is currently
faster serves at least 90% of requests. The run tries ``alpha=None`` (cumulative
mean) and moving averages, and reports how many requests each needed after the
crossover before it served the new faster producer.

Usage::

    .venv/bin/python benchmarks/measured_costs.py [--quick] [--alpha A ...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs

from solvi import Catalog, System
from solvi.costs import MeasuredCosts

__all__ = ["Latency", "Outcome", "Settings", "build_catalog", "format_table", "main", "run"]

GOAL = 0.90
PRODUCERS = ("rate_local", "rate_feed")
SOURCES = ("warm-up", "recheck", "measured", "frozen")


class Latency:
    """The current simulated latency of each producer, in ms; switched at the crossover."""

    def __init__(self, before: dict[str, float], after: dict[str, float]) -> None:
        self.before = before
        self.after = after
        self.crossed = False

    def ms(self, producer: str) -> float:
        """The producer's latency now."""
        return (self.after if self.crossed else self.before)[producer]

    def faster(self) -> str:
        """The producer that is faster now."""
        return min(PRODUCERS, key=self.ms)


def build_catalog(latency: Latency) -> Catalog:
    """``rate`` from a local table or a feed (each sleeping its latency), and a rule."""
    cat = Catalog("measured_costs")

    @cat.fn(provides="rate")
    def rate_local(currency: str) -> float:
        time.sleep(latency.ms("rate_local") / 1000.0)
        return 1.1

    @cat.fn(provides="rate")
    def rate_feed(currency: str) -> float:
        time.sleep(latency.ms("rate_feed") / 1000.0)
        return 1.1

    @cat.rule
    def quote(rate: float, amount: int) -> float:
        return round(rate * amount, 2)

    return cat


@attrs.frozen
class Settings:
    """Requests per run, where the crossover is, and the latencies around it."""

    requests: int = 1200
    crossover: int = 600
    before: tuple[tuple[str, float], ...] = (("rate_local", 1.0), ("rate_feed", 4.0))
    after: tuple[tuple[str, float], ...] = (("rate_local", 5.0), ("rate_feed", 1.5))
    min_samples: int = 3
    recheck: int = 50

    @classmethod
    def quick(cls) -> Settings:
        """A CI smoke run of about a second."""
        return cls(requests=160, crossover=80, recheck=20)


@attrs.frozen
class Outcome:
    """What one run did: the source and producer of every request, and its answer."""

    alpha: float | None
    sources: tuple[str, ...]
    producers: tuple[str, ...]
    faster: tuple[str, ...]
    crossover: int
    answers: tuple[Any, ...]

    def counts(self) -> Counter[str]:
        """Requests per source."""
        return Counter(self.sources)

    def share(self, start: int = 0, end: int | None = None) -> float | None:
        """Share of ``measured`` requests in [start, end) served by the faster producer."""
        end = len(self.sources) if end is None else end
        measured = [
            self.producers[i] == self.faster[i]
            for i in range(start, end)
            if self.sources[i] == "measured"
        ]
        return sum(measured) / len(measured) if measured else None

    def switch_after(self) -> int | None:
        """Requests after the crossover until a measured choice served the new faster one."""
        for i in range(self.crossover, len(self.sources)):
            if self.sources[i] == "measured" and self.producers[i] == self.faster[i]:
                return i - self.crossover
        return None


def run(settings: Settings, alpha: float | None) -> Outcome:
    """One run of `settings.requests` requests with a crossover."""
    latency = Latency(dict(settings.before), dict(settings.after))
    system = System(
        build_catalog(latency),
        producers="equivalent",
        cost_policy="measured",
        costs=MeasuredCosts(
            min_samples=settings.min_samples, recheck=settings.recheck, alpha=alpha
        ),
    )
    sources: list[str] = []
    producers: list[str] = []
    faster: list[str] = []
    answers: list[Any] = []
    for t in range(settings.requests):
        latency.crossed = t >= settings.crossover
        res = system.ask({"currency": "EUR", "amount": 100 + t % 7})
        plan = res.trace.plan["rate"]
        ran = [s.part for s in res.trace.steps if s.fact == "rate"]
        if ran != [plan["producer"]]:
            msg = f"request {t}: the plan chose {plan['producer']}, but {ran} ran"
            raise RuntimeError(msg)
        sources.append(str(plan["source"]))
        producers.append(str(plan["producer"]))
        faster.append(latency.faster())
        answers.append((res["quote"].status, res["quote"].value))
    return Outcome(
        alpha,
        tuple(sources),
        tuple(producers),
        tuple(faster),
        settings.crossover,
        tuple(answers),
    )


def _pct(value: float | None) -> str:
    return "   n/a" if value is None else f"{100 * value:5.1f}%"


def format_table(outcomes: Sequence[Outcome]) -> str:
    """One row per alpha: requests per source, shares before/after the crossover, lag."""
    head = (
        f"{'alpha':>6} | {'warm-up':>7} {'recheck':>7} {'measured':>8} {'frozen':>6} | "
        f"{'faster: all':>11} {'before':>7} {'after':>7} | {'switch lag':>10} | goal >= 90%"
    )
    lines = [head, "-" * len(head)]
    for o in outcomes:
        counts = o.counts()
        share = o.share()
        lag = o.switch_after()
        verdict = "MET" if share is not None and share >= GOAL else "MISSED"
        lines.append(
            f"{'None' if o.alpha is None else o.alpha:>6} | "
            + " ".join(f"{counts.get(s, 0):>{max(6, len(s))}}" for s in SOURCES)
            + f" | {_pct(share):>11} {_pct(o.share(0, o.crossover)):>7} "
            f"{_pct(o.share(o.crossover)):>7} | "
            f"{'never' if lag is None else str(lag):>10} | {verdict}"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark for each alpha and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of about a second")
    parser.add_argument(
        "--alpha",
        nargs="*",
        default=["None", "0.2", "0.3", "0.5"],
        help="moving-average weights to try (None: cumulative mean)",
    )
    args = parser.parse_args(argv)
    settings = Settings.quick() if args.quick else Settings()
    alphas = [None if a == "None" else float(a) for a in args.alpha]
    started = time.perf_counter()
    print(
        f"measured_costs: {settings.requests} requests, crossover at {settings.crossover}; "
        f"latency before {dict(settings.before)} ms, after {dict(settings.after)} ms "
        f"(real time.sleep); MeasuredCosts(min_samples={settings.min_samples}, "
        f"recheck={settings.recheck}, alpha=...)"
    )
    outcomes = [run(settings, alpha) for alpha in alphas]
    if len({o.answers for o in outcomes}) != 1:
        msg = "the answers differ between runs"
        raise RuntimeError(msg)
    print(format_table(outcomes))
    print(
        "faster: share of 'measured' requests (outside warm-up and rechecks) served by the "
        "producer that is faster at that moment; switch lag: requests after the crossover "
        "until a measured choice served the new faster producer"
    )
    print(f"{time.perf_counter() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
