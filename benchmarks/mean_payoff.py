"""Howard's mean cycle against Karp's, and the two-player solver, on seeded random games.

One row per size: the time of Howard (what ``max_mean_payoff`` uses; the best of
``--repeat`` runs, 3 by default, since the machine may be shared) and of Karp (the
reference, ``_karp_reference``, run once) on the same one-player graph, their ratio, whether
the two floats are identical, and the time of ``solve_mean_payoff`` (strategy improvement plus its
certificate) on the same graph with random owners. Weights are integers in [-5, 5], out-degree
1 to 3. ``--quick`` runs 10^2 and 10^3 vertices only, well under 30 s.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from typing import TypeVar

from grounded_decision.statechart import GameGraph, Limits, max_mean_payoff, solve_mean_payoff
from grounded_decision.statechart.mean_payoff import _karp_reference

FULL_SIZES = (100, 1_000, 3_000, 10_000)
QUICK_SIZES = (100, 1_000)
T = TypeVar("T")


def random_game(n: int, rng: random.Random, *, two_player: bool) -> GameGraph:
    """A total game: out-degree 1 to 3, integer weights in [-5, 5], owners random or all 0."""
    edges = tuple(
        tuple((rng.randrange(n), f"e{v}_{i}", float(rng.randint(-5, 5))) for i in range(k))
        for v, k in ((v, rng.randint(1, 3)) for v in range(n))
    )
    return GameGraph(
        names=tuple(f"v{i}" for i in range(n)),
        start=0,
        edges=edges,
        priority=(0,) * n,
        owner=tuple(rng.randint(0, 1) if two_player else 0 for _ in range(n)),
    )


def timed(func: Callable[[], T]) -> tuple[float, T]:
    """Run ``func`` once and return (wall-clock seconds, result)."""
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark, print one row per size; exit 1 if Howard and Karp ever differ."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10^2 and 10^3 vertices only")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--karp-max", type=int, default=10_000, help="largest size for Karp")
    parser.add_argument("--repeat", type=int, default=3, help="Howard runs per size (best kept)")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    rng = random.Random(args.seed)
    no_cap = Limits(max_game_vertices=None, max_karp_vertices=None)
    header = (
        f"{'vertices':>8} {'edges':>7} {'howard s':>9} {'karp s':>9} {'karp/howard':>11}"
        f" {'same float':>10} {'two-player s':>12} {'game value':>12}"
    )
    print(header)
    print("-" * len(header))
    for n in sizes:
        one = random_game(n, rng, two_player=False)
        two = random_game(n, rng, two_player=True)
        edges = sum(len(out) for out in one.edges)
        runs = [timed(lambda g=one: max_mean_payoff(g, no_cap)) for _ in range(max(1, args.repeat))]
        h_time = min(seconds for seconds, _ in runs)
        best = runs[0][1]
        if any(result != best for _, result in runs):
            print(f"Howard gave different answers on {n} vertices", file=sys.stderr)
            return 1
        if n <= args.karp_max:
            k_time, karp = timed(lambda g=one: _karp_reference(g))
            same = best == karp
            karp_cells = f"{k_time:9.3f} {k_time / h_time:11.1f} {'yes' if same else 'NO':>10}"
            if not same:
                print(f"Howard {best!r} and Karp {karp!r} differ on {n} vertices", file=sys.stderr)
                return 1
        else:
            karp_cells = f"{'skipped':>9} {'-':>11} {'-':>10}"
        t_time, solution = timed(lambda g=two: solve_mean_payoff(g, no_cap))
        print(f"{n:8d} {edges:7d} {h_time:9.3f} {karp_cells} {t_time:12.3f} {solution.value!s:>12}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
