"""Zielonka's algorithm for games without a depth cap: fewer levels and no needless re-solve.

Two well-known refinements of the recursion, both of which keep its answer:

- A level attracts the top vertex and then keeps taking the next free vertex as another head
  while it has the same parity (Verver's refinement), so priorities whose vertices in between
  were all attracted share one level.
- After the rest is solved, the opponent's attractor of its region there is grown only into
  this level's own vertices and the favoured player's part of the rest. When it gains
  nothing, the favoured player wins everything but the opponent's region, with no second
  solve; only when it gains something is the remainder solved afresh (as in Oink's Zielonka).

A vertex's ``state`` is ``-1`` while it is free (in the subgame being solved), ``-2`` when it
is left out, and
``2 * level + winner`` once a level has taken it, levels being numbered in the order they
start. Every vertex outside a level's subgame was taken by an earlier level, so "inside the
subgame of level ``r``" is ``state >= 2 * r``. The free vertices are found by scanning a list
sorted by priority from a cursor, and opponent vertices are attracted by counting their free
successors down.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from grounded_decision.statechart._parity_core import Budget, Rope, concat, flatten

__all__ = ["ZielonkaSolver"]

ABSENT = -2
"""``state`` of a vertex left out of the solve: neither free nor inside any level's subgame."""


class _Level:
    """One level: its number, the free list it scans, what it attracted and what it lost."""

    __slots__ = ("cursor", "heads", "ident", "lost", "order", "phase", "player", "pulled")

    def __init__(self, ident: int, order: list[int], cursor: int) -> None:
        self.ident = ident
        self.order = order
        self.cursor = cursor
        self.phase = 0
        self.player = 0
        self.pulled: list[int] = []
        self.heads: list[int] = []
        self.lost: Rope = None


class ZielonkaSolver:
    """One solve, run a step at a time (``steps``) so that it can take turns with another;
    ``answer`` then gives ``(winner, strategy)`` per vertex, ``strategy[v]`` being -1 where
    the owner loses.

    ``priority`` may have gaps. With ``vertices`` only those are solved (a subgame: each has
    a successor among them; the answer elsewhere is meaningless), and the others are skipped
    where they appear as predecessors. ``budget.charge`` raises ``ParityUnsolved`` once a
    budget is spent. The methods bind what they use to locals for speed.
    """

    pace = 1
    """Units of work this solver does in the time the Python solver does one (``auto``
    scales Zielonka's head start by it, so that the head start lasts as long either way)."""

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
        self.parity = [p & 1 for p in priority]
        self.budget = budget
        every = range(n) if vertices is None else vertices
        order = sorted(every, key=priority.__getitem__, reverse=True)
        position = [0] * n
        for i, v in enumerate(order):
            position[v] = i
        state = [-1] * n
        if vertices is not None:
            state = [ABSENT] * n
            for v in order:
                state[v] = -1
        self.order = order
        self.position = position
        self.state = state
        self.free = list(map(len, successors))
        self.indegree = list(map(len, predecessors))
        self.mark = [0] * n
        self.counted = [0] * n
        self.count = [0] * n
        self.strategy = [-1] * n
        self.stamp = 0

    def steps(self) -> Iterator[None]:
        """Run the recursion on an explicit stack, pausing before each step of a level."""
        stack = [_Level(0, self.order, 0)]
        next_id = 1
        result: tuple[Rope, Rope] = (None, None)
        while stack:
            yield
            level = stack[-1]
            if level.phase == 0:
                if not self.attract_top(level):
                    result = (None, None)
                    stack.pop()
                    continue
                level.phase = 1
                stack.append(_Level(next_id, level.order, level.cursor))
                next_id += 1
                continue
            player = level.player
            other = 1 - player
            if level.phase == 1:
                gained = self.attract_losing(level) if result[other] is not None else []
                if not gained:
                    self.fix_heads(level)
                    if player:
                        result = (result[0], concat(level.pulled, result[1]))
                    else:
                        result = (concat(level.pulled, result[0]), result[1])
                    stack.pop()
                    continue
                rest = self.release(level, flatten(result[player]))
                level.lost = concat(gained, result[other])
                level.phase = 2
                stack.append(_Level(next_id, rest, 0))
                next_id += 1
                continue
            if player:
                result = (concat(level.lost, result[0]), result[1])
            else:
                result = (result[0], concat(level.lost, result[1]))
            stack.pop()

    def answer(self) -> tuple[list[int], list[int]]:
        """Read ``(winner, strategy)`` off the states once ``steps`` has run out."""
        winner = [s & 1 for s in self.state]
        strategy = self.strategy
        owner = self.owner
        for v, side in enumerate(winner):
            if owner[v] != side:
                strategy[v] = -1
        return winner, strategy

    def attract_top(self, level: _Level) -> bool:
        """Attract for the top free vertex's player, heads until the parity changes.

        Returns False when the level's subgame is empty.
        """
        order = level.order
        k = level.cursor
        end = len(order)
        state = self.state
        while k < end and state[order[k]] >= 0:
            k += 1
        if k == end:
            return False
        parity = self.parity
        owner = self.owner
        strategy = self.strategy
        free = self.free
        predecessors = self.predecessors
        player = parity[order[k]]
        code = 2 * level.ident + player
        out: list[int] = []
        heads: list[int] = []
        while True:
            while k < end and state[order[k]] >= 0:
                k += 1
            if k == end or parity[order[k]] != player:
                break
            v = order[k]
            state[v] = code
            strategy[v] = -1
            heads.append(v)
            queue = [v]
            for w in queue:
                for u in predecessors[w]:
                    if state[u] != -1:
                        continue
                    left = free[u] - 1
                    free[u] = left
                    if not left or owner[u] == player:
                        state[u] = code
                        strategy[u] = w
                        queue.append(u)
            out.extend(queue)
        level.player = player
        level.cursor = k
        level.pulled = out
        level.heads = heads
        self.budget.charge(len(out) + sum(map(self.indegree.__getitem__, out)))
        return True

    def attract_losing(self, level: _Level) -> list[int]:
        """Grow the opponent's region of the rest into this level's vertices and region.

        Only a head can have a move straight into the opponent's region (every other vertex
        of the level was attracted into it), so the heads seed the attractor; it then
        spreads back along predecessors through what the favoured player had won.
        """
        self.stamp += 1
        here = self.stamp
        floor = 2 * level.ident
        player = level.player
        other = 1 - player
        lost = floor + other
        state = self.state
        owner = self.owner
        mark = self.mark
        counted = self.counted
        count = self.count
        strategy = self.strategy
        successors = self.successors
        predecessors = self.predecessors
        out: list[int] = []
        work = 0
        for v in level.heads:
            succ = successors[v]
            work += len(succ)
            if owner[v] == player:
                for x in succ:
                    s = state[x]
                    if s >= floor and s & 1 == player:
                        break
                else:
                    mark[v] = here
                    strategy[v] = -1
                    out.append(v)
            else:
                for x in succ:
                    s = state[x]
                    if s >= floor and s & 1 == other:
                        mark[v] = here
                        strategy[v] = x
                        out.append(v)
                        break
        for v in out:
            state[v] = lost
        for w in out:
            preds = predecessors[w]
            work += len(preds)
            for u in preds:
                s = state[u]
                if s < floor or s & 1 != player:
                    continue
                if owner[u] == other:
                    mark[u] = here
                    state[u] = lost
                    strategy[u] = w
                    out.append(u)
                    continue
                if counted[u] != here:
                    counted[u] = here
                    left = -1
                    succ = successors[u]
                    for x in succ:
                        s = state[x]
                        if s >= floor and (s & 1 == player or mark[x] == here):
                            left += 1
                    work += len(succ)
                else:
                    left = count[u] - 1
                count[u] = left
                if not left:
                    mark[u] = here
                    state[u] = lost
                    strategy[u] = -1
                    out.append(u)
        self.budget.charge(work + len(out))
        return out

    def fix_heads(self, level: _Level) -> None:
        """Give each head the favoured player owns a move into the favoured player's region."""
        player = level.player
        floor = 2 * level.ident
        state = self.state
        strategy = self.strategy
        owner = self.owner
        for v in level.heads:
            if owner[v] != player:
                continue
            move = strategy[v]
            if move >= 0:
                s = state[move]
                if s >= floor and s & 1 == player:
                    continue
            for x in self.successors[v]:
                s = state[x]
                if s >= floor and s & 1 == player:
                    strategy[v] = x
                    break

    def release(self, level: _Level, won: list[int]) -> list[int]:
        """Free what the favoured player still holds, to be solved afresh; return it sorted.

        Nothing else is free at this point (the rest was solved to the last vertex), so each
        released vertex's free successors are counted among the released ones.
        """
        player = level.player
        state = self.state
        rest = [v for v in level.pulled if state[v] & 1 == player]
        rest.extend(v for v in won if state[v] & 1 == player)
        for v in rest:
            state[v] = -1
        free = self.free
        successors = self.successors
        for v in rest:
            left = 0
            for x in successors[v]:
                if state[x] < 0:
                    left += 1
            free[v] = left
        rest.sort(key=self.position.__getitem__)
        self.budget.charge(len(level.pulled) + len(won) + 2 * len(rest))
        return rest
