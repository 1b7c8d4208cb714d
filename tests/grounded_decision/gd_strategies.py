"""Hypothesis strategies and brute-force reference solvers for grounded_decision tests."""

from __future__ import annotations

import itertools
from fractions import Fraction

import attrs
from hypothesis import strategies as st

from grounded_decision.policy import Act, Alt, Expr, Seq, Star, Symbol, Test
from grounded_decision.statechart import GameGraph

MAX_STRATEGY_PAIRS = 2048


@st.composite
def games(
    draw: st.DrawFn,
    *,
    max_vertices: int = 10,
    max_priority: int = 4,
    two_player: bool = True,
) -> GameGraph:
    """Draw a total game graph; out-degrees are trimmed so brute force stays small."""
    n = draw(st.integers(1, max_vertices))
    product = 1
    edges: list[tuple[tuple[int, str, float], ...]] = []
    for v in range(n):
        degree = draw(st.integers(1, 3))
        if product * degree > MAX_STRATEGY_PAIRS:
            degree = 1
        product *= degree
        targets = draw(st.lists(st.integers(0, n - 1), min_size=degree, max_size=degree))
        weights = draw(st.lists(st.integers(-5, 5), min_size=degree, max_size=degree))
        edges.append(
            tuple(
                (w, f"e{v}_{i}", float(x))
                for i, (w, x) in enumerate(zip(targets, weights, strict=True))
            )
        )
    priority = tuple(draw(st.lists(st.integers(0, max_priority), min_size=n, max_size=n)))
    if two_player:
        owner = tuple(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    else:
        owner = (0,) * n
    start = draw(st.integers(0, n - 1))
    return GameGraph(
        names=tuple(f"v{i}" for i in range(n)),
        start=start,
        edges=tuple(edges),
        priority=priority,
        owner=owner,
    )


def brute_even_wins(game: GameGraph) -> tuple[bool, ...]:
    """Enumerate positional strategies of both players and follow every resulting play.

    Even wins from v iff some Even strategy makes, against every Odd strategy, the largest
    priority on the cycle the play from v ends in even (parity games are positionally
    determined, so positional strategies suffice for both players).
    """
    n = len(game)
    choices = [sorted(set(game.successors[v])) for v in range(n)]
    even_vertices = [v for v in range(n) if game.owner[v] == 0]
    odd_vertices = [v for v in range(n) if game.owner[v] == 1]
    wins = [False] * n
    for even_pick in itertools.product(*(choices[v] for v in even_vertices)):
        holds = [True] * n
        for odd_pick in itertools.product(*(choices[v] for v in odd_vertices)):
            move = [0] * n
            for v, w in zip(even_vertices, even_pick, strict=True):
                move[v] = w
            for v, w in zip(odd_vertices, odd_pick, strict=True):
                move[v] = w
            for v in range(n):
                if holds[v] and _cycle_top(move, game.priority, v) % 2 == 1:
                    holds[v] = False
        for v in range(n):
            wins[v] = wins[v] or holds[v]
    return tuple(wins)


def _cycle_top(move: list[int], priority: tuple[int, ...], v: int) -> int:
    seen: dict[int, int] = {}
    path: list[int] = []
    while v not in seen:
        seen[v] = len(path)
        path.append(v)
        v = move[v]
    return max(priority[u] for u in path[seen[v] :])


def brute_cycle_means(game: GameGraph) -> list[Fraction]:
    """Return the exact mean weight of every simple cycle reachable from the start.

    Cycles are enumerated edge by edge from their smallest vertex, so parallel edges with
    different weights give different cycles.
    """
    reachable = {game.start}
    stack = [game.start]
    while stack:
        v = stack.pop()
        for w in game.successors[v]:
            if w not in reachable:
                reachable.add(w)
                stack.append(w)
    means: list[Fraction] = []

    def extend(root: int, v: int, on_path: set[int], total: Fraction, length: int) -> None:
        for w, _, weight in game.edges[v]:
            if w == root:
                means.append((total + Fraction(weight)) / (length + 1))
            elif w > root and w in reachable and w not in on_path:
                on_path.add(w)
                extend(root, w, on_path, total + Fraction(weight), length + 1)
                on_path.remove(w)

    for root in sorted(reachable):
        extend(root, root, {root}, Fraction(0), 0)
    return means


EVENTS = ("a", "b", "c")
ACTIONS = ("x", "y")


def policies(max_leaves: int = 8, *, guarded_acts: bool = False) -> st.SearchStrategy[Expr]:
    """Draw text-policy expressions over a small alphabet.

    With ``guarded_acts`` every ``act`` directly follows a ``test``, as runnable policies do.
    """
    acts: st.SearchStrategy[Expr] = st.sampled_from(ACTIONS).map(Act)
    if guarded_acts:
        acts = st.tuples(st.sampled_from(EVENTS), st.sampled_from(ACTIONS)).map(
            lambda pair: Seq((Test(pair[0]), Act(pair[1])))
        )
    leaves: st.SearchStrategy[Expr] = st.one_of(st.sampled_from(EVENTS).map(Test), acts)

    def extend(inner: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
        return st.one_of(
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: Seq(tuple(xs))),
            st.lists(inner, min_size=2, max_size=3).map(lambda xs: Alt(tuple(xs))),
            inner.map(Star),
        )

    return st.recursive(leaves, extend, max_leaves=max_leaves)


def symbols() -> st.SearchStrategy[Symbol]:
    """Draw one automaton symbol, including one no generated policy mentions."""
    return st.one_of(
        st.sampled_from((*EVENTS, "zz")).map(lambda e: ("test", e)),
        st.sampled_from(ACTIONS).map(lambda a: ("act", a)),
    )


class _Empty:
    """The empty language (a derivative that can no longer match)."""


class _Eps:
    """The language holding only the empty word."""


@attrs.frozen
class _Cat:
    """A derivative term: ``left`` then ``right`` (either may hold the terms below)."""

    left: object
    right: object


@attrs.frozen
class _Or:
    """A derivative term: ``left`` or ``right``."""

    left: object
    right: object


_EMPTY = _Empty()
_EPS = _Eps()
Rx = object


def nullable(r: Rx) -> bool:
    """Return whether the regular expression matches the empty word."""
    if r is _EPS or isinstance(r, Star):
        return True
    if r is _EMPTY or isinstance(r, Test | Act):
        return False
    if isinstance(r, _Cat):
        return nullable(r.left) and nullable(r.right)
    if isinstance(r, _Or):
        return nullable(r.left) or nullable(r.right)
    if isinstance(r, Seq):
        return all(nullable(p) for p in r.parts)
    assert isinstance(r, Alt)
    return any(nullable(o) for o in r.options)


def _cat(left: Rx, right: Rx) -> Rx:
    if left is _EMPTY or right is _EMPTY:
        return _EMPTY
    if left is _EPS:
        return right
    if right is _EPS:
        return left
    return _Cat(left, right)


def _alt(left: Rx, right: Rx) -> Rx:
    if left is _EMPTY:
        return right
    if right is _EMPTY:
        return left
    if left == right:
        return left
    return _Or(left, right)


def derive(r: Rx, symbol: Symbol) -> Rx:
    """Brzozowski derivative of ``r`` by one symbol."""
    if r is _EMPTY or r is _EPS:
        return _EMPTY
    if isinstance(r, Test):
        return _EPS if symbol == ("test", r.event) else _EMPTY
    if isinstance(r, Act):
        return _EPS if symbol == ("act", r.action) else _EMPTY
    if isinstance(r, Star):
        return _cat(derive(r.body, symbol), r)
    if isinstance(r, _Cat):
        first = _cat(derive(r.left, symbol), r.right)
        return _alt(first, derive(r.right, symbol)) if nullable(r.left) else first
    if isinstance(r, _Or):
        return _alt(derive(r.left, symbol), derive(r.right, symbol))
    if isinstance(r, Alt):
        out: Rx = _EMPTY
        for option in r.options:
            out = _alt(out, derive(option, symbol))
        return out
    assert isinstance(r, Seq)
    head, rest = r.parts[0], r.parts[1:]
    tail: Rx = rest[0] if len(rest) == 1 else (Seq(rest) if rest else _EPS)
    first = _cat(derive(head, symbol), tail)
    return _alt(first, derive(tail, symbol)) if nullable(head) else first


def matches(expr: Expr, word: list[Symbol]) -> bool:
    """Decide membership of ``word`` directly on the expression, by derivatives."""
    r: Rx = expr
    for symbol in word:
        r = derive(r, symbol)
    return nullable(r)


def is_empty(r: Rx) -> bool:
    """Return whether a derivative term denotes the empty language."""
    return r is _EMPTY
