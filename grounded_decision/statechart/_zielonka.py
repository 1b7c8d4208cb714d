"""Zielonka's recursive algorithm, run on an explicit stack over one shared game.

No subgame is copied. The vertices of the current subgame form a doubly linked list sorted
by priority, so the top priority is the head of the list; a level unlinks what it attracts
and links it back, last out first in, before it returns. An attractor costs the vertices it
attracts plus the edges into them. Results are ropes (nested pairs of lists), so handing a
region up a level costs nothing until someone reads it.
"""

from __future__ import annotations

from collections.abc import Sequence

from grounded_decision.errors import ParityUnsolved
from grounded_decision.statechart._parity_core import Budget, Rope, concat, flatten

__all__ = ["solve_zielonka"]


class _Level:
    """One level of the recursion: what it attracted, what it keeps, what it has won."""

    __slots__ = ("favoured", "kept", "pulled", "tops", "won")

    def __init__(self) -> None:
        self.won: list[Rope] = [None, None]
        self.kept: list[list[int]] = []
        self.favoured = 0
        self.pulled: list[int] = []
        self.tops = 0


def solve_zielonka(
    successors: Sequence[Sequence[int]],
    predecessors: Sequence[Sequence[int]],
    owner: Sequence[int],
    priority: Sequence[int],
    *,
    max_depth: int | None,
    budget: Budget,
) -> tuple[list[int], list[int]]:
    """Return ``(winner, strategy)`` per vertex; ``strategy[v]`` is -1 where the owner loses.

    Raises:
        ParityUnsolved: when the nesting exceeds ``max_depth`` or the budget is spent.
    """
    n = len(priority)
    sentinel = n
    order = sorted(range(n), key=priority.__getitem__, reverse=True)
    nxt = [sentinel] * (n + 1)
    prv = [sentinel] * (n + 1)
    last = sentinel
    for v in order:
        nxt[last] = v
        prv[v] = last
        last = v
    nxt[last] = sentinel
    prv[sentinel] = last
    alive = [True] * n
    mark = [0] * n
    counted = [0] * n
    count = [0] * n
    strategy = [-1] * n
    stamp = 0

    def attract(targets: list[int], player: int) -> list[int]:
        nonlocal stamp
        stamp += 1
        here = stamp
        out = list(targets)
        for v in out:
            mark[v] = here
        work = len(out)
        i = 0
        while i < len(out):
            w = out[i]
            i += 1
            preds = predecessors[w]
            work += len(preds)
            for u in preds:
                if not alive[u] or mark[u] == here:
                    continue
                if owner[u] == player:
                    mark[u] = here
                    strategy[u] = w
                    out.append(u)
                    continue
                if counted[u] != here:
                    counted[u] = here
                    left = -1
                    for x in successors[u]:
                        if alive[x]:
                            left += 1
                    work += len(successors[u])
                else:
                    left = count[u] - 1
                count[u] = left
                if left == 0:
                    mark[u] = here
                    out.append(u)
        budget.charge(work)
        return out

    def unlink(vertices: list[int]) -> None:
        for v in vertices:
            before = prv[v]
            after = nxt[v]
            nxt[before] = after
            prv[after] = before
            alive[v] = False

    def relink(vertices: list[int]) -> None:
        for v in reversed(vertices):
            nxt[prv[v]] = v
            prv[nxt[v]] = v
            alive[v] = True

    stack = [_Level()]
    result: tuple[Rope, Rope] = (None, None)
    entering = True
    while stack:
        level = stack[-1]
        if entering:
            head = nxt[sentinel]
            if head != sentinel:
                if max_depth is not None and len(stack) > max_depth:
                    msg = (
                        f"parity recursion deeper than limit {max_depth}"
                        " (Limits.max_parity_depth); raise max_parity_depth, or pass None"
                        " for no cap"
                    )
                    raise ParityUnsolved(msg, limit=max_depth, setting="max_parity_depth")
                top_priority = priority[head]
                top = []
                v = head
                while v != sentinel and priority[v] == top_priority:
                    top.append(v)
                    v = nxt[v]
                level.favoured = top_priority & 1
                level.pulled = attract(top, level.favoured)
                level.tops = len(top)
                unlink(level.pulled)
                stack.append(_Level())
                continue
        else:
            relink(level.pulled)
            favoured = level.favoured
            other = 1 - favoured
            if result[other] is not None:
                lost = attract(flatten(result[other]), other)
                unlink(lost)
                level.kept.append(lost)
                level.won[other] = concat(level.won[other], lost)
                entering = True
                continue
            for v in level.pulled[: level.tops]:
                if owner[v] == favoured:
                    for w in successors[v]:
                        if alive[w]:
                            strategy[v] = w
                            break
            level.won[favoured] = concat(
                level.won[favoured], concat(level.pulled, result[favoured])
            )
        for lost in reversed(level.kept):
            relink(lost)
        result = (level.won[0], level.won[1])
        stack.pop()
        entering = False
    winner = [0] * n
    for v in flatten(result[1]):
        winner[v] = 1
    for v in range(n):
        if owner[v] != winner[v]:
            strategy[v] = -1
    return winner, strategy
