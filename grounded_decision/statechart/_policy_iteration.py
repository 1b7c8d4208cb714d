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


def _whole(x: float) -> bool:
    """Whether a weight (an int, or a float) is a whole number."""
    return type(x) is int or x.is_integer()


def int_graph(game: GameGraph, sign: int = 1) -> IntGraph:
    """Scale ``sign * weight`` of every edge to an integer by the least common denominator.

    Float weights are dyadic fractions, so the common denominator is the largest one.

    Raises:
        GameGraphError: when a weight is infinite or not a number.
    """
    if all(_whole(x) for out in game.edges for _, _, x in out):
        if sign == 1:
            return IntGraph(
                edges=tuple(tuple([(w, int(x)) for w, _, x in out]) for out in game.edges),
                scale=1,
            )
        return IntGraph(
            edges=tuple(tuple([(w, -int(x)) for w, _, x in out]) for out in game.edges),
            scale=1,
        )
    scale = 1
    for v, out in enumerate(game.edges):
        for w, event, weight in out:
            if not _whole(weight):
                if not math.isfinite(weight):
                    msg = (
                        f"edge {v} -> {w} ({event!r}) has weight {weight}; mean payoff needs"
                        " finite weights, so give the transition and the state a finite payoff"
                    )
                    raise GameGraphError(msg)
                scale = max(scale, float(weight).as_integer_ratio()[1])
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
    gain, bias, classes = value.gain, value.bias, value.classes
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
            _anchor_cycle(cycle, weight, value, reference)
            for c in cycle:
                state[c] = 2
        for u in reversed(path):
            v = nxt[u]
            g = gain[v]
            gain[u] = g
            p, q = classes[g]
            bias[u] = q * weight[u] - p + bias[v]
            state[u] = 2
    _rank(value)


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
        own = rank[g]
        best_i = -1
        best_rank = own
        best_bias = bias[u]
        i = -1
        for v, w in edges[u]:
            i += 1
            gv = gain[v]
            if gv == g:
                if best_rank == own:
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
    edges: IntEdges,
    policy: list[int] | None = None,
    reference: Evaluation | None = None,
    *,
    spread: bool = False,
) -> tuple[list[int], Evaluation]:
    """Return an optimal policy for the maximum cycle mean and its evaluation.

    Starts from ``policy`` (or, per vertex, its heaviest edge) and alternates evaluation and
    improvement until no vertex can improve. Every evaluation anchors its cycles at
    ``reference`` (see ``evaluate``), so the anchors depend on the cycle alone: an unchanged
    cycle keeps its biases, each round improves some vertex strictly, and the loop ends.

    After the first round only what changed is redone, with the same result as evaluating
    and scanning everything: a vertex's gain and bias depend only on the path its policy
    follows, so only the vertices whose path passes a switched vertex are evaluated again,
    and only they and their predecessors can have a better edge than in the last scan (the
    order of the gains already found never changes).

    With ``spread``, whenever an improvement changed a gain, every vertex that can reach a
    higher gain is next switched onto a way to the highest (``_spread_gains``): a higher
    gain then crosses the graph in one round instead of one edge per round. No gain falls,
    so policies still never repeat; the policy found may differ from the plain iteration's,
    the gains may not.
    """
    if policy is None:
        policy = [heaviest(out) for out in edges]
    else:
        policy = list(policy)
    value = evaluate(edges, policy, reference)
    n = len(edges)
    choice = [len(out) > 1 for out in edges]
    dirty = [u for u in range(n) if choice[u]]
    if not dirty:
        return policy, value
    before: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for u, out in enumerate(edges):
        for i, (v, _) in enumerate(out):
            before[v].append((u, i))
    nxt = [out[i][0] for out, i in zip(edges, policy, strict=True)]
    weight = [out[i][1] for out, i in zip(edges, policy, strict=True)]
    seen = [0] * n
    waiting = choice[:]
    status = [0] * n
    round_ = 0
    widen = spread
    while True:
        switched = _spread_gains(policy, value, before) if widen else []
        spreading = bool(switched)
        if not switched:
            switched = improve(edges, policy, value, dirty)
            if not switched:
                return policy, value
            for u in dirty:
                waiting[u] = False
            dirty = []
        round_ += 1
        upstream: list[int] = []
        for u, _ in switched:
            nxt[u], weight[u] = edges[u][policy[u]]
            if seen[u] != round_:
                seen[u] = round_
                upstream.append(u)
        for x in upstream:
            if choice[x] and not waiting[x]:
                waiting[x] = True
                dirty.append(x)
            for u, i in before[x]:
                if policy[u] == i and seen[u] != round_:
                    seen[u] = round_
                    upstream.append(u)
                elif choice[u] and not waiting[u]:
                    waiting[u] = True
                    dirty.append(u)
        changed = _evaluate_part(upstream, seen, round_, status, nxt, weight, value, reference)
        widen = spread and changed and not spreading


def _spread_gains(
    policy: list[int], value: Evaluation, before: list[list[tuple[int, int]]]
) -> list[tuple[int, int]]:
    """Switch every vertex that can reach a higher gain onto a shortest way to the highest.

    Gains are taken from the highest down; each is spread backwards along every edge to the
    vertices with a lower gain not yet reached, which switch to the edge it came along. The
    ways lead, without new cycles, to a vertex that keeps its move, so every switched
    vertex's gain rises and no gain falls. Returns ``(vertex, old edge)`` per switch.
    """
    gain, rank = value.gain, value.rank
    n = len(policy)
    level = [rank[g] for g in gain]
    order = sorted(range(n), key=level.__getitem__, reverse=True)
    claimed = [False] * n
    switched: list[tuple[int, int]] = []
    k = 0
    while k < n:
        top = level[order[k]]
        frontier = []
        while k < n and level[order[k]] == top:
            v = order[k]
            k += 1
            if not claimed[v]:
                claimed[v] = True
                frontier.append(v)
        for x in frontier:
            for u, i in before[x]:
                if not claimed[u] and level[u] < top:
                    claimed[u] = True
                    if policy[u] != i:
                        switched.append((u, policy[u]))
                        policy[u] = i
                    frontier.append(u)
    return switched


def _evaluate_part(
    part: list[int],
    seen: list[int],
    round_: int,
    status: list[int],
    nxt: list[int],
    weight: list[int],
    value: Evaluation,
    reference: Evaluation | None,
) -> bool:
    """Evaluate again the vertices of ``part`` (those with ``seen == round_``), in place.

    Every other vertex keeps its gain and bias; a path of ``part`` ends at one of them or in
    a cycle inside ``part``, anchored as ``evaluate`` anchors it. Returns whether some gain
    changed.
    """
    gain, bias, classes = value.gain, value.bias, value.classes
    known = len(classes)
    old = [gain[v] for v in part]
    for v in part:
        status[v] = 0
    for start in part:
        if status[start]:
            continue
        path: list[int] = []
        u = start
        while seen[u] == round_ and not status[u]:
            status[u] = 1
            path.append(u)
            u = nxt[u]
        if seen[u] == round_ and status[u] == 1:
            first = path.index(u)
            cycle = path[first:]
            del path[first:]
            _anchor_cycle(cycle, weight, value, reference)
            for c in cycle:
                status[c] = 2
        for u in reversed(path):
            g = gain[nxt[u]]
            gain[u] = g
            p, q = classes[g]
            bias[u] = q * weight[u] - p + bias[nxt[u]]
            status[u] = 2
    if len(classes) != known:
        _rank(value)
    return old != [gain[v] for v in part]


def _anchor_cycle(
    cycle: list[int], weight: list[int], value: Evaluation, reference: Evaluation | None
) -> None:
    """Give the vertices of a policy cycle its reduced mean and their biases around it."""
    gain, bias, classes, index = value.gain, value.bias, value.classes, value.index
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


def _rank(value: Evaluation) -> None:
    """Order the gain classes by value into ``value.rank``."""
    classes = value.classes
    order = sorted(range(len(classes)), key=lambda c: Fraction(*classes[c]))
    value.rank[:] = [0] * len(classes)
    for position, c in enumerate(order):
        value.rank[c] = position


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
