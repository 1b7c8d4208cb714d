"""Tangle learning (van Dijk, "Attracting tangles to solve parity games", CAV 2018).

A tangle of player ``a`` is a strongly connected set of vertices with a strategy of ``a`` on
it under which every cycle inside is won by ``a``; the opponent may leave it only through its
escapes. Each pass splits the unsolved game top-down into regions, as Zielonka's algorithm
does, but the attractor of a region also pulls in a known tangle of the region's player (of
priority at most the region's) once every escape of it lies in a region of that player, and
with it every vertex of the tangle. A region the opponent cannot leave downwards is closed:

- if it is the first region of its player in the pass, the opponent cannot leave it at all
  (every higher region is the opponent's, and would have attracted any vertex with a move
  into it), so it is a dominion;
- otherwise the bottom strongly connected components of the region under the region's
  strategy, found from its heads, are new tangles; one without escapes is a dominion.

A dominion is extended to its player's attractor (tangles included) in the whole unsolved
game, solved, and the next pass starts from the top; otherwise the pass reaches the bottom
of the game with at least one new tangle learnt, and goes on from the first region one of
them joins (every region above it would come out the same). A tangle is learnt at most
once, so the passes end.

Bookkeeping: ``where[v]`` is the region of ``v`` in the current pass (region numbers grow
across passes, so anything below the pass's first number is free) or ``SOLVED``; an opponent
vertex is attracted when its count of free successors reaches zero; a tangle counts down its
escapes that have joined a region of its player.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterator, Sequence

from grounded_decision.statechart._parity_core import Budget

__all__ = ["SOLVED", "TangleSolver", "solve_tangles"]

SOLVED = sys.maxsize
"""``where`` of a solved vertex: above every region number, so never free."""


def solve_tangles(
    successors: Sequence[Sequence[int]],
    predecessors: Sequence[Sequence[int]],
    owner: Sequence[int],
    priority: Sequence[int],
    *,
    budget: Budget,
    vertices: Sequence[int] | None = None,
) -> tuple[list[int], list[int]]:
    """Return ``(winner, strategy)`` per vertex; ``strategy[v]`` is -1 where the owner loses.

    ``priority`` may have gaps. With ``vertices`` only those are solved (a subgame: each has
    a successor among them; the answer elsewhere is -1), the others being treated as solved.

    Raises:
        ParityUnsolved: when the budget is spent.
    """
    solver = TangleSolver(successors, predecessors, owner, priority, budget, vertices)
    deque(solver.steps(), maxlen=0)  # run every step; the answer is the solver's state
    return solver.answer()


class _Region:
    """A region of the current pass: its number, the cursor it started at, its player, its
    vertices and the vertices whose count of free successors it lowered."""

    __slots__ = ("cursor", "lowered", "members", "number", "player")

    def __init__(self, number: int, cursor: int, player: int) -> None:
        self.number = number
        self.cursor = cursor
        self.player = player
        self.members: list[int] = []
        self.lowered: list[int] = []


class TangleSolver:
    """One solve, run a region at a time (``steps``) so that it can take turns with another.

    It holds the regions of the current pass, the strategies and the tangles learnt.
    """

    def __init__(
        self,
        successors: Sequence[Sequence[int]],
        predecessors: Sequence[Sequence[int]],
        owner: Sequence[int],
        priority: Sequence[int],
        budget: Budget,
        vertices: Sequence[int] | None,
    ) -> None:
        n = len(priority)
        self.successors = successors
        self.predecessors = predecessors
        self.owner = owner
        self.priority = priority
        self.parity = [p & 1 for p in priority]
        self.budget = budget
        every = range(n) if vertices is None else vertices
        self.order = sorted(every, key=priority.__getitem__, reverse=True)
        self.winner = [-1] * n
        self.strategy = [-1] * n
        where = [-1] * n
        if vertices is not None:
            where = [SOLVED] * n
            for v in self.order:
                where[v] = -1
        self.where = where
        self.move = [-1] * n
        self.live = list(map(len, successors))
        self.unsolved = len(self.order)
        self.start = 0
        self.region = 0
        self.tick = 0
        self.seen = [0] * n
        self.index = [0] * n
        self.low = [0] * n
        self.done = [0] * n
        self.flags = [0] * n
        self.attached: list[list[int]] = [[] for _ in range(n)]
        self.region_top = [0]
        self.t_escapes: list[list[int]] = []
        self.t_vertices: list[list[int]] = []
        self.t_moves: list[list[int]] = []
        self.t_priority: list[int] = []
        self.t_live: list[int] = []
        self.t_count: list[int] = []
        self.t_stamp: list[int] = []

    def steps(self) -> Iterator[None]:
        """Run passes until every vertex is solved, pausing before each region.

        Solved vertices are dropped from the sorted list once they are half of it, and each
        pass starts after the solved ones at its head, so a game solved one top dominion at
        a time costs no scan of what is already solved.
        """
        where = self.where
        while self.unsolved:
            if len(self.order) > 2 * self.unsolved:
                self.order = [v for v in self.order if where[v] != SOLVED]
                self.start = 0
            order = self.order
            k = self.start
            while where[order[k]] == SOLVED:
                k += 1
            self.start = k
            yield from self.search()

    def answer(self) -> tuple[list[int], list[int]]:
        """``(winner, strategy)`` once ``steps`` has run out."""
        return self.winner, self.strategy

    def search(self) -> Iterator[None]:
        """One pass: regions from the top until a dominion is solved or the game is covered.

        When the bottom is reached, the pass resumes where the tangles it learnt first make a
        difference instead of starting again from the top (see ``resume``).
        """
        where = self.where
        move = self.move
        owner = self.owner
        parity = self.parity
        predecessors = self.predecessors
        attached = self.attached
        t_priority = self.t_priority
        t_count = self.t_count
        t_stamp = self.t_stamp
        t_vertices = self.t_vertices
        t_moves = self.t_moves
        region_top = self.region_top
        order = self.order
        end = len(order)
        base = self.region + 1
        epoch = base
        free = self.live[:]
        first = [True, True]
        regions: list[_Region] = []
        learnt = len(t_priority)
        k = self.start
        while True:
            yield
            while k < end and where[order[k]] >= base:
                k += 1
            if k == end:
                if len(t_priority) == learnt:
                    return
                k = self.resume(regions, learnt, free, first)
                epoch = self.region + 1
                learnt = len(t_priority)
                continue
            self.region += 1
            cur = self.region
            top = self.priority[order[k]]
            player = top & 1
            region_top.append(top)
            record = _Region(cur, k, player)
            regions.append(record)
            members = record.members
            lowered = record.lowered
            heads: list[int] = []
            work = 0
            while k < end:
                v = order[k]
                if where[v] >= base:
                    k += 1
                    continue
                if parity[v] != player:
                    break
                where[v] = cur
                move[v] = -1
                heads.append(v)
                queue = [v]
                for w in queue:
                    preds = predecessors[w]
                    work += len(preds)
                    for u in preds:
                        if where[u] >= base:
                            continue
                        if owner[u] == player:
                            where[u] = cur
                            move[u] = w
                            queue.append(u)
                            continue
                        left = free[u] - 1
                        free[u] = left
                        lowered.append(u)
                        if not left:
                            where[u] = cur
                            queue.append(u)
                    tangles = attached[w]
                    if not tangles:
                        continue
                    for t in tangles:
                        tp = t_priority[t]
                        if tp < 0 or tp > top or tp & 1 != player:
                            continue
                        if t_stamp[t] != epoch:
                            t_stamp[t] = epoch
                            left = self.open_escapes(t, base, epoch) - 1
                        else:
                            left = t_count[t] - 1
                        t_count[t] = left
                        if left:
                            continue
                        inside = t_vertices[t]
                        for x in inside:
                            at = where[x]
                            if at == SOLVED:
                                t_priority[t] = -1
                                break
                            if at >= base and at != cur:
                                break
                        else:
                            work += len(inside)
                            for x, pick in zip(inside, t_moves[t], strict=True):
                                if where[x] < base:
                                    where[x] = cur
                                    move[x] = pick
                                    queue.append(x)
                members.extend(queue)
            self.budget.charge(work + len(members))
            if self.closed(heads, cur, base, player):
                if first[player]:
                    self.solve_dominion(members, player)
                    return
                dominion = self.extract(heads, cur, player)
                if dominion:
                    self.solve_dominion(dominion, player)
                    return
            first[player] = False

    def open_escapes(self, t: int, base: int, epoch: int) -> int:
        """How many unsolved escapes of tangle ``t`` are not yet in a region that counts.

        Regions numbered from ``base`` up to ``epoch`` were kept from before the pass
        resumed; an escape in one of them of the tangle's player and priority at least the
        tangle's already counts. Any later region counted it when it took the escape.
        """
        if epoch == base:
            return self.t_live[t]
        where = self.where
        region_top = self.region_top
        tp = self.t_priority[t]
        left = 0
        for x in self.t_escapes[t]:
            at = where[x]
            if at == SOLVED:
                continue
            if base <= at < epoch:
                above = region_top[at]
                if above >= tp and above & 1 == tp & 1:
                    continue
            left += 1
        self.budget.charge(len(self.t_escapes[t]))
        return left

    def resume(
        self,
        regions: list[_Region],
        learnt: int,
        free: list[int],
        first: list[bool],
    ) -> int:
        """Undo the regions from the first one a newly learnt tangle joins; return its cursor.

        A new tangle escapes only to higher regions of its player, so the next pass would
        rebuild every region above the one that took its last escape exactly as it was, and
        the tangle joins that one. The regions from there down are undone, every count of
        free successors they lowered is raised back (each region logs the vertices it
        lowered), and the pass goes on from there.
        """
        where = self.where
        t_escapes = self.t_escapes
        target = min(max(where[x] for x in t_escapes[t]) for t in range(learnt, len(t_escapes)))
        keep = 0
        while regions[keep].number < target:
            keep += 1
        undone = 0
        for record in reversed(regions[keep:]):
            for v in record.members:
                where[v] = -1
            for u in record.lowered:
                free[u] += 1
            undone += len(record.members) + len(record.lowered)
        cursor = regions[keep].cursor
        del regions[keep:]
        first[0] = first[1] = True
        for record in regions:
            first[record.player] = False
        self.budget.charge(undone)
        return cursor

    def closed(self, heads: list[int], cur: int, base: int, player: int) -> bool:
        """Whether the opponent cannot leave the region downwards; picks the heads' moves.

        Every vertex but a head was attracted, so only heads can leave: a head of the player
        needs a move into the region, a head of the opponent no move to a free vertex.
        """
        where = self.where
        owner = self.owner
        successors = self.successors
        for h in heads:
            if owner[h] == player:
                for x in successors[h]:
                    if where[x] == cur:
                        self.move[h] = x
                        break
                else:
                    return False
            else:
                for x in successors[h]:
                    if where[x] < base:
                        return False
        self.budget.charge(len(heads))
        return True

    def extract(self, heads: list[int], cur: int, player: int) -> list[int]:
        """Learn the bottom SCCs, reachable from the heads, of the region's strategy graph.

        The graph keeps the player's chosen move and every opponent move inside the region.
        Tarjan's algorithm, iteratively; an SCC is bottom when no edge leads from it to an
        SCC finished before it. Returns the vertices of those without escapes (dominions).
        """
        self.tick += 1
        here = self.tick
        where = self.where
        owner = self.owner
        move = self.move
        successors = self.successors
        seen = self.seen
        index = self.index
        low = self.low
        done = self.done
        flags = self.flags
        counter = 0
        stack: list[int] = []
        dominion: list[int] = []
        work = 0
        for root in heads:
            if seen[root] == here:
                continue
            seen[root] = here
            index[root] = low[root] = counter
            counter += 1
            flags[root] = 0
            stack.append(root)
            path = [root]
            outs: list[Sequence[int]] = [
                (move[root],) if owner[root] == player else successors[root]
            ]
            position = [0]
            while path:
                v = path[-1]
                out = outs[-1]
                i = position[-1]
                if i < len(out):
                    position[-1] = i + 1
                    w = out[i]
                    if where[w] != cur:
                        continue
                    work += 1
                    if w == v:
                        flags[v] |= 2
                    if seen[w] != here:
                        seen[w] = here
                        index[w] = low[w] = counter
                        counter += 1
                        flags[w] = 0
                        stack.append(w)
                        path.append(w)
                        outs.append((move[w],) if owner[w] == player else successors[w])
                        position.append(0)
                    elif done[w] == here:
                        flags[v] |= 1
                    elif index[w] < low[v]:
                        low[v] = index[w]
                    continue
                path.pop()
                outs.pop()
                position.pop()
                if path:
                    parent = path[-1]
                    if low[v] < low[parent]:
                        low[parent] = low[v]
                if low[v] != index[v]:
                    continue
                component: list[int] = []
                marks = 0
                while True:
                    x = stack.pop()
                    done[x] = here
                    component.append(x)
                    marks |= flags[x]
                    if x == v:
                        break
                if path:
                    flags[path[-1]] |= 1
                if marks & 1 or (len(component) == 1 and not marks & 2):
                    continue
                self.learn(component, player, dominion)
        self.budget.charge(work + counter)
        return dominion

    def learn(self, component: list[int], player: int, dominion: list[int]) -> None:
        """Record a bottom SCC as a tangle, or add it to the dominion when it has no escape."""
        where = self.where
        owner = self.owner
        priority = self.priority
        inside = set(component)
        escapes: list[int] = []
        seen: set[int] = set()
        top = -1
        for v in component:
            if priority[v] > top:
                top = priority[v]
            if owner[v] != player:
                for x in self.successors[v]:
                    if x not in inside and x not in seen and where[x] != SOLVED:
                        seen.add(x)
                        escapes.append(x)
        self.budget.charge(len(component) + len(escapes))
        if not escapes:
            dominion.extend(component)
            return
        t = len(self.t_priority)
        self.t_vertices.append(component)
        self.t_escapes.append(escapes)
        self.t_moves.append([self.move[v] if owner[v] == player else -1 for v in component])
        self.t_priority.append(top)
        self.t_live.append(len(escapes))
        self.t_count.append(0)
        self.t_stamp.append(0)
        for x in escapes:
            self.attached[x].append(t)

    def solve_dominion(self, seeds: list[int], player: int) -> None:
        """Extend a dominion to the player's attractor in the unsolved game and solve it.

        Opponent vertices count down their unsolved successors; tangles of the player join
        once all their unsolved escapes have.
        """
        self.tick += 1
        here = self.tick
        marker = -2 - here
        where = self.where
        move = self.move
        owner = self.owner
        live = self.live
        predecessors = self.predecessors
        attached = self.attached
        t_priority = self.t_priority
        t_count = self.t_count
        t_stamp = self.t_stamp
        counted: dict[int, int] = {}
        for v in seeds:
            where[v] = marker
        queue = list(seeds)
        work = 0
        for w in queue:
            preds = predecessors[w]
            work += len(preds)
            for u in preds:
                at = where[u]
                if at == marker or at == SOLVED:
                    continue
                if owner[u] == player:
                    where[u] = marker
                    move[u] = w
                    queue.append(u)
                    continue
                left = counted.get(u, live[u]) - 1
                counted[u] = left
                if not left:
                    where[u] = marker
                    queue.append(u)
            for t in attached[w]:
                tp = t_priority[t]
                if tp < 0 or tp & 1 != player:
                    continue
                if t_stamp[t] != marker:
                    t_stamp[t] = marker
                    left = self.t_live[t] - 1
                else:
                    left = t_count[t] - 1
                t_count[t] = left
                if left:
                    continue
                inside = self.t_vertices[t]
                t_priority[t] = -1
                if any(where[x] == SOLVED for x in inside):
                    continue
                work += len(inside)
                for x, pick in zip(inside, self.t_moves[t], strict=True):
                    if where[x] != marker:
                        where[x] = marker
                        move[x] = pick
                        queue.append(x)
        winner = self.winner
        strategy = self.strategy
        t_live = self.t_live
        for v in queue:
            where[v] = SOLVED
            winner[v] = player
            strategy[v] = move[v] if owner[v] == player else -1
            for u in predecessors[v]:
                live[u] -= 1
            for t in attached[v]:
                t_live[t] -= 1
        self.unsolved -= len(queue)
        self.budget.charge(work + 2 * len(queue))
