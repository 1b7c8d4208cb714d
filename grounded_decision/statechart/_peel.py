"""Peeling: vertices no move can reach again are taken off before solving and decided after.

A vertex that no other remaining vertex moves to is seen at most once in any play, so its
priority never matters: whoever owns it wins it exactly when some successor is in the owner's
region. Taking such vertices off, repeatedly, leaves a core in which every vertex still has a
successor (a core vertex's successors are never peeled, since the core vertex keeps them
reachable), so the core is a game of its own. On random games with out-degree 1 or 2 about
two fifths of the vertices peel off.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

__all__ = ["Core", "decide_peeled", "peel"]


@attrs.frozen
class Core:
    """The core of a game, renumbered ``0..len(vertices)-1`` in the order of ``vertices``.

    Parameters:
        vertices: the original index of each core vertex (increasing).
        peeled: the vertices taken off, in the order they were taken (each had no
            predecessor left when it was taken).
        successors: per core vertex, its successors (renumbered; all are core vertices).
        predecessors: per core vertex, its core predecessors (renumbered).
        owner: per core vertex, its owner.
        priority: per core vertex, its priority.
        work: vertices and edges looked at, for the solver's budget.
    """

    vertices: list[int]
    peeled: list[int]
    successors: list[tuple[int, ...]]
    predecessors: list[tuple[int, ...]]
    owner: list[int]
    priority: list[int]
    work: int


def peel(
    successors: Sequence[Sequence[int]],
    predecessors: Sequence[Sequence[int]],
    owner: Sequence[int],
    priority: Sequence[int],
) -> Core:
    """Take off, repeatedly, every vertex without a predecessor; return the core left."""
    n = len(successors)
    indegree = [len(before) for before in predecessors]
    peeled = [v for v in range(n) if not indegree[v]]
    work = n
    for v in peeled:
        work += len(successors[v])
        for w in successors[v]:
            left = indegree[w] - 1
            indegree[w] = left
            if not left:
                peeled.append(w)
    if not peeled:
        return Core(
            vertices=list(range(n)),
            peeled=[],
            successors=[tuple(out) for out in successors],
            predecessors=[tuple(before) for before in predecessors],
            owner=list(owner),
            priority=list(priority),
            work=work,
        )
    local = [0] * n
    for v in peeled:
        local[v] = -1
    vertices = [v for v in range(n) if local[v] == 0]
    for i, v in enumerate(vertices):
        local[v] = i
    at = local.__getitem__
    succ = [tuple(map(at, successors[v])) for v in vertices]
    pred = []
    for v in vertices:
        before = tuple(map(at, predecessors[v]))
        if -1 in before:
            before = tuple(u for u in before if u >= 0)
        pred.append(before)
    return Core(
        vertices=vertices,
        peeled=peeled,
        successors=succ,
        predecessors=pred,
        owner=[owner[v] for v in vertices],
        priority=[priority[v] for v in vertices],
        work=work + len(vertices) + sum(map(len, succ)),
    )


def decide_peeled(
    core: Core,
    successors: Sequence[Sequence[int]],
    owner: Sequence[int],
    winner: list[int],
    strategy: list[int],
) -> None:
    """Decide the peeled vertices, last taken first, in place; the core must be decided.

    The owner wins a peeled vertex by moving into its own region when it can; otherwise the
    opponent wins it and the owner's move does not matter (``-1``).
    """
    for v in reversed(core.peeled):
        side = owner[v]
        for w in successors[v]:
            if winner[w] == side:
                winner[v] = side
                strategy[v] = w
                break
        else:
            winner[v] = 1 - side
            strategy[v] = -1
