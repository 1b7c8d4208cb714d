"""Zielonka and Karp on seeded random games of growing size, with brute force where it finishes.

Prints, per size, the time of each solver and the growth rate (the slope of log time against
log size between consecutive rows: 1 means linear, 2 quadratic). Solver limits are raised to
fit each game. ``--quick`` runs small sizes only and finishes in a few seconds.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import sys
import time
from collections.abc import Callable
from fractions import Fraction

from grounded_decision.statechart import (
    GameGraph,
    Limits,
    even_wins,
    max_mean_payoff,
)

FULL_SIZES = (10, 100, 300, 1_000, 3_000, 10_000)
QUICK_SIZES = (10, 100, 300, 1_000)
BRUTE_MAX_VERTICES = 10


def random_game(n: int, rng: random.Random, *, priorities: int = 8) -> GameGraph:
    """A total game: out-degree 1 to 3, random owners, priorities and integer weights."""
    edges = []
    for v in range(n):
        targets = rng.sample(range(n), k=min(n, rng.randint(1, 3)))
        edges.append(tuple((w, f"e{v}_{w}", float(rng.randint(-5, 5))) for w in targets))
    return GameGraph(
        names=tuple(f"v{i}" for i in range(n)),
        start=0,
        edges=tuple(edges),
        priority=tuple(rng.randrange(priorities) for _ in range(n)),
        owner=tuple(rng.randint(0, 1) for _ in range(n)),
    )


def brute_parity(game: GameGraph) -> tuple[bool, ...]:
    """Even wins from v iff some positional Even strategy beats every positional Odd one."""
    n = len(game)
    picks = [game.successors[v] for v in range(n)]
    even = [v for v in range(n) if game.owner[v] == 0]
    odd = [v for v in range(n) if game.owner[v] == 1]
    wins = [False] * n
    for even_pick in itertools.product(*(picks[v] for v in even)):
        holds = [True] * n
        for odd_pick in itertools.product(*(picks[v] for v in odd)):
            move = [0] * n
            for v, w in (*zip(even, even_pick, strict=True), *zip(odd, odd_pick, strict=True)):
                move[v] = w
            for v in range(n):
                if holds[v]:
                    seen: dict[int, int] = {}
                    path: list[int] = []
                    u = v
                    while u not in seen:
                        seen[u] = len(path)
                        path.append(u)
                        u = move[u]
                    if max(game.priority[x] for x in path[seen[u] :]) % 2:
                        holds[v] = False
        wins = [a or b for a, b in zip(wins, holds, strict=True)]
    return tuple(wins)


def brute_mean(game: GameGraph) -> float:
    """Best mean over simple cycles reachable from the start, by enumeration."""
    reach = {game.start}
    stack = [game.start]
    while stack:
        for w in game.successors[stack.pop()]:
            if w not in reach:
                reach.add(w)
                stack.append(w)
    best: Fraction | None = None

    def walk(root: int, v: int, path: set[int], total: Fraction, length: int) -> None:
        nonlocal best
        for w, _, weight in game.edges[v]:
            if w == root:
                mean = (total + Fraction(weight)) / (length + 1)
                best = mean if best is None or mean > best else best
            elif w > root and w in reach and w not in path:
                path.add(w)
                walk(root, w, path, total + Fraction(weight), length + 1)
                path.remove(w)

    for root in sorted(reach):
        walk(root, root, {root}, Fraction(0), 0)
    return float(best) if best is not None else 0.0


def timed(func: Callable[[], object]) -> tuple[float, object]:
    """Run ``func`` once and return (seconds, result)."""
    started = time.perf_counter()
    result = func()
    return time.perf_counter() - started, result


def _slope(prev: tuple[int, float] | None, n: int, seconds: float) -> str:
    if prev is None or prev[1] <= 0 or seconds <= 0:
        return "-"
    return f"{math.log(seconds / prev[1]) / math.log(n / prev[0]):.2f}"


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one row per size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--karp-max", type=int, default=10_000, help="largest size for Karp")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    rng = random.Random(args.seed)
    header = (
        f"{'vertices':>8} {'edges':>7} {'zielonka s':>11} {'growth':>6} {'karp s':>9}"
        f" {'growth':>6} {'brute force':>24}"
    )
    print(header)
    print("-" * len(header))
    prev_z: tuple[int, float] | None = None
    prev_k: tuple[int, float] | None = None
    for n in sizes:
        game = random_game(n, rng)
        edges = sum(len(out) for out in game.edges)
        limits = Limits(max_game_vertices=n, max_parity_depth=10 * n, max_karp_vertices=n)
        z_time, wins = timed(lambda g=game, lim=limits: even_wins(g, lim))
        if n <= args.karp_max:
            k_time, best = timed(lambda g=game, lim=limits: max_mean_payoff(g, lim))
            karp_cell = f"{k_time:9.3f}"
            k_growth = _slope(prev_k, n, k_time)
            prev_k = (n, k_time)
        else:
            best, karp_cell, k_growth = None, f"{'skipped':>9}", "-"
        if n <= BRUTE_MAX_VERTICES:
            b_time, brute_wins = timed(lambda g=game: brute_parity(g))
            mean_ok = isinstance(best, float) and abs(brute_mean(game) - best) < 1e-9
            agree = brute_wins == wins and mean_ok
            brute = f"{b_time:.3f} s, {'agrees' if agree else 'DISAGREES'}"
            if not agree:
                print(f"brute force disagrees on {n} vertices", file=sys.stderr)
                return 1
        else:
            brute = "does not finish"
        print(
            f"{n:8d} {edges:7d} {z_time:11.3f} {_slope(prev_z, n, z_time):>6}"
            f" {karp_cell} {k_growth:>6} {brute:>24}"
        )
        prev_z = (n, z_time)
    return 0


if __name__ == "__main__":
    sys.exit(main())
