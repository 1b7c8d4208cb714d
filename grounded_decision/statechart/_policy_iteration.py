"""Howard's policy iteration for the maximum cycle mean, in exact integer arithmetic.

Machinery behind ``mean_payoff`` (one player) and ``two_player`` (both players). Edge weights
are scaled to integers by a common denominator, so every comparison is exact and there is no
tolerance to tune. A vertex's gain is the reduced fraction ``P/Q`` (in scaled units) of the
cycle its policy ends in; its bias is kept multiplied by ``Q``, so biases stay integers too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from fractions import Fraction

import attrs

from grounded_decision.statechart.game import GameGraph, GameGraphError

__all__ = [
    "Evaluation",
    "IntGraph",
    "cycle_from",
    "cycle_mean",
    "cyclic_components",
    "evaluate",
    "heaviest",
    "howard_max",
    "improve",
    "int_graph",
    "lightest",
]

IntEdges = tuple[tuple[tuple[int, int], ...], ...]
"""Per vertex, its ``(successor, scaled weight)`` pairs, in the order of ``game.edges``."""


@attrs.frozen
class IntGraph:
    """A game's edges with weights scaled to integers: ``weight = scaled / scale``."""

    edges: IntEdges
    scale: int


def int_graph(game: GameGraph, sign: int = 1) -> IntGraph:
    """Scale ``sign * weight`` of every edge to an integer by the least common denominator.

    Float weights are dyadic fractions, so the common denominator is the largest one.

    Raises:
        GameGraphError: when a weight is infinite or not a number.
    """
    scale = 1
    for v, out in enumerate(game.edges):
        for w, event, weight in out:
            if not weight.is_integer():
                if not math.isfinite(weight):
                    msg = (
                        f"edge {v} -> {w} ({event!r}) has weight {weight}; mean payoff needs"
                        " finite weights, so give the transition and the state a finite payoff"
                    )
                    raise GameGraphError(msg)
                scale = max(scale, float(weight).as_integer_ratio()[1])
    if scale == 1:
        edges = tuple(tuple((w, sign * int(x)) for w, _, x in out) for out in game.edges)
    else:
        edges = tuple(
            tuple((w, sign * int(Fraction(x) * scale)) for w, _, x in out) for out in game.edges
        )
    return IntGraph(edges=edges, scale=scale)


def cyclic_components(game: GameGraph) -> list[list[int]]:
    """Return the strongly connected components reachable from the start that hold a cycle.

    Iterative Tarjan over ``game.successors``; a one-vertex component counts only with a
    self-loop. Every cycle reachable from the start lies inside exactly one of them.
    """
    successors = game.successors
    n = len(game)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    work = [(game.start, 0)]
    index[game.start] = low[game.start] = counter
    counter += 1
    stack.append(game.start)
    on_stack[game.start] = True
    while work:
        v, i = work[-1]
        out = successors[v]
        if i < len(out):
            work[-1] = (v, i + 1)
            w = out[i]
            if index[w] < 0:
                index[w] = low[w] = counter
                counter += 1
                stack.append(w)
                on_stack[w] = True
                work.append((w, 0))
            elif on_stack[w] and index[w] < low[v]:
                low[v] = index[w]
            continue
        work.pop()
        if work and low[v] < low[work[-1][0]]:
            low[work[-1][0]] = low[v]
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack[w] = False
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in successors[v]:
                found.append(component)
    return found


@attrs.frozen
class Evaluation:
    """Gain and bias of every vertex under one policy (lists the solver updates in place).

    ``gain[v]`` indexes ``classes``, the distinct gains as reduced ``(P, Q)`` with ``Q > 0``
    (the mean of the cycle the policy reaches from ``v``, in scaled units); ``rank`` orders
    the classes by value. ``bias[v]`` is the scaled bias times the ``Q`` of its gain.
    """

    gain: list[int]
    bias: list[int]
    classes: list[tuple[int, int]] = attrs.Factory(list)
    index: dict[tuple[int, int], int] = attrs.Factory(dict)
    rank: list[int] = attrs.Factory(list)

    def gain_of(self, v: int) -> tuple[int, int]:
        """Return vertex ``v``'s gain as a reduced ``(P, Q)``."""
        return self.classes[self.gain[v]]


def evaluate(edges: IntEdges, policy: list[int], reference: Evaluation | None = None) -> Evaluation:
    """Evaluate a policy (one edge index per vertex) by following it from every vertex.

    Each cycle's bias is anchored at its smallest vertex: at that vertex's bias in
    ``reference`` when its gain there is the same, else at 0. An unchanged cycle therefore
    keeps its biases from one evaluation to the next, which is what makes Howard terminate.
    """
    n = len(edges)
    value = Evaluation(gain=[0] * n, bias=[0] * n)
    _evaluate_into(edges, policy, value, reference)
    return value


def _evaluate_into(
    edges: IntEdges, policy: list[int], value: Evaluation, reference: Evaluation | None
) -> None:
    """Evaluate every vertex into ``value`` (overwriting it), anchored at ``reference``."""
    gain, bias, classes, index = value.gain, value.bias, value.classes, value.index
    nxt = [out[i][0] for out, i in zip(edges, policy, strict=True)]
    weight = [out[i][1] for out, i in zip(edges, policy, strict=True)]
    state = [0] * len(edges)  # 0 to do, 1 on the path being followed, 2 evaluated
    for start in range(len(edges)):
        if state[start]:
            continue
        path: list[int] = []
        u = start
        while not state[u]:
            state[u] = 1
            path.append(u)
            u = nxt[u]
        if state[u] == 1:
            first = path.index(u)
            cycle = path[first:]
            del path[first:]
            total = sum(weight[c] for c in cycle)
            length = len(cycle)
            divisor = math.gcd(total, length)
            p, q = total // divisor, length // divisor
            root = min(cycle)
            anchor = 0
            if reference is not None and reference.gain_of(root) == (p, q):
                anchor = reference.bias[root]
            g = index.get((p, q))
            if g is None:
                g = index[p, q] = len(classes)
                classes.append((p, q))
            k = cycle.index(root)
            after = anchor
            for j in range(k - 1, k - length, -1):
                c = cycle[j]
                after = q * weight[c] - p + after
                bias[c] = after
            bias[root] = anchor
            for c in cycle:
                gain[c] = g
                state[c] = 2
        for u in reversed(path):
            v = nxt[u]
            g = gain[v]
            gain[u] = g
            p, q = classes[g]
            bias[u] = q * weight[u] - p + bias[v]
            state[u] = 2
    order = sorted(range(len(classes)), key=lambda c: Fraction(*classes[c]))
    value.rank[:] = [0] * len(classes)
    for position, c in enumerate(order):
        value.rank[c] = position


def improve(
    edges: IntEdges,
    policy: list[int],
    value: Evaluation,
    vertices: Iterable[int] | None = None,
) -> list[tuple[int, int]]:
    """Switch, in place, each vertex with a strictly better edge; return ``(vertex, old edge)``.

    An edge is better when it leads to a higher gain, or to the same gain with a higher
    ``weight - gain + bias``. With no such edge anywhere the policy is optimal: no cycle has a
    mean above the gain of its vertices (sum the inequalities around it). ``vertices``
    limits the scan (to those with a choice, say).
    """
    gain, bias, classes, rank = value.gain, value.bias, value.classes, value.rank
    switched: list[tuple[int, int]] = []
    for u in range(len(edges)) if vertices is None else vertices:
        g = gain[u]
        p, q = classes[g]
        best_i = -1
        best_rank = rank[g]
        best_bias = bias[u]
        i = -1
        for v, w in edges[u]:
            i += 1
            gv = gain[v]
            if gv == g:
                if best_rank == rank[g]:
                    candidate = q * w - p + bias[v]
                    if candidate > best_bias:
                        best_i = i
                        best_bias = candidate
            elif rank[gv] > best_rank:
                best_i = i
                best_rank = rank[gv]
        if best_i >= 0 and best_i != policy[u]:
            switched.append((u, policy[u]))
            policy[u] = best_i
    return switched


def heaviest(out: tuple[tuple[int, int], ...]) -> int:
    """Return the index of the heaviest edge (the first of equals)."""
    best = 0
    for i in range(1, len(out)):
        if out[i][1] > out[best][1]:
            best = i
    return best


def lightest(out: tuple[tuple[int, int], ...]) -> int:
    """Return the index of the lightest edge (the first of equals)."""
    best = 0
    for i in range(1, len(out)):
        if out[i][1] < out[best][1]:
            best = i
    return best


def howard_max(
    edges: IntEdges, policy: list[int] | None = None, reference: Evaluation | None = None
) -> tuple[list[int], Evaluation]:
    """Return an optimal policy for the maximum cycle mean and its evaluation.

    Starts from ``policy`` (or, per vertex, its heaviest edge) and alternates evaluation and
    improvement until no vertex can improve. Every evaluation anchors its cycles at
    ``reference`` (see ``evaluate``), so the anchors depend on the cycle alone: an unchanged
    cycle keeps its biases, each round improves some vertex strictly, and the loop ends.
    """
    if policy is None:
        policy = [heaviest(out) for out in edges]
    else:
        policy = list(policy)
    choices = [u for u, out in enumerate(edges) if len(out) > 1]
    value = evaluate(edges, policy, reference)
    while improve(edges, policy, value, choices):
        _evaluate_into(edges, policy, value, reference)
    return policy, value


def cycle_from(game: GameGraph, moves: list[int] | tuple[int, ...], start: int) -> list[int]:
    """Return the cycle (vertices in order) that ``moves`` (edge indices) reach from ``start``."""
    seen: dict[int, int] = {}
    path: list[int] = []
    u = start
    while u not in seen:
        seen[u] = len(path)
        path.append(u)
        u = game.edges[u][moves[u]][0]
    return path[seen[u] :]


def cycle_mean(game: GameGraph, moves: list[int] | tuple[int, ...], cycle: list[int]) -> Fraction:
    """Return the exact mean of the game's own weights around ``cycle`` under ``moves``."""
    total = sum((Fraction(game.edges[c][moves[c]][2]) for c in cycle), Fraction(0))
    return total / len(cycle)
