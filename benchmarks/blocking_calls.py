"""Blocking sync parts under `System.aask`, next to hand-written ``anyio.to_thread`` calls.

A flow of two ``blocking=True`` sync parts and a rule: ``fetch`` sleeps 1 ms (a
blocking client's round trip) and returns ``x + 1``; ``enrich`` reads it and returns
twice its value; the rule ``answer`` reads both and returns their sum, ``3 * (x + 1)``.
Under ``aask`` both parts run in worker threads, at most ``threads`` at once per event
loop (``System(..., threads=16)``). The hand-written side makes the same two calls per
request with ``anyio.to_thread.run_sync`` under one ``anyio.CapacityLimiter(16)`` and
then calls the rule itself, on the same functions.

Two measurements, in one run on one asyncio event loop, rounds interleaved:

1. Throughput: N requests (200; 50 with ``--quick``) started at once in one anyio task
   group, wall time of the whole group, ``aask`` against the hand-written calls. The
   figure is hand-written wall / ``aask`` wall, which is ``aask``'s throughput over the
   hand-written one's: higher is better, 1 means equal.
2. Per-call overhead: the same flow with parts that do not sleep, N requests one after
   another, µs per request of each side, and what ``aask`` adds.

Each request has its own ``x``, and every answer is checked before the figures are
kept. The garbage collector is paused while timing.

Usage::

    .venv/bin/python benchmarks/blocking_calls.py [--quick] [--json]

``--json`` prints the figures as one JSON document instead of the tables
(``against.py`` reads it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import attrs

import solvi

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _shared import gc_paused, table

__all__ = [
    "Result",
    "Settings",
    "build",
    "expected",
    "format_result",
    "main",
    "measure",
    "to_json",
]

REQUEST_KEY = "x"
FINAL = "answer"
#: informational: aask's throughput at least this share of the hand-written calls'
THROUGHPUT_GOAL = 0.8

#: a batch of requests (at once, or one after another): their answers in request order
Batch = Callable[[], Awaitable[list[Any]]]


@attrs.frozen
class Settings:
    """Sizes and repetitions of one run."""

    #: requests at once (throughput) and one after another (overhead)
    requests: int = 200
    threads: int = 16
    #: seconds ``fetch`` sleeps in the throughput measurement
    delay: float = 0.001
    #: interleaved rounds (medians are kept), after `warmup` untimed ones
    rounds: int = 25
    warmup: int = 3

    @classmethod
    def for_mode(cls, *, quick: bool) -> Settings:
        """The full run (about 10 s), or a smoke run of about a second."""
        if quick:
            return cls(requests=50, rounds=5, warmup=1)
        return cls()


def expected(x: int) -> int:
    """The value of ``answer`` for request ``x``: fetch = x+1, enrich = 2(x+1), their sum."""
    return 3 * (x + 1)


def _parts(delay: float) -> tuple[Callable[..., int], Callable[..., int], Callable[..., int]]:
    """``fetch``, ``enrich`` and the rule ``answer``; ``fetch`` sleeps `delay` if not 0."""
    if delay > 0:

        def fetch(x: int) -> int:
            time.sleep(delay)
            return x + 1

    else:

        def fetch(x: int) -> int:
            return x + 1

    def enrich(fetch: int) -> int:
        return 2 * fetch

    def answer(fetch: int, enrich: int) -> int:
        return fetch + enrich

    return fetch, enrich, answer


def _system(delay: float, threads: int) -> solvi.System:
    fetch, enrich, answer = _parts(delay)
    catalog = solvi.Catalog(f"blocking_calls_{'sleep' if delay > 0 else 'nosleep'}")
    catalog.fn(blocking=True)(fetch)
    catalog.fn(blocking=True)(enrich)
    catalog.rule(answer)
    return solvi.System(catalog, threads=threads)


def build(settings: Settings, *, delay: float) -> dict[str, tuple[Batch, Batch]]:
    """For ``aask`` and ``hand``: (all requests at once, the same one after another).

    Each batch returns the answers in request order. Call it on the event loop that
    will run them: the hand-written limiter is made there on first use.
    """
    n, threads = settings.requests, settings.threads
    system = _system(delay, threads)
    fetch, enrich, answer = _parts(delay)
    limiter: list[anyio.CapacityLimiter] = []

    async def by_aask(x: int) -> Any:
        res = (await system.aask({REQUEST_KEY: x}))[FINAL]
        return res.value if res.status == "decided" else (res.status, res.reason)

    async def by_hand(x: int) -> Any:
        if not limiter:
            limiter.append(anyio.CapacityLimiter(threads))
        a = await anyio.to_thread.run_sync(fetch, x, limiter=limiter[0])
        b = await anyio.to_thread.run_sync(enrich, a, limiter=limiter[0])
        return answer(a, b)

    def at_once(one: Callable[[int], Awaitable[Any]]) -> Batch:
        async def batch() -> list[Any]:
            out: list[Any] = [None] * n

            async def request(x: int) -> None:
                out[x] = await one(x)

            async with anyio.create_task_group() as tg:
                for x in range(n):
                    tg.start_soon(request, x)
            return out

        return batch

    def one_after_another(one: Callable[[int], Awaitable[Any]]) -> Batch:
        async def batch() -> list[Any]:
            return [await one(x) for x in range(n)]

        return batch

    return {
        "aask": (at_once(by_aask), one_after_another(by_aask)),
        "hand": (at_once(by_hand), one_after_another(by_hand)),
    }


@attrs.frozen
class Result:
    """Seconds per batch of `settings.requests` requests, per round, for each cell."""

    settings: Settings
    #: "aask" / "hand": wall seconds of all requests at once (fetch sleeps)
    concurrent: dict[str, list[float]]
    #: "aask" / "hand": wall seconds of the requests one after another (no sleep)
    sequential: dict[str, list[float]]
    #: every batch answered every request with `expected`
    agree: bool

    def concurrent_ms(self, method: str) -> float:
        """Median wall ms of the whole concurrent batch."""
        return statistics.median(self.concurrent[method]) * 1e3

    def per_call_us(self, method: str) -> float:
        """Median µs per request, one after another, parts that do not sleep."""
        return statistics.median(self.sequential[method]) * 1e6 / self.settings.requests

    @property
    def throughput_ratio(self) -> float:
        """aask's requests/s over the hand-written calls' (hand wall / aask wall)."""
        return self.concurrent_ms("hand") / self.concurrent_ms("aask")

    @property
    def per_call_ratio(self) -> float:
        """The same for one request at a time, parts that do not sleep."""
        return self.per_call_us("hand") / self.per_call_us("aask")


async def measure(settings: Settings) -> Result:
    """Warm-up rounds, then `settings.rounds` rounds of the four cells, order rotating."""
    sleeping = build(settings, delay=settings.delay)
    quick = build(settings, delay=0.0)
    cells: list[tuple[str, str, Batch]] = [
        ("concurrent", "aask", sleeping["aask"][0]),
        ("concurrent", "hand", sleeping["hand"][0]),
        ("sequential", "aask", quick["aask"][1]),
        ("sequential", "hand", quick["hand"][1]),
    ]
    want = [expected(x) for x in range(settings.requests)]
    agree = True
    for _ in range(settings.warmup):
        for _, _, batch in cells:
            agree &= await batch() == want
    times: dict[str, dict[str, list[float]]] = {"concurrent": {}, "sequential": {}}
    with gc_paused():
        for r in range(settings.rounds):
            shift = r % len(cells)
            for kind, method, batch in [*cells[shift:], *cells[:shift]]:
                start = time.perf_counter()
                answers = await batch()
                elapsed = time.perf_counter() - start
                agree &= answers == want
                times[kind].setdefault(method, []).append(elapsed)
    return Result(settings, times["concurrent"], times["sequential"], agree)


# -- report --------------------------------------------------------------------


def _spread_ms(samples: Sequence[float]) -> str:
    return f"{min(samples) * 1e3:.1f}..{max(samples) * 1e3:.1f}"


def format_result(result: Result) -> str:
    """Both tables, the goal and whether every answer was right."""
    s = result.settings
    n = s.requests
    labels = {
        "aask": f"aask, System(threads={s.threads})",
        "hand": f"to_thread.run_sync, CapacityLimiter({s.threads})",
    }
    rows = []
    for m in ("aask", "hand"):
        ms = result.concurrent_ms(m)
        rows.append(
            [labels[m], f"{ms:.1f}", _spread_ms(result.concurrent[m]), f"{n / ms * 1e3:.0f}"]
        )
    concurrent = table(["how", "median ms", "range ms", "requests/s"], rows)
    rows = []
    for m in ("aask", "hand"):
        us = result.per_call_us(m)
        added = us - result.per_call_us("hand")
        rows.append([labels[m], f"{us:.1f}", f"{added:+.1f}" if m == "aask" else ""])
    sequential = table(["how", "µs/request", "aask adds µs"], rows)
    ratio = result.throughput_ratio
    verdict = "met" if ratio >= THROUGHPUT_GOAL else "MISSED"
    return "\n".join(
        [
            f"{n} requests at once in one task group; fetch sleeps {s.delay * 1e3:g} ms "
            f"(2 blocking parts and a rule per request), {s.rounds} rounds:",
            concurrent,
            f"throughput, hand-written wall / aask wall: {ratio:.3f} "
            f"(informational goal >= {THROUGHPUT_GOAL:g}: {verdict})",
            "",
            f"{n} requests one after another, parts that do not sleep:",
            sequential,
            f"per call, hand-written / aask: {result.per_call_ratio:.3f}",
            "",
            f"every answer right: {'yes' if result.agree else 'NO'}",
        ]
    )


def to_json(result: Result) -> str:
    """The figures as JSON: medians in ms and µs, every round's seconds, the ratios."""
    return json.dumps(
        {
            "benchmark": "blocking_calls",
            "python": platform.python_version(),
            "solvi": solvi.__file__,
            "settings": attrs.asdict(result.settings),
            "concurrent": {
                "requests": result.settings.requests,
                "median_ms": {m: result.concurrent_ms(m) for m in result.concurrent},
                "seconds": result.concurrent,
                "throughput_ratio": result.throughput_ratio,
            },
            "sequential": {
                "requests": result.settings.requests,
                "us_per_call": {m: result.per_call_us(m) for m in result.sequential},
                "seconds": result.sequential,
                "per_call_ratio": result.per_call_ratio,
            },
            "agree": result.agree,
        }
    )


def main(argv: Sequence[str] | None = None, *, settings: Settings | None = None) -> int:
    """Run the benchmark and print its tables (or JSON); 1 if an answer was wrong.

    `settings` replaces the sizes and repetitions `--quick` would choose (for tests).
    """
    parser = argparse.ArgumentParser(
        description="Blocking sync parts under aask, against hand-written to_thread calls."
    )
    parser.add_argument("--quick", action="store_true", help="few repetitions (CI smoke run)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if settings is None:
        settings = Settings.for_mode(quick=args.quick)
    started = time.perf_counter()
    result = asyncio.run(measure(settings))
    if args.json:
        print(to_json(result))
    else:
        print(
            f"solvi blocking calls benchmark: Python {platform.python_version()}, asyncio, "
            f"anyio {metadata.version('anyio')}" + (" (quick)" if args.quick else "")
        )
        print()
        print(format_result(result))
        print(f"\n({time.perf_counter() - started:.1f} s)")
    if not result.agree:
        print("ERROR: some request got a wrong answer", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
