"""Parity and mean-payoff solvers on seeded random games and crafted families.

Sections, in the order they print:

1. Growth: ``even_wins`` and Karp on random games of growing size, with brute force where
   it finishes; per size, the time of each solver and the growth rate (the slope of log
   time against log size between rows: 1 means linear, 2 quadratic).
2. Parity at scale: the solvers (Zielonka, priority promotion, tangle learning, recursive
   tangle learning, ``auto``) against the previous recursive Zielonka (kept here as the
   reference), on random games (out-degree 1-2, as many priorities as vertices) and on
   crafted families (the "core" counter of Benerecetti et al., a ladder, a Jurdzinski-style
   layered game and Jurdzinski's game as PGSolver defines it, two binary counters and van
   Dijk's two counters as Oink's ``tc`` writes them, and Friedmann's recursive ladder as
   PGSolver defines it), plus any PGSolver files given with ``--extra``. Every solution is
   checked with the certificate checker (as ``--verify`` does). When the ``OINK`` environment
   variable names a locally built Oink binary, each game is also written to a temporary
   PGSolver file and solved by Oink, whose own "total solving time" is read; ratios are
   printed. Oink is never downloaded or shipped.
3. ``--section scan`` (needs ``OINK``): each crafted family grown until Oink's Zielonka
   needs a second, with ``auto`` timed at every size.
4. ``--section seeds`` (needs ``OINK``): ``auto``, Zielonka and recursive tangle learning
   on random games of one size (``--seeds-size``, 100,000 by default) from several seeds
   (``--seeds``), each against Oink's best, so that one lucky or unlucky game does not
   stand for all.

``--quick`` runs small sizes only and finishes in well under 30 s.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterable
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

from grounded_decision.statechart import (
    NO_LIMITS,
    GameGraph,
    Limits,
    ParityUnsolved,
    check_certificate,
    even_wins,
    fast_solver_available,
    max_mean_payoff,
    read_pgsolver,
    read_solution,
    solve_parity,
    write_pgsolver,
)

# -- Shared: sizes, generators of section 1, brute force, timing ---------------------------

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


# -- Section 1: growth of even_wins and Karp ----------------------------------------------


def growth_section(*, quick: bool, seed: int, karp_max: int) -> int:
    """Section 1: even_wins and Karp on random games of growing size; one row per size."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    rng = random.Random(seed)
    print("== growth: even_wins and Karp on random games (out-degree 1-3, 8 priorities)")
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
        z_time, wins = timed(partial(even_wins, game, limits))
        if n <= karp_max:
            k_time, best = timed(partial(max_mean_payoff, game, limits))
            karp_cell = f"{k_time:9.3f}"
            k_growth = _slope(prev_k, n, k_time)
            prev_k = (n, k_time)
        else:
            best, karp_cell, k_growth = None, f"{'skipped':>9}", "-"
        if n <= BRUTE_MAX_VERTICES:
            b_time, brute_wins = timed(partial(brute_parity, game))
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


# -- Section 2: parity at scale -----------------------------------------------------------

# Generators. Each returns a GameGraph with every vertex given at least one successor.


def _game(
    priority: list[int], owner: list[int], succ: list[list[int]], names: Iterable[str] | None = None
) -> GameGraph:
    """Build a GameGraph from plain lists (events name the successor, weights are 0)."""
    n = len(priority)
    return GameGraph(
        names=tuple(names) if names is not None else tuple(f"v{v}" for v in range(n)),
        start=0,
        edges=tuple(tuple((w, f"to {w}", 0.0) for w in dict.fromkeys(out)) for out in succ),
        priority=tuple(priority),
        owner=tuple(owner),
    )


def random_parity_game(n: int, rng: random.Random, *, priorities: int | None = None) -> GameGraph:
    """Random owners, out-degree 1 or 2 to uniform targets, priorities in ``0..priorities-1``.

    ``priorities`` defaults to ``n`` (as many priorities as vertices, the hard case for
    Zielonka's nesting).
    """
    top = n if priorities is None else priorities
    return _game(
        [rng.randrange(top) for _ in range(n)],
        [rng.randint(0, 1) for _ in range(n)],
        [[rng.randrange(n) for _ in range(rng.randint(1, 2))] for _ in range(n)],
    )


def counter_core(k: int) -> GameGraph:
    """The "core" family of Benerecetti, Dell'Erba and Mogavero: 2k+1 linked three-vertex pieces.

    Piece i has a gate of priority m+1+i and a two-vertex loop of priority i owned by the
    two players in turn; neighbouring pieces are chained both ways. It drives Zielonka's
    recursion to exponentially many calls.
    """
    m = 2 * k
    priority: list[int] = []
    owner: list[int] = []
    succ: list[list[int]] = []
    for i in range(m + 1):
        loop, back = 3 * i + 1, 3 * i + 2
        priority += [m + 1 + i, i, i]
        owner += [i % 2, i % 2, 1 - i % 2]
        succ += [[loop], [back], [loop, back]]
        if i < m:
            succ[back].append(3 * (i + 1))
    for i in range(m):
        succ[3 * (i + 1) + 1].append(3 * i)
    return _game(priority, owner, succ)


def ladder(n: int) -> GameGraph:
    """A ladder of n rungs: an Even vertex of priority 2i+2 and an Odd one of priority 2i+1.

    Both vertices of a rung move to both of the next; the last rung leads back to the first.
    """
    priority: list[int] = []
    owner: list[int] = []
    succ: list[list[int]] = []
    for i in range(n):
        nxt = 2 * ((i + 1) % n)
        priority += [2 * i + 2, 2 * i + 1]
        owner += [0, 1]
        succ += [[nxt, nxt + 1], [nxt, nxt + 1]]
    return _game(priority, owner, succ)


def jurdzinski(levels: int, width: int) -> GameGraph:
    """A layered game after Jurdzinski's lower bound for small progress measures.

    Level j is a path of width Odd vertices of priority 2j+1 between width+1 Even vertices
    of priority 2j; Even vertices may drop one level, Odd vertices may climb back to the
    top level's first vertex, so long chains of odd priorities have to be counted down.
    """
    priority: list[int] = []
    owner: list[int] = []
    succ: list[list[int]] = []
    row = 2 * width + 1

    def at(level: int, column: int) -> int:
        return level * row + column

    for level in range(levels):
        for column in range(row):
            even = column % 2 == 0
            priority.append(2 * level if even else 2 * level + 1)
            owner.append(0 if even else 1)
            out = []
            if column + 1 < row:
                out.append(at(level, column + 1))
            if column > 0:
                out.append(at(level, column - 1))
            if even and level + 1 < levels:
                out.append(at(level + 1, column))
            if not even:
                out.append(at(levels - 1, 0))
            succ.append(out)
    return _game(priority, owner, succ)


def jurdzinski_pgsolver(height: int, width: int) -> GameGraph:
    """Jurdzinski's game as PGSolver's ``jurdzinskigame h w`` defines it (max-parity).

    Row 0 alternates Even vertices ``L(0,w)`` of priority 0 and Odd ones ``R(0,w)`` of
    priority 1; every higher row ``h`` has Odd vertices ``L(h,w)`` and Even ones ``R(h,w)``
    of priority ``2h`` and, above each ``L``, an Even vertex ``A(h,w)`` of priority
    ``2h+1``. Neighbours along a row are linked, an ``L`` of a higher row may step up to its
    ``A``, which comes back to the ``R``, and the ``R`` vertices of row 0 and of the higher
    rows move to each other. Unlike ``jurdzinski`` above, it is hard for Zielonka's
    algorithm: Oink's needs a second at about 60 x 60 (10,800 vertices). Built from the
    start ``L(0,0)`` in breadth-first order, as PGSolver numbers it.
    """
    index: dict[tuple[str, int, int], int] = {}
    found: list[tuple[str, int, int]] = []

    def at(node: tuple[str, int, int]) -> int:
        if node not in index:
            index[node] = len(found)
            found.append(node)
        return index[node]

    def moves(kind: str, h: int, w: int) -> list[tuple[str, int, int]]:
        last = w >= width
        if kind == "A":
            return [("R", h, w)]
        if kind == "R" and h == 0:
            return [("L", 0, w), ("L", 0, w + 1)] + [("R", up, w) for up in range(1, height)]
        if kind == "R":
            return [("L", h, w), ("L", h, w + 1), ("R", 0, w)]
        if w == 0:
            return [("R", 0, 0)] if h == 0 else [("A", h, 0), ("R", h, 0)]
        if last:
            return [("R", h, w - 1)]
        if h == 0:
            return [("R", 0, w - 1), ("R", 0, w)]
        return [("R", h, w - 1), ("A", h, w), ("R", h, w)]

    at(("L", 0, 0))
    succ: list[list[int]] = []
    while len(succ) < len(found):
        succ.append([at(node) for node in moves(*found[len(succ)])])
    priority: list[int] = []
    owner: list[int] = []
    for kind, h, _ in found:
        if h == 0:
            priority.append(0 if kind == "L" else 1)
            owner.append(0 if kind == "L" else 1)
        else:
            priority.append(2 * h + 1 if kind == "A" else 2 * h)
            owner.append(1 if kind == "L" else 0)
    names = (f"{kind}({h},{w})" for kind, h, w in found)
    return _game(priority, owner, succ, names)


def recursive_ladder(n: int) -> GameGraph:
    """Friedmann's recursive ladder as PGSolver's ``recursiveladder n`` defines it (5n vertices).

    Built against Zielonka's recursive algorithm: Oink's Zielonka needs about a second at
    n = 31 (155 vertices) and about ten times longer every five rungs. Rung ``i`` of the
    ``n + 1`` (vertices ``5i - 2`` to ``5i + 2``; the first keeps only its last three, the
    last only its first two) is player ``i % 2``'s, its owners alternating: two vertices of
    the lowest priority of the other parity, ``1 - i % 2``, and three of priorities
    ``3i + 5``, ``3i + 4`` and ``3i + 3``, linked to each other and to the rungs above and
    below it.
    """
    priority: list[int] = []
    owner: list[int] = []
    succ: list[list[int]] = []
    for i in range(n + 1):
        base, side = 5 * i - 2, i % 2
        # priority, 1 where the rung's opponent owns it, moves as offsets from `base`
        rung: list[tuple[int, int, list[int]]] = []
        if i > 0:
            rung += [(1 - side, 1, [-2, 1]), (1 - side, 0, [0] if i == n else [0, 2])]
        if i < n:
            top = 3 * i + 5
            back = [-2] if i > 0 else []
            up = [8] if i < n - 1 else []
            rung += [(top, 1, [6, 3]), (top - 1, 0, [*back, *up, 4]), (top - 2, 1, [3, 6])]
        for value, other, moves in rung:
            priority.append(value)
            owner.append((side + other) % 2)
            succ.append([base + m for m in moves])
    return _game(priority, owner, succ)


def two_counters(k: int) -> GameGraph:
    """Two k-bit binary counters, one per player, whose bits distract each other.

    Each bit is a high vertex of the bit's player, a low "tangle" vertex and an input of
    the opponent; the high vertex passes to the next lower bit of the same counter, the
    tangle vertex may jump to the inputs of the other counter's higher bits.
    """
    priority: list[int] = []
    owner: list[int] = []
    succ: list[list[int]] = []
    top = 4 * k + 4
    high: dict[tuple[int, int], int] = {}
    entry: dict[tuple[int, int], int] = {}
    for i in range(k):
        for player in (0, 1):
            base = len(priority)
            high[player, i], entry[player, i] = base, base + 2
            hi = top - 2 * i - (2 if player == 0 else 1)
            priority += [hi, 2 + player, hi - 2 * k - 1]
            owner += [player, 1 - player, 1 - player]
            succ += [[], [base], [base + 1]]
    for (player, i), h in high.items():
        succ[h].append(entry[player, (i + k - 1) % k])
        tangle = h + 1
        for j in range(k):
            if j >= i:
                succ[tangle].append(entry[1 - player, j])
    return _game(priority, owner, succ)


def _array_game(owner: Any, priority: Any, degree: Any, targets: Any) -> Any:
    """An ArrayGame from per-vertex out-degrees and the successors, vertex after vertex."""
    import numpy as np

    from grounded_decision.statechart.arrays import ArrayGame

    offsets = np.zeros(len(degree) + 1, dtype=np.int64)
    np.cumsum(degree, out=offsets[1:])
    return ArrayGame(owner, priority, offsets, targets)


def ladder_arrays(n: int) -> Any:
    """``ladder(n)`` built as an ArrayGame with numpy (the same arrays, in a fraction of the
    time and memory, for the sizes where Oink's Zielonka needs a second)."""
    import numpy as np

    v = np.arange(2 * n, dtype=np.int64)
    rung = v // 2
    first = 2 * ((rung + 1) % n)
    targets = np.empty(4 * n, dtype=np.int64)
    targets[0::2] = first
    targets[1::2] = first + 1
    priority = np.where(v % 2 == 0, 2 * rung + 2, 2 * rung + 1)
    return _array_game(v % 2, priority, np.full(2 * n, 2), targets)


def jurdzinski_arrays(levels: int, width: int) -> Any:
    """``jurdzinski(levels, width)`` built as an ArrayGame with numpy.

    Every vertex has four move slots, in the order the list generator appends them (right,
    left, down for Even, back to the last level's first vertex for Odd); the slots a vertex
    lacks are dropped, as is the jump of the last level's column 1, whose left neighbour is
    the same vertex (a GameGraph keeps a repeated move once).
    """
    import numpy as np

    row = 2 * width + 1
    v = np.arange(levels * row, dtype=np.int64)
    level, column = v // row, v % row
    even = column % 2 == 0
    corner = (levels - 1) * row
    slots = np.stack([v + 1, v - 1, v + row, np.full_like(v, corner)], axis=1)
    valid = np.stack(
        [
            column + 1 < row,
            column > 0,
            even & (level + 1 < levels),
            ~even & ~((level == levels - 1) & (column == 1)),
        ],
        axis=1,
    )
    priority = np.where(even, 2 * level, 2 * level + 1)
    return _array_game(np.where(even, 0, 1), priority, valid.sum(axis=1), slots[valid])


def two_counters_arrays(k: int) -> Any:
    """``two_counters(k)`` built as an ArrayGame with numpy."""
    import numpy as np

    top = 4 * k + 4
    n = 6 * k
    owner = np.empty(n, dtype=np.int64)
    priority = np.empty(n, dtype=np.int64)
    degree = np.empty(n, dtype=np.int64)
    pieces = []
    for i in range(k):
        for player in (0, 1):
            base = 3 * (2 * i + player)
            hi = top - 2 * i - (2 if player == 0 else 1)
            priority[base : base + 3] = (hi, 2 + player, hi - 2 * k - 1)
            owner[base : base + 3] = (player, 1 - player, 1 - player)
            higher = 3 * (2 * np.arange(i, k) + 1 - player) + 2  # the other counter's inputs
            degree[base : base + 3] = (1, 1 + len(higher), 1)
            previous = 3 * (2 * ((i + k - 1) % k) + player) + 2
            pieces += [[previous], [base], higher, [base + 1]]
    return _array_game(owner, priority, degree, np.concatenate(pieces))


ARRAY_FAMILIES: dict[str, Callable[[int], Any]] = {
    "ladder": ladder_arrays,
    "jurdzinski": lambda size: jurdzinski_arrays(size, size),
    "two_counters": two_counters_arrays,
}
"""The near-linear families of ``SCAN_FAMILIES`` built straight as ArrayGames, which the
scan solves, checks and hands to Oink without a GameGraph when numba is installed: at the
sizes where Oink's Zielonka needs a second (tens of millions of vertices and edges) a
GameGraph alone takes minutes and gigabytes to build."""


def van_dijk_counters(n: int) -> GameGraph:
    """Van Dijk's two n-bit counters ("A parity game tale of two counters", 2019).

    The game Oink's ``tc N`` writes, built here from the paper's construction (vertex names
    as Oink gives them, so the two can be compared vertex by vertex). Bit ``i`` of player
    ``p`` has a high vertex ``H`` of ``p`` (a high priority of ``p``'s parity, Even's bits
    above Odd's), an input ``L`` and a tangle vertex ``T`` of the opponent, a lane of ``i``
    selectors ``S`` of ``p``, each choosing between two exits ``A`` and ``B`` of the opponent
    that may leave to the inputs of bit ``j`` of ``p``'s own and of the other counter, and a
    distraction ``Z`` of ``p`` that may jump to the other counter's higher inputs (Odd's to
    the same bit too). ``T`` returns to ``H`` or runs down the lane, ``H`` passes to its own
    counter's next lower input. Hard for Zielonka's algorithm, priority promotion and
    tangle learning alike: ``8n + 3n(n-1)`` vertices.
    """
    first = [[0] * n, [0] * n]
    size = 0
    for i in range(n):
        for player in (0, 1):
            first[player][i] = size
            size += 4 + 3 * i
    priority = [0] * size
    owner = [0] * size
    names = [""] * size
    succ: list[list[int]] = [[] for _ in range(size)]

    def gate(player: int, bit: int) -> int:
        return first[player][bit] + 2

    top = n * n + 9 * n
    for i in range(n):
        for player in (0, 1):
            c = first[player][i]
            other = 1 - player
            tag = ("Even-", "Odd-")[player] + str(i)
            low = 2 - player
            high, tangle, entry = c, c + 1, c + 2
            for v, pr, who, name in (
                (high, top - 2 + player, player, "H"),
                (tangle, low, other, "T"),
                (entry, top - 2 * n - 3 + player, other, "L"),
            ):
                priority[v], owner[v], names[v] = pr, who, f"{tag}-{name}"
            succ[tangle] = [high, c + 3]
            succ[entry] = [tangle]
            for j in range(i):
                d = c + 3 + 3 * j
                for v, who, name in ((d, player, "S"), (d + 1, other, "A"), (d + 2, other, "B")):
                    priority[v], owner[v], names[v] = low - 1, who, f"{tag}-{name}-{j}"
                succ[d] = [d + 1, d + 2]
                succ[d + 1] = [d + 3, gate(player, j)]
                succ[d + 2] = [d + 3, gate(other, j)]
            succ[high] = [gate(player, (i + n - 1) % n)]
            z = c + 3 + 3 * i
            priority[z], owner[z], names[z] = low - 1, player, f"{tag}-Z"
            succ[z] = [tangle] + [gate(other, j) for j in range(i + 1 - player, n)]
        top -= 2
    return _game(priority, owner, succ, names)


# The previous implementation, kept as the reference: recursive Zielonka over frozensets,
# rescanning each subgame for its top priority and rebuilding move counters per attractor.


def _old_attractor(
    game: GameGraph, universe: frozenset[int], target: Iterable[int], player: int
) -> frozenset[int]:
    """The previous attractor: counters rebuilt for every opponent vertex of the universe."""
    attracted = {v for v in target if v in universe}
    remaining: dict[int, int] = {}
    queue = deque(attracted)
    for v in universe:
        if v in attracted or game.owner[v] == player:
            continue
        count = sum(1 for w in game.successors[v] if w in universe)
        if count == 0:
            attracted.add(v)
            queue.append(v)
        else:
            remaining[v] = count
    while queue:
        w = queue.popleft()
        for v in game.predecessors[w]:
            if v in attracted or v not in universe:
                continue
            if game.owner[v] == player:
                attracted.add(v)
                queue.append(v)
            else:
                remaining[v] -= 1
                if remaining[v] == 0:
                    attracted.add(v)
                    queue.append(v)
    return frozenset(attracted)


def old_zielonka(game: GameGraph) -> tuple[frozenset[int], frozenset[int]]:
    """The previous recursive Zielonka (second call folded into a loop)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(game) + 1000))

    def solve(vertices: frozenset[int]) -> tuple[frozenset[int], frozenset[int]]:
        won: list[set[int]] = [set(), set()]
        while vertices:
            top_priority = max(game.priority[v] for v in vertices)
            top = [v for v in vertices if game.priority[v] == top_priority]
            favoured = top_priority % 2
            other = 1 - favoured
            pulled = _old_attractor(game, vertices, top, favoured)
            sub = solve(vertices - pulled)
            if not sub[other]:
                won[favoured] |= vertices
                break
            lost = _old_attractor(game, vertices, sub[other], other)
            won[other] |= lost
            vertices = vertices - lost
        return frozenset(won[0]), frozenset(won[1])

    return solve(frozenset(range(len(game))))


def _run_old(game: GameGraph, timeout: float) -> tuple[float | None, tuple[int, ...] | None]:
    """Time the previous Zielonka in a child process, so a slow game can be cut off."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "game.pg"
        path.write_text(write_pgsolver(game), encoding="utf-8")
        code = (
            "import sys, time; sys.path.insert(0, sys.argv[1]); import games;"
            " from grounded_decision.statechart import read_pgsolver;"
            " g = read_pgsolver(open(sys.argv[2]).read()); t = time.perf_counter();"
            " even, odd = games.old_zielonka(g); t = time.perf_counter() - t;"
            " print(t); print(''.join('0' if v in even else '1' for v in range(len(g))))"
        )
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, str(Path(__file__).resolve().parent), str(path)],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return None, None
        seconds, winners = done.stdout.split()
        return float(seconds), tuple(int(c) for c in winners)


OINK_BEST = ("--tl", "--rtl", "--npp", "--rr", "--zlk")
"""Oink solvers tried for its best time: tangle learning (its default) and recursive tangle
learning, priority promotion (the authors' NPP and RR) and its optimised Zielonka."""


def _run_oink(
    binary: str, game: GameGraph | Any, flag: str, timeout: float, expected: Any
) -> float | None:
    """Oink's own solving time (preprocessing included, parsing not), None past the timeout.

    Oink is called as ``OINK FLAG game.pg solution.sol``; its winners must equal ours
    (``expected``: a tuple for a GameGraph, an array for an ArrayGame).
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "game.pg"
        out = Path(folder) / "game.sol"
        path.write_text(write_pgsolver(game), encoding="utf-8")
        try:
            done = subprocess.run(
                [binary, flag, str(path), str(out)],
                capture_output=True,
                text=True,
                timeout=timeout,
                check=True,
            )
        except subprocess.TimeoutExpired:
            return None
        if isinstance(game, GameGraph):
            winners, _ = read_solution(out.read_text(encoding="utf-8"), len(game))
            agrees = tuple(winners) == expected
        else:
            agrees = bool((_solution_winners(out, len(game)) == expected).all())
        if not agrees:
            msg = f"Oink {flag} disagrees with the solvers here"
            raise RuntimeError(msg)
        found = re.search(r"total solving time: ([0-9.e+-]+)", done.stdout + done.stderr)
        if found is None:
            msg = "Oink printed no 'total solving time'; is OINK an Oink binary?"
            raise RuntimeError(msg)
        return float(found.group(1))


def _solution_winners(path: Path, n: int) -> Any:
    """The winners of a solution file Oink wrote (``v winner [move];`` lines) as an array,
    -1 for a vertex it left out: read by compiled code, for files of millions of lines."""
    import numpy as np

    return _solution_parser()(np.fromfile(path, dtype=np.uint8), n)


@functools.cache
def _solution_parser() -> Callable[[Any, int], Any]:
    import numba
    import numpy as np

    @numba.njit(cache=False)
    def parse(data: Any, n: int) -> Any:
        winners = np.full(n, -1, dtype=np.int8)
        i = 0
        while i < len(data) and data[i] != 10:  # the paritysol line
            i += 1
        i += 1
        while i < len(data):
            v = 0
            digits = 0
            while i < len(data) and 48 <= data[i] <= 57:
                v = 10 * v + data[i] - 48
                digits += 1
                i += 1
            if digits and i + 1 < len(data) and 0 <= v < n:
                winners[v] = data[i + 1] - 48
            while i < len(data) and data[i] != 10:
                i += 1
            i += 1
        return winners

    return parse  # type: ignore[no-any-return]


def _oink_best(
    binary: str, game: GameGraph, timeout: float, expected: tuple[int, ...]
) -> tuple[float | None, str]:
    """The fastest of ``OINK_BEST`` on the game and its flag."""
    best: tuple[float | None, str] = (None, "-")
    for flag in OINK_BEST:
        seconds = _run_oink(binary, game, flag, timeout, expected)
        if seconds is not None and (best[0] is None or seconds < best[0]):
            best = (seconds, flag.lstrip("-"))
    return best


def _cell(seconds: float | None) -> str:
    return f"{'>limit':>9}" if seconds is None else f"{seconds:9.3f}"


def _fine(seconds: float | None) -> str:
    return f"{'>limit':>9}" if seconds is None else f"{seconds:9.5f}"


def _ratio(slow: float | None, fast: float | None) -> str:
    if slow is None or fast is None or fast <= 0:
        return f"{'-':>7}"
    return f"{slow / fast:7.1f}"


def parity_cases(quick: bool, seed: int) -> list[tuple[str, GameGraph, bool]]:
    """The games of section 2: (label, game, whether the old solver is run on it)."""
    rng = random.Random(seed)
    randoms: tuple[int, ...]
    if quick:
        randoms = (1_000, 5_000)
        crafted = [
            ("counter_core k=6", counter_core(6), True),
            ("ladder n=500", ladder(500), True),
            ("jurdzinski 6x6", jurdzinski(6, 6), True),
            ("jurdzinski_pgs 6x6", jurdzinski_pgsolver(6, 6), True),
            ("two_counters k=6", two_counters(6), True),
            ("tc 6", van_dijk_counters(6), True),
            ("recursive_ladder 8", recursive_ladder(8), True),
        ]
    else:
        randoms = (1_000, 5_000, 20_000, 20_000, 100_000)
        crafted = [
            ("counter_core k=8", counter_core(8), True),
            ("counter_core k=14", counter_core(14), False),
            ("counter_core k=30", counter_core(30), False),
            ("ladder n=5000", ladder(5_000), False),
            ("jurdzinski 10x10", jurdzinski(10, 10), True),
            ("jurdzinski 40x40", jurdzinski(40, 40), False),
            ("jurdzinski_pgs 10x10", jurdzinski_pgsolver(10, 10), True),
            ("jurdzinski_pgs 40x40", jurdzinski_pgsolver(40, 40), False),
            ("jurdzinski_pgs 60x60", jurdzinski_pgsolver(60, 60), False),
            ("two_counters k=8", two_counters(8), True),
            ("two_counters k=40", two_counters(40), False),
            ("tc 8", van_dijk_counters(8), True),
            ("tc 12", van_dijk_counters(12), False),
            ("tc 16", van_dijk_counters(16), False),
            ("tc 18", van_dijk_counters(18), False),
            ("recursive_ladder 10", recursive_ladder(10), True),
            ("recursive_ladder 32", recursive_ladder(32), False),
            ("recursive_ladder 100", recursive_ladder(100), False),
        ]
    cases = [(f"random n={n}", random_parity_game(n, rng), n <= 5_000) for n in randoms]
    return cases + crafted


SOLVERS = ("zielonka", "promotion", "tl", "rtl", "auto")
"""The algorithms timed in section 2, in column order."""


def _solve_all(
    game: GameGraph, timeout: float
) -> tuple[dict[str, float | None], set[tuple[int, ...]], bool]:
    """Time every solver of ``SOLVERS`` once; return times, the winners seen, all verified."""
    times: dict[str, float | None] = {}
    winners = set()
    verified = True
    for algorithm in SOLVERS:
        budget = Limits(None, None, None, parity_seconds=timeout)
        started = time.perf_counter()
        try:
            solution = solve_parity(game, budget, algorithm=algorithm)
        except ParityUnsolved:  # a spent time budget is a row entry, not a failure
            times[algorithm] = None
            continue
        times[algorithm] = time.perf_counter() - started
        winners.add(solution.winner)
        verified = verified and check_certificate(game, solution.winner, solution.strategy).valid
    return times, winners, verified


def parity_section(
    *, quick: bool, seed: int, old_timeout: float, extra: list[str] | None = None
) -> int:
    """Section 2: new solvers against the previous Zielonka (and Oink if OINK is set)."""
    oink = os.environ.get("OINK")
    print("== parity at scale: seconds per solve; 'old' is the previous recursive Zielonka")
    header = (
        f"{'game':22} {'vertices':>8} {'zielonka':>9} {'promotion':>9} {'tl':>9} {'rtl':>9}"
        f" {'auto':>9}"
        f" {'old':>9} {'old/auto':>8} {'verify':>7}"
    )
    if oink:
        header += f" {'oink best':>9} {'by':>5} {'oink zlk':>9} {'auto/best':>9} {'auto/zlk':>8}"
    print(header)
    print("-" * len(header))
    cases = parity_cases(quick, seed)
    for path in extra or []:
        game = read_pgsolver(Path(path).read_text(encoding="utf-8"))
        cases.append((Path(path).stem[:22], game, False))
    for label, game, run_old in cases:
        times, winners, verified = _solve_all(game, old_timeout)
        old_time: float | None = None
        if run_old:
            old_time, old_winner = _run_old(game, old_timeout)
            if old_winner is not None:
                winners.add(old_winner)
        if len(winners) > 1:
            print(f"solvers disagree on {label}", file=sys.stderr)
            return 1
        old_cell = _cell(old_time) if run_old else f"{'skipped':>9}"
        row = (
            f"{label:22} {len(game):8d}"
            + "".join(f" {_cell(times[name])}" for name in SOLVERS)
            + f" {old_cell} {_ratio(old_time, times['auto']):>8} {'yes' if verified else 'NO':>7}"
        )
        if oink and winners:
            (expected,) = winners
            best, flag = _oink_best(oink, game, old_timeout, expected)
            zlk = _run_oink(oink, game, "--zlk", old_timeout, expected)
            row += (
                f" {_fine(best)} {flag:>5} {_fine(zlk)} {_ratio(times['auto'], best):>9}"
                f" {_ratio(times['auto'], zlk):>8}"
            )
        print(row, flush=True)
        if not verified:
            print(f"certificate rejected on {label}", file=sys.stderr)
            return 1
    return 0


def _by_half(size: int) -> int:
    return size + max(1, size // 2)


def _by_one(size: int) -> int:
    return size + 1


def _by_five(size: int) -> int:
    return size + 5


SCAN_FAMILIES: dict[str, tuple[Callable[[int], GameGraph], int, Callable[[int], int]]] = {
    "ladder": (ladder, 5_000, _by_half),
    "jurdzinski": (lambda size: jurdzinski(size, size), 40, _by_half),
    "two_counters": (two_counters, 40, _by_half),
    "counter_core": (counter_core, 8, _by_one),
    "jurdzinski_pgs": (lambda size: jurdzinski_pgsolver(size, size), 40, _by_five),
    "tc": (van_dijk_counters, 12, _by_one),
    "recursive_ladder": (recursive_ladder, 20, _by_one),
}
"""Crafted families for ``--scan``: the generator of one size parameter, where to start and
how to grow (by half for the families Oink's Zielonka solves in linear time, by one for the
counters and the recursive ladder, which make it exponential, by five for PGSolver's
Jurdzinski game, on which its time grows as about the cube of the width)."""


def scan_section(*, families: list[str], max_size: int, max_array_size: int, timeout: float) -> int:
    """Section 3: grow each family until Oink's Zielonka needs a second, timing ``auto`` too.

    A family stops at the first size where Oink's Zielonka takes a second or more (or runs
    out of time), where its vertices and edges pass ``max_size`` (``max_array_size`` for
    the families built as ArrayGames), or where ``auto`` runs out of time. When the size
    cap stopped it, the last line gives, from the last two rows, the size (vertices plus
    edges) at which Oink's Zielonka would need a second if its time kept growing at the
    same rate.
    """
    oink = os.environ.get("OINK")
    if not oink:
        print("== scan: needs OINK (a locally built Oink binary) to find Oink's 1 s sizes")
        return 2
    print("== scan: crafted families grown until Oink's Zielonka needs 1 s (seconds per solve)")
    arrays = fast_solver_available()
    if arrays:
        print(f"   {', '.join(ARRAY_FAMILIES)}: built and solved as ArrayGames ('as' column)")
    header = (
        f"{'family':14} {'size':>7} {'vertices':>9} {'edges':>9} {'as':>6}"
        f" {'oink zlk':>9} {'auto':>9}"
    )
    print(header)
    print("-" * len(header))
    for family in families:
        make, size, grow = SCAN_FAMILIES[family]
        as_arrays = arrays and family in ARRAY_FAMILIES
        rows: list[tuple[int, float]] = []
        while True:
            game = ARRAY_FAMILIES[family](size) if as_arrays else make(size)
            edges = _edge_count(game)
            if len(game) + edges > (max_array_size if as_arrays else max_size):
                print(f"{family:14} {size:7d} {len(game):9d} {edges:9d} past --max-size")
                if len(rows) >= 2 and rows[-1][1] > rows[-2][1] > 0:
                    (n0, t0), (n1, t1) = rows[-2], rows[-1]
                    rate = math.log(t1 / t0) / math.log(n1 / n0)
                    needed = n1 * (1.0 / t1) ** (1 / rate)
                    print(
                        f"{family:14} Oink's Zielonka grows as size^{rate:.2f} here:"
                        f" 1 s near {needed:,.0f} vertices and edges"
                    )
                break
            auto_time, expected = _solve_auto_checked(game, timeout)
            zlk = None
            if expected is not None:
                zlk = _run_oink(oink, game, "--zlk", timeout, expected)
            kind = "arrays" if as_arrays else "graph"
            print(
                f"{family:14} {size:7d} {len(game):9d} {edges:9d} {kind:>6} {_fine(zlk)}"
                f" {_cell(auto_time)}",
                flush=True,
            )
            if auto_time is None or zlk is None or zlk >= 1.0:
                break
            rows.append((len(game) + edges, zlk))
            size = grow(size)
    return 0


def seeds_section(*, size: int, seeds: int, first: int, timeout: float) -> int:
    """Section 4: random games of one size from ``seeds`` seeds, ``auto`` against Oink's best.

    The goal (within 20x of Oink's best at 100,000 vertices) is judged per game, and the
    last line says on how many it holds.
    """
    oink = os.environ.get("OINK")
    if not oink:
        print("== seeds: needs OINK (a locally built Oink binary) for Oink's best times")
        return 2
    print(f"== seeds: random games of {size:,} vertices, seconds per solve")
    header = (
        f"{'seed':>10} {'zielonka':>9} {'rtl':>9} {'auto':>9} {'won by':>8}"
        f" {'oink best':>9} {'by':>5} {'auto/best':>9}"
    )
    print(header)
    print("-" * len(header))
    within = 0
    for seed in range(first, first + seeds):
        game = random_parity_game(size, random.Random(seed))
        row = f"{seed:10d}"
        answers = set()
        used = "-"
        auto_time: float | None = None
        for algorithm in ("zielonka", "rtl", "auto"):
            budget = Limits(None, None, None, parity_seconds=timeout)
            started = time.perf_counter()
            try:
                solution = solve_parity(game, budget, algorithm=algorithm)
            except ParityUnsolved:
                row += f" {_cell(None)}"
                continue
            seconds = time.perf_counter() - started
            row += f" {_cell(seconds)}"
            if not check_certificate(game, solution.winner, solution.strategy).valid:
                print(f"certificate rejected on seed {seed}", file=sys.stderr)
                return 1
            answers.add(solution.winner)
            if algorithm == "auto":
                auto_time, used = seconds, solution.algorithm
        if len(answers) != 1:
            print(f"solvers disagree or none finished on seed {seed}", file=sys.stderr)
            return 1
        (expected,) = answers
        best, flag = _oink_best(oink, game, timeout, expected)
        row += f" {used:>8} {_fine(best)} {flag:>5} {_ratio(auto_time, best):>9}"
        print(row, flush=True)
        if auto_time is not None and best is not None and auto_time <= 20 * best:
            within += 1
    print(f"auto within 20x of Oink's best on {within} of {seeds} games")
    return 0


def compiled_cases(
    *, quick: bool, size: int, seeds: int, first: int
) -> list[tuple[str, GameGraph]]:
    """The games of section 5: random ones from several seeds, and large near-linear ones."""
    if quick:
        return [
            (f"random {seed}", random_parity_game(30_000, random.Random(seed)))
            for seed in range(first, first + 2)
        ] + [("ladder n=20000", ladder(20_000))]
    cases = [
        (f"random {seed}", random_parity_game(size, random.Random(seed)))
        for seed in range(first, first + seeds)
    ]
    return [
        *cases,
        ("ladder n=300000", ladder(300_000)),
        ("jurdzinski 300x300", jurdzinski(300, 300)),
        ("two_counters k=800", two_counters(800)),
    ]


def compiled_section(*, quick: bool, size: int, seeds: int, first: int, timeout: float) -> int:
    """Section 5: the compiled Zielonka against the Python one, on the same peeled cores.

    Both are the refined Zielonka of ``_zielonka_fast``; the run checks that they give the
    same winners, strategies and units of work wherever the Python one finishes within
    ``timeout`` seconds, and prints each one's time per unit of work.
    """
    from grounded_decision.statechart._parity_core import Budget
    from grounded_decision.statechart._peel import peel
    from grounded_decision.statechart._zielonka_fast import ZielonkaSolver
    from grounded_decision.statechart._zielonka_native import NativeZielonka, available

    if not available():
        print("== compiled: numba is not installed (pip install 'solvi[fast]')")
        return 2
    print("== compiled Zielonka against the Python one, on the same cores")
    header = (
        f"{'game':22} {'core':>9} {'units':>12} {'python s':>9} {'compiled s':>10}"
        f" {'py ns/u':>8} {'c ns/u':>7} {'speed-up':>8} {'same':>5}"
    )
    print(header)
    print("-" * len(header))
    for label, game in compiled_cases(quick=quick, size=size, seeds=seeds, first=first):
        core = peel(game.successors, game.predecessors).core
        answers = []
        times: list[float | None] = []
        units = 0
        for solver in (ZielonkaSolver, NativeZielonka):
            budget = Budget(None, timeout)
            begun = time.process_time()
            try:
                run = solver(*_arrays(game), budget, core)
                deque(run.steps(), maxlen=0)
            except ParityUnsolved:
                times.append(None)
                continue
            times.append(time.process_time() - begun)
            answers.append((*run.answer(), budget.steps))
            units = budget.steps
        python, compiled = times
        same = "yes" if len(answers) == 2 and answers[0] == answers[1] else "-"
        if len(answers) == 2 and answers[0] != answers[1]:
            print(f"the two Zielonkas disagree on {label}", file=sys.stderr)
            return 1
        per_unit = ["-" if t is None else f"{t / units * 1e9:.0f}" for t in times]
        print(
            f"{label:22} {len(core):9,d} {units:12,d} {_cell(python)} {_cell(compiled):>10}"
            f" {per_unit[0]:>8} {per_unit[1]:>7} {_ratio(python, compiled):>8} {same:>5}",
            flush=True,
        )
    return 0


def load_compiled() -> float | None:
    """Load the compiled Zielonka (numba and its cached code); the seconds it took, or None
    without numba."""
    from grounded_decision.statechart._parity_core import Budget
    from grounded_decision.statechart._zielonka_native import NativeZielonka, available

    started = time.perf_counter()
    if not available():
        return None
    from grounded_decision.statechart.arrays import ArrayGame

    warm = random_parity_game(200, random.Random(0))
    deque(NativeZielonka(*_arrays(warm), Budget(None, None), None).steps(), maxlen=0)
    array_game = ArrayGame.from_game(warm)  # and the passes over games held in arrays
    solution = solve_parity(array_game, NO_LIMITS)
    check_certificate(array_game, solution.winner, solution.strategy)
    write_pgsolver(array_game)
    return time.perf_counter() - started


def _arrays(game: GameGraph) -> tuple[Any, Any, Any, Any]:
    return game.successors, game.predecessors, game.owner, game.priority


def _edge_count(game: GameGraph | Any) -> int:
    if isinstance(game, GameGraph):
        return sum(len(out) for out in game.successors)
    return len(game.targets)


def _solve_auto_checked(game: GameGraph | Any, timeout: float) -> tuple[float | None, Any]:
    """Time ``auto`` once and check its certificate: the seconds and the winners (a tuple,
    or an array for an ArrayGame), or ``(None, None)`` past the timeout."""
    budget = Limits(None, None, None, parity_seconds=timeout)
    started = time.perf_counter()
    try:
        solution = solve_parity(game, budget)
    except ParityUnsolved:
        return None, None
    seconds = time.perf_counter() - started
    if not check_certificate(game, solution.winner, solution.strategy).valid:
        msg = "certificate rejected in the scan"
        raise RuntimeError(msg)
    return seconds, solution.winner


# -- Command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the sections and print their tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only (smoke test)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--karp-max", type=int, default=10_000, help="largest size for Karp")
    parser.add_argument(
        "--section",
        choices=("all", "growth", "parity", "scan", "seeds", "compiled"),
        default="all",
        help=(
            "which tables ('all' is growth and parity; 'scan' and 'seeds' need OINK;"
            " 'compiled' needs numba)"
        ),
    )
    parser.add_argument(
        "--old-timeout", type=float, default=60.0, help="seconds before a slow solve is cut off"
    )
    parser.add_argument(
        "--extra",
        nargs="*",
        default=[],
        metavar="GAME.pg",
        help="more PGSolver games for section 2 (from another generator, say)",
    )
    parser.add_argument(
        "--families",
        nargs="*",
        default=list(SCAN_FAMILIES),
        choices=list(SCAN_FAMILIES),
        help="families for --section scan",
    )
    parser.add_argument(
        "--max-size",
        type=int,
        default=4_000_000,
        help="most vertices plus edges of a GameGraph --section scan builds",
    )
    parser.add_argument(
        "--max-array-size",
        type=int,
        default=150_000_000,
        help="most vertices plus edges of an ArrayGame --section scan builds",
    )
    parser.add_argument(
        "--seeds", type=int, default=6, help="random games of --section seeds (seeds from --seed)"
    )
    parser.add_argument(
        "--seeds-size", type=int, default=100_000, help="vertices of --section seeds' games"
    )
    args = parser.parse_args(argv)
    # Before anything is timed, so that no row pays for loading it.
    loaded = load_compiled()
    print(
        "compiled Zielonka: "
        + ("not installed" if loaded is None else f"loaded in {loaded:.2f} s, before timing")
    )
    if args.section == "seeds":
        return seeds_section(
            size=args.seeds_size, seeds=args.seeds, first=args.seed, timeout=args.old_timeout
        )
    if args.section == "compiled":
        return compiled_section(
            quick=args.quick,
            size=args.seeds_size,
            seeds=args.seeds,
            first=args.seed,
            timeout=args.old_timeout,
        )
    if args.section == "scan":
        return scan_section(
            families=args.families,
            max_size=args.max_size,
            max_array_size=args.max_array_size,
            timeout=args.old_timeout,
        )
    if args.section in ("all", "growth"):
        status = growth_section(quick=args.quick, seed=args.seed, karp_max=args.karp_max)
        if status:
            return status
        print()
    if args.section in ("all", "parity"):
        timeout = min(args.old_timeout, 5.0) if args.quick else args.old_timeout
        return parity_section(
            quick=args.quick, seed=args.seed, old_timeout=timeout, extra=args.extra
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
