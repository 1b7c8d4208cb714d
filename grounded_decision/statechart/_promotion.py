"""Priority promotion (Benerecetti, Dell'Erba and Mogavero), the basic algorithm.

Regions are computed top-down: the region of priority ``p`` is its player's attractor of
the free vertices of that priority. A region its opponent can leave downwards is left
open and the search goes down; a closed region the opponent can only leave upwards is
promoted to the lowest region it escapes to and merged with it; a closed region with no
escape is a dominion, taken out with its attractor, after which every region is reset.
Crafted families that make Zielonka's recursion exponential (the "core" counters among
them) are solved with few promotions.

A promotion does not recompute the merged region. Vertices carry a region number and
regions a level, so the smaller of two merged regions is relabelled into the larger; the
attractor grows only from the vertices the promotion freed (no other free vertex can have
become attractable); each region keeps a heap of the levels its opponent can escape to,
stale entries being dropped as they surface. A region climbing level by level costs what
it gains, not its size.
"""

from __future__ import annotations

import heapq
from collections.abc import Generator, Sequence

from grounded_decision.statechart._parity_core import Budget

__all__ = ["promotion_steps"]

_FREE = -1
_SOLVED = -2


class _Region:
    """A region on the stack: its number, members, top vertices and escape heap."""

    __slots__ = ("escapes", "ident", "members", "tops")

    def __init__(self, ident: int, members: list[int], tops: list[int]) -> None:
        self.ident = ident
        self.members = members
        self.tops = tops
        self.escapes: list[tuple[int, int]] = []


def promotion_steps(
    successors: Sequence[Sequence[int]],
    predecessors: Sequence[Sequence[int]],
    owner: Sequence[int],
    priority: Sequence[int],
    *,
    budget: Budget,
) -> Generator[None, None, tuple[list[int], list[int]]]:
    """Solve a step at a time, pausing before each region is looked at.

    The generator returns ``(winner, strategy)`` per vertex; ``strategy[v]`` is -1 where
    the owner loses. ``priority`` must be dense (``0..d-1``), as ``compress_priorities``
    makes it.

    Raises:
        ParityUnsolved: when the budget is spent.
    """
    n = len(priority)
    winner = [-1] * n
    strategy = [-1] * n
    if n == 0:
        return winner, strategy
    top_value = max(priority)
    bucket: list[list[int]] = [[] for _ in range(top_value + 1)]
    for v in range(n):
        bucket[priority[v]].append(v)
    free = [len(vertices) for vertices in bucket]
    rid = [_FREE] * n
    level_of: list[int] = []
    joined = [0] * n
    done = [0] * n
    counted = [0] * n
    count = [0] * n
    stamp = 0
    regions: list[_Region] = []
    unsolved = n
    remaining = [len(vertices) for vertices in bucket]

    def grow(into: _Region, seeds: list[int], candidates: list[int]) -> None:
        """Add the player's attractor of ``seeds`` and of any attractable ``candidates``."""
        nonlocal stamp
        stamp += 1
        here = stamp
        ident = into.ident
        level = level_of[ident]
        player = level & 1
        members = into.members
        escapes = into.escapes
        queue = list(seeds)
        for v in queue:
            joined[v] = here
        work = len(queue) + len(candidates)
        for u in candidates:
            if rid[u] != _FREE:
                continue
            work += len(successors[u])
            if owner[u] == player:
                for x in successors[u]:
                    if rid[x] == ident:
                        strategy[u] = x
                        break
                else:
                    continue
            elif any(rid[x] == _FREE for x in successors[u]):
                continue
            rid[u] = ident
            joined[u] = here
            free[priority[u]] -= 1
            queue.append(u)
            members.append(u)
        i = 0
        while i < len(queue):
            w = queue[i]
            i += 1
            done[w] = here
            if owner[w] != player:
                for x in successors[w]:
                    other = rid[x]
                    if other >= 0 and level_of[other] > level:
                        heapq.heappush(escapes, (level_of[other], x))
            preds = predecessors[w]
            work += len(preds) + len(successors[w])
            for u in preds:
                if rid[u] != _FREE:
                    continue
                if owner[u] != player:
                    if counted[u] != here:
                        counted[u] = here
                        left = 0
                        for x in successors[u]:
                            if rid[x] == _FREE or (joined[x] == here and done[x] != here):
                                left += 1
                        work += len(successors[u])
                    else:
                        left = count[u] - 1
                    count[u] = left
                    if left:
                        continue
                else:
                    strategy[u] = w
                rid[u] = ident
                joined[u] = here
                free[priority[u]] -= 1
                queue.append(u)
                members.append(u)
        budget.charge(work)

    def closed(candidate: _Region) -> bool:
        """Whether the player can stay in the region and the opponent cannot leave it downwards."""
        ident = candidate.ident
        player = level_of[ident] & 1
        for v in candidate.tops:
            if owner[v] == player:
                move = strategy[v]
                if move < 0 or rid[move] != ident:
                    for w in successors[v]:
                        if rid[w] == ident:
                            strategy[v] = w
                            break
                    else:
                        return False
            else:
                for w in successors[v]:
                    if rid[w] == _FREE:
                        return False
        budget.charge(len(candidate.tops))
        return True

    def lowest_escape(candidate: _Region) -> int:
        """The lowest level above the region its opponent can move to, or -1 for none."""
        escapes = candidate.escapes
        level = level_of[candidate.ident]
        while escapes:
            target_level, target = escapes[0]
            other = rid[target]
            if other >= 0 and level_of[other] == target_level and target_level > level:
                return target_level
            heapq.heappop(escapes)
        return -1

    def take_dominion(seeds: list[int], player: int) -> None:
        """Attract to a dominion over every unsolved vertex, mark it won and reset regions."""
        nonlocal stamp, unsolved, top_value
        stamp += 1
        here = stamp
        out = list(seeds)
        for v in out:
            joined[v] = here
        work = len(out)
        i = 0
        while i < len(out):
            w = out[i]
            i += 1
            preds = predecessors[w]
            work += len(preds)
            for u in preds:
                if rid[u] == _SOLVED or joined[u] == here:
                    continue
                if owner[u] != player:
                    if counted[u] != here:
                        counted[u] = here
                        left = -1
                        for x in successors[u]:
                            if rid[x] != _SOLVED:
                                left += 1
                        work += len(successors[u])
                    else:
                        left = count[u] - 1
                    count[u] = left
                    if left:
                        continue
                else:
                    strategy[u] = w
                joined[u] = here
                out.append(u)
        for v in out:
            if rid[v] == _FREE:
                free[priority[v]] -= 1
            rid[v] = _SOLVED
            winner[v] = player
        unsolved -= len(out)
        for v in out:
            remaining[priority[v]] -= 1
        while top_value > 0 and not remaining[top_value]:
            top_value -= 1
        for old in regions:
            for v in old.members:
                if rid[v] != _SOLVED:
                    rid[v] = _FREE
                    free[priority[v]] += 1
            work += len(old.members)
        regions.clear()
        budget.charge(work + len(out))

    p = top_value
    current: _Region | None = None
    while unsolved:
        yield
        if current is None:
            while free[p] == 0:
                p -= 1
            tops = [v for v in bucket[p] if rid[v] == _FREE]
            ident = len(level_of)
            level_of.append(p)
            for v in tops:
                rid[v] = ident
            free[p] -= len(tops)
            current = _Region(ident, list(tops), tops)
            grow(current, tops, [])
        if not closed(current):
            regions.append(current)
            current = None
            p -= 1
            continue
        escape = lowest_escape(current)
        if escape < 0:
            take_dominion(current.members, p & 1)
            current = None
            p = top_value
            continue
        released: list[int] = []
        while level_of[regions[-1].ident] < escape:
            for v in regions.pop().members:
                rid[v] = _FREE
                free[priority[v]] += 1
                released.append(v)
        above = regions.pop()
        big, small = (
            (above, current) if len(above.members) >= len(current.members) else (current, above)
        )
        for v in small.members:
            rid[v] = big.ident
        level_of[big.ident] = escape
        big.members.extend(small.members)
        if len(big.escapes) < len(small.escapes):
            big.escapes, small.escapes = small.escapes, big.escapes
        for entry in small.escapes:
            heapq.heappush(big.escapes, entry)
        big.tops = above.tops
        budget.charge(len(small.members) + len(small.escapes) + len(released))
        current = big
        p = escape
        grow(current, [], released)
    for v in range(n):
        if owner[v] != winner[v]:
            strategy[v] = -1
    return winner, strategy
