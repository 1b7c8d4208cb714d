"""Recursive tangle learning (van Dijk; the ``rtl`` solver of the Oink collection).

Tangles are those of ``_tangle``: strongly connected sets with a strategy of one player under
which every cycle inside is that player's, which the opponent leaves only through escapes.
Tangle learning proper splits the whole game into regions once per pass and learns only in
closed regions. The recursive variant also looks inside a region that leaks: once a region
of player ``a`` is built and some head is open (one of ``a``'s with no move into the region,
or one of the opponent's with a move below it), the opponent's attractor of the open heads
(tangles of the opponent included) is taken out of the region and what is left is split
again in the same way, as a game of its own. A closed region (no head open; the lowest one
of every subgame counts as closed) has every strongly connected component of its strategy
graph learnt as a tangle. So the tangles inside a leaking region are learnt in the same pass
as the region, which is what the two-counter games of van Dijk ("A parity game tale of two
counters", 2019) deny to Zielonka's algorithm, priority promotion and plain tangle learning.
Oink's version also splits a closed region again once its top head's attractor is taken
out; that measured slower here, on those games and on random ones alike, so it is left out.

A tangle without escapes is a dominion: it is extended to its player's attractor (tangles
included) in the whole unsolved game and solved. Unlike Oink's, the pass then goes on with
the next region instead of starting again from the top: every region built afterwards is
still an attractor in what is left unsolved, so what it yields is still a tangle or a
dominion, and on games solved one dominion at a time (PGSolver's Jurdzinski game: 3,541
dominions at 60 x 60) this saves rebuilding the regions above it once per dominion. The
next pass starts from the top. A pass that learns nothing new and solves nothing would mean
the search is stuck (never seen on the test and benchmark games); rather than loop, the
solver then hands what is left, a game of its own, to tangle learning.

The solver works on the vertices renumbered by falling priority, so a subgame is a sorted
list and its top is its first free entry. ``where[v]`` is a label: every region and every
attractor gets a fresh one, so the free vertices of a subgame inside a region are exactly
those still carrying the region's label, and no set is ever copied or cleared. At the top
of a pass every unsolved vertex gets a fresh label; ``SOLVED`` is above every label.
Opponent vertices and tangles count their successors (escapes) that may still keep them
out, counted once per label when first met.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator, Iterator, Sequence

from grounded_decision.statechart._parity_core import Budget
from grounded_decision.statechart._tangle import SOLVED, solve_tangles

__all__ = ["RecursiveTangleSolver", "solve_recursive_tangles"]


def solve_recursive_tangles(
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
    a successor among them; the answer elsewhere is -1), the others being left out.

    Raises:
        ParityUnsolved: when the budget is spent.
    """
    solver = RecursiveTangleSolver(successors, predecessors, owner, priority, budget, vertices)
    deque(solver.steps(), maxlen=0)  # run every step; the answer is the solver's state
    return solver.answer()


class RecursiveTangleSolver:
    """One solve, run a region at a time (``steps``) so that it can take turns with another.

    Every list is indexed by local vertex numbers: ``vertex[i]`` is the game's vertex that
    ranks ``i``-th by falling priority.
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
        size = len(priority)
        every = range(size) if vertices is None else vertices
        vertex = sorted(every, key=priority.__getitem__, reverse=True)
        local = [-1] * size
        for i, v in enumerate(vertex):
            local[v] = i
        at = local.__getitem__
        self.game = (successors, predecessors, owner, priority)
        self.vertex = vertex
        self.succ = [[w for w in map(at, successors[v]) if w >= 0] for v in vertex]
        self.pred = [[u for u in map(at, predecessors[v]) if u >= 0] for v in vertex]
        self.own = [owner[v] for v in vertex]
        self.par = [priority[v] & 1 for v in vertex]
        self.budget = budget
        n = len(vertex)
        self.where = [-1] * n
        self.move = [-1] * n
        self.winner = [-1] * n
        self.label = 0
        self.count = [0] * n
        self.stamp = [0] * n
        self.order = list(range(n))
        self.start = 0
        self.unsolved = n
        self.attached: list[list[int]] = [[] for _ in range(n)]
        self.t_player: list[int] = []
        self.t_vertices: list[list[int]] = []
        self.t_moves: list[list[int]] = []
        self.t_escapes: list[list[int]] = []
        self.t_count: list[int] = []
        self.t_stamp: list[int] = []
        self.known: set[tuple[int, ...]] = set()
        self.index = [0] * n
        self.low = [0] * n
        self.seen = [0] * n
        self.done = [0] * n
        self.fallback: tuple[list[int], list[int]] | None = None

    def fresh(self) -> int:
        """A label no vertex carries yet."""
        self.label += 1
        return self.label

    def steps(self) -> Iterator[None]:
        """Run passes until every vertex is solved, pausing before each region."""
        where = self.where
        while self.unsolved:
            if len(self.order) > 2 * self.unsolved:
                self.order = [v for v in self.order if where[v] != SOLVED]
                self.start = 0
            k = self.start
            while where[self.order[k]] == SOLVED:
                k += 1
            self.start = k
            progress = yield from self.search()
            if not progress:
                self.finish_with_tangles()
                return

    def answer(self) -> tuple[list[int], list[int]]:
        """``(winner, strategy)`` over the game's vertices once ``steps`` has run out."""
        if self.fallback is not None:
            return self.fallback
        successors = self.game[0]
        winner = [-1] * len(successors)
        strategy = [-1] * len(successors)
        vertex = self.vertex
        for i, v in enumerate(vertex):
            winner[v] = self.winner[i]
            pick = self.move[i]
            if pick >= 0 and self.own[i] == self.winner[i]:
                strategy[v] = vertex[pick]
        return winner, strategy

    def finish_with_tangles(self) -> None:
        """Solve with tangle learning the subgame left when a pass made no progress.

        What is left after taking out attractors of dominions is a game of its own, whose
        regions are those of the whole game; so tangle learning's answer there completes
        this one.
        """
        answer = self.answer()
        rest = [self.vertex[i] for i in range(len(self.vertex)) if self.where[i] != SOLVED]
        successors, predecessors, owner, priority = self.game
        winner, strategy = solve_tangles(
            successors, predecessors, owner, priority, budget=self.budget, vertices=rest
        )
        for v in rest:
            answer[0][v] = winner[v]
            answer[1][v] = strategy[v]
        self.fallback = answer

    def search(self) -> Generator[None, None, bool]:
        """One pass over the unsolved game; returns whether it learnt or solved anything.

        A frame is a subgame: ``(label, vertices, cursor)``, its free vertices being those
        that carry its label. The top frame is the unsolved game, whose vertices all get a
        fresh label first; every other one is what is left of a region of its parent.
        """
        where = self.where
        move = self.move
        own = self.own
        par = self.par
        pred = self.pred
        succ = self.succ
        count = self.count
        stamp = self.stamp
        attached = self.attached
        t_player = self.t_player
        t_vertices = self.t_vertices
        t_moves = self.t_moves
        t_escapes = self.t_escapes
        t_count = self.t_count
        t_stamp = self.t_stamp
        budget = self.budget
        learnt = len(t_player)
        solved = False
        top = self.fresh()
        for v in self.order:
            if where[v] != SOLVED:
                where[v] = top
        budget.charge(len(self.order))
        frames: list[tuple[int, list[int], list[int]]] = [(top, self.order, [self.start])]
        while frames:
            free, order, cursor = frames[-1]
            end = len(order)
            k = cursor[0]
            while k < end and where[order[k]] != free:
                k += 1
            if k == end:
                frames.pop()
                continue
            yield
            region = self.fresh()
            player = par[order[k]]
            heads: list[int] = []
            members: list[int] = []
            work = 0
            while k < end:
                v = order[k]
                if where[v] != free:
                    k += 1
                    continue
                if par[v] != player:
                    break
                k += 1
                where[v] = region
                move[v] = -1
                heads.append(v)
                queue = [v]
                for w in queue:
                    preds = pred[w]
                    work += len(preds)
                    for u in preds:
                        if where[u] != free:
                            continue
                        if own[u] == player:
                            where[u] = region
                            move[u] = w
                            queue.append(u)
                            continue
                        if stamp[u] != region:
                            stamp[u] = region
                            left = -1
                            out = succ[u]
                            work += len(out)
                            for x in out:
                                there = where[x]
                                if there == region or there == free:
                                    left += 1
                        else:
                            left = count[u] - 1
                        count[u] = left
                        if not left:
                            where[u] = region
                            move[u] = -1
                            queue.append(u)
                    for t in attached[w]:
                        if t_player[t] != player:
                            continue
                        if t_stamp[t] != region:
                            t_stamp[t] = region
                            left = -1
                            out = t_escapes[t]
                            work += len(out)
                            for x in out:
                                there = where[x]
                                if there == region or there == free:
                                    left += 1
                        else:
                            left = t_count[t] - 1
                        t_count[t] = left
                        if left:
                            continue
                        inside = t_vertices[t]
                        work += len(inside)
                        gains = False
                        for x in inside:
                            there = where[x]
                            if there == region:
                                continue
                            if there == free:
                                gains = True
                                continue
                            if there == SOLVED:
                                t_player[t] = -1
                            break
                        else:
                            if gains:
                                for x, pick in zip(inside, t_moves[t], strict=True):
                                    if where[x] == free:
                                        where[x] = region
                                        move[x] = pick
                                        queue.append(x)
                members.extend(queue)
            cursor[0] = k
            budget.charge(work + len(members))
            opened = self.open_heads(heads, region, player, free, k == end)
            if not opened:
                dominion = self.extract(heads, region, player)
                if dominion:
                    self.solve_dominion(dominion, player)
                    solved = True
                continue
            rest = self.remove(opened, region, 1 - player, members)
            if rest:
                frames.append((region, rest, [0]))
        return solved or len(t_player) > learnt

    def open_heads(
        self, heads: list[int], region: int, player: int, free: int, lowest: bool
    ) -> list[int]:
        """Pick the player's heads' moves; return the heads through which the opponent can
        leave the region downwards (none in the lowest region, which counts as closed).

        Every other vertex was attracted, so only heads can leave: a head of the player
        with no move into the region, or one of the opponent's with a move to a free vertex
        of the subgame. (A head's move is picked here, once, rather than whenever a
        successor joins the region, which would cost a test per edge into the region.)
        """
        where = self.where
        move = self.move
        own = self.own
        succ = self.succ
        opened: list[int] = []
        work = len(heads)
        for h in heads:
            out = succ[h]
            if own[h] == player:
                if move[h] < 0:
                    work += len(out)
                    for x in out:
                        if where[x] == region:
                            move[h] = x
                            break
                    else:
                        opened.append(h)
            elif not lowest:
                work += len(out)
                for x in out:
                    if where[x] == free:
                        opened.append(h)
                        break
        self.budget.charge(work)
        return [] if lowest else opened

    def remove(self, seeds: list[int], region: int, player: int, members: list[int]) -> list[int]:
        """Take ``player``'s attractor of ``seeds`` (tangles included) out of the region.

        Returns what is left of the region, sorted (by falling priority), as the next
        subgame; it keeps the region's label.
        """
        where = self.where
        own = self.own
        pred = self.pred
        succ = self.succ
        count = self.count
        stamp = self.stamp
        attached = self.attached
        t_player = self.t_player
        t_escapes = self.t_escapes
        t_count = self.t_count
        t_stamp = self.t_stamp
        t_vertices = self.t_vertices
        taken = self.fresh()
        for s in seeds:
            where[s] = taken
        queue = list(seeds)
        work = 0
        for w in queue:
            preds = pred[w]
            work += len(preds)
            for u in preds:
                if where[u] != region:
                    continue
                if own[u] == player:
                    where[u] = taken
                    queue.append(u)
                    continue
                if stamp[u] != taken:
                    stamp[u] = taken
                    left = -1
                    out = succ[u]
                    work += len(out)
                    for x in out:
                        there = where[x]
                        if there == region or there == taken:
                            left += 1
                else:
                    left = count[u] - 1
                count[u] = left
                if not left:
                    where[u] = taken
                    queue.append(u)
            for t in attached[w]:
                if t_player[t] != player:
                    continue
                if t_stamp[t] != taken:
                    t_stamp[t] = taken
                    left = -1
                    out = t_escapes[t]
                    work += len(out)
                    for x in out:
                        there = where[x]
                        if there == region or there == taken:
                            left += 1
                else:
                    left = t_count[t] - 1
                t_count[t] = left
                if left:
                    continue
                inside = t_vertices[t]
                work += len(inside)
                gains = False
                for x in inside:
                    there = where[x]
                    if there == region:
                        gains = True
                    elif there != taken:
                        break
                else:
                    if gains:
                        for x in inside:
                            if where[x] == region:
                                where[x] = taken
                                queue.append(x)
        rest = [v for v in members if where[v] == region]
        rest.sort()
        self.budget.charge(work + len(members))
        return rest

    def extract(self, heads: list[int], region: int, player: int) -> list[int]:
        """Learn every strongly connected component, reachable from the heads, of the
        region's strategy graph (the player's chosen moves and all the opponent's moves
        inside the region) that holds a cycle; return the vertices of those without
        escapes (dominions).

        Every cycle there passes a head and its top priority is the player's, so each such
        component is a tangle. Tarjan's algorithm, iteratively.
        """
        where = self.where
        own = self.own
        move = self.move
        succ = self.succ
        index = self.index
        low = self.low
        seen = self.seen
        done = self.done
        counter = 0
        stack: list[int] = []
        dominion: list[int] = []
        work = 0
        for root in heads:
            if seen[root] == region:
                continue
            seen[root] = region
            index[root] = low[root] = counter
            counter += 1
            stack.append(root)
            path = [root]
            outs: list[Sequence[int]] = [self.edges(root, player)]
            position = [0]
            while path:
                v = path[-1]
                out = outs[-1]
                i = position[-1]
                if i < len(out):
                    position[-1] = i + 1
                    w = out[i]
                    if where[w] != region:
                        continue
                    work += 1
                    if seen[w] != region:
                        seen[w] = region
                        index[w] = low[w] = counter
                        counter += 1
                        stack.append(w)
                        path.append(w)
                        outs.append(self.edges(w, player))
                        position.append(0)
                    elif done[w] != region and index[w] < low[v]:
                        low[v] = index[w]
                    continue
                path.pop()
                outs.pop()
                position.pop()
                if path and low[v] < low[path[-1]]:
                    low[path[-1]] = low[v]
                if low[v] != index[v]:
                    continue
                component: list[int] = []
                while True:
                    x = stack.pop()
                    done[x] = region
                    component.append(x)
                    if x == v:
                        break
                if len(component) == 1:
                    x = component[0]
                    looped = move[x] == x if own[x] == player else x in succ[x]
                    if not looped:
                        continue
                self.learn(component, player, dominion)
        self.budget.charge(work + counter)
        return dominion

    def edges(self, v: int, player: int) -> Sequence[int]:
        """``v``'s edges in a region's strategy graph: the player's pick (none if it has
        no move into the region), or all the opponent's moves."""
        if self.own[v] != player:
            return self.succ[v]
        pick = self.move[v]
        return (pick,) if pick >= 0 else ()

    def learn(self, component: list[int], player: int, dominion: list[int]) -> None:
        """Record a component as a tangle, or add it to the dominion when it has no escape.

        Escapes are the opponent's moves out of it to unsolved vertices outside the
        dominions already found; a tangle of the same player and vertices as a known one is
        not learnt twice.
        """
        where = self.where
        own = self.own
        inside = set(component)
        escapes: list[int] = []
        found: set[int] = set()
        ruled_out = set(dominion)
        for v in component:
            if own[v] != player:
                for x in self.succ[v]:
                    if x in inside or x in found or x in ruled_out or where[x] == SOLVED:
                        continue
                    found.add(x)
                    escapes.append(x)
        self.budget.charge(len(component) + len(escapes))
        if not escapes:
            dominion.extend(component)
            return
        key = (player, *sorted(component))
        if key in self.known:
            return
        self.known.add(key)
        t = len(self.t_player)
        self.t_player.append(player)
        self.t_vertices.append(component)
        self.t_moves.append([self.move[v] if own[v] == player else -1 for v in component])
        self.t_escapes.append(escapes)
        self.t_count.append(0)
        self.t_stamp.append(0)
        for x in escapes:
            self.attached[x].append(t)

    def solve_dominion(self, seeds: list[int], player: int) -> None:
        """Extend a dominion to the player's attractor (tangles included) in the unsolved
        game and solve it for the player."""
        where = self.where
        move = self.move
        own = self.own
        pred = self.pred
        succ = self.succ
        count = self.count
        stamp = self.stamp
        attached = self.attached
        t_player = self.t_player
        t_escapes = self.t_escapes
        t_count = self.t_count
        t_stamp = self.t_stamp
        t_vertices = self.t_vertices
        t_moves = self.t_moves
        taken = self.fresh()
        for s in seeds:
            where[s] = taken
        queue = list(seeds)
        work = 0
        for w in queue:
            preds = pred[w]
            work += len(preds)
            for u in preds:
                here = where[u]
                if here == taken:
                    if move[u] < 0 and own[u] == player:
                        move[u] = w
                    continue
                if here == SOLVED:
                    continue
                if own[u] == player:
                    where[u] = taken
                    move[u] = w
                    queue.append(u)
                    continue
                if stamp[u] != taken:
                    stamp[u] = taken
                    out = succ[u]
                    work += len(out)
                    left = -1
                    for x in out:
                        if where[x] != SOLVED:
                            left += 1
                else:
                    left = count[u] - 1
                count[u] = left
                if not left:
                    where[u] = taken
                    move[u] = -1
                    queue.append(u)
            for t in attached[w]:
                if t_player[t] != player:
                    continue
                if t_stamp[t] != taken:
                    t_stamp[t] = taken
                    out = t_escapes[t]
                    work += len(out)
                    left = -1
                    for x in out:
                        if where[x] != SOLVED:
                            left += 1
                else:
                    left = t_count[t] - 1
                t_count[t] = left
                if left:
                    continue
                inside = t_vertices[t]
                t_player[t] = -1
                work += len(inside)
                if any(where[x] == SOLVED for x in inside):
                    continue
                for x, pick in zip(inside, t_moves[t], strict=True):
                    if where[x] != taken:
                        where[x] = taken
                        move[x] = pick
                        queue.append(x)
        winner = self.winner
        for v in queue:
            where[v] = SOLVED
            winner[v] = player
        self.unsolved -= len(queue)
        self.budget.charge(work + len(queue))
