"""An independent check of a parity-game solution: do its strategies prove its regions?

The check shares no code with the solvers. It needs the winner of every vertex and, at
every vertex whose owner wins, the successor that owner picks. It then confirms that

1. each region is closed: at a vertex the winner owns, the chosen successor stays in the
   region; at a vertex the loser owns, every successor does;
2. inside each region, on the graph the winner's choices leave (one edge at the winner's
   vertices, every edge at the loser's), no cycle has a top priority of the loser's parity.

Part 2 splits the graph into strongly connected components and, inside a component, drops
every vertex above its highest loser-parity priority (a losing cycle cannot pass through
them) and splits what is left again, until each piece is acyclic or shows a losing cycle.
A solution that passes is a pair of positional winning strategies, so the regions are
exactly the winning regions (parity games are determined).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from grounded_decision.errors import CertificateError
from grounded_decision.statechart.game import GameGraph

__all__ = ["Certificate", "check_certificate", "verify_certificate"]


@attrs.frozen
class Certificate:
    """The verdict of ``check_certificate``.

    Parameters:
        valid: whether the strategies prove the regions.
        problem: what is wrong, naming a vertex, when not valid.
        vertex: that vertex, when there is one.

    .. versionadded:: Unreleased
    """

    valid: bool
    problem: str | None = None
    vertex: int | None = None


def _name(game: GameGraph, v: int) -> str:
    return f"vertex {v} ({game.names[v]!r})"


def check_certificate(
    game: GameGraph, winner: Sequence[int], strategy: Sequence[int]
) -> Certificate:
    """Check that ``strategy`` wins every vertex ``winner`` gives to each player.

    Parameters:
        game: the game.
        winner: ``0`` or ``1`` per vertex.
        strategy: per vertex, the successor its owner picks when the owner is the winner
            there (any value elsewhere).

    Returns:
        A ``Certificate``; ``valid`` is false with the first problem found.
    """
    n = len(game)
    if len(winner) != n or len(strategy) != n:
        return Certificate(
            False,
            f"the solution has {len(winner)} winners and {len(strategy)} strategy entries"
            f" for {n} vertices; give one of each per vertex",
        )
    owner = game.owner
    successors = game.successors
    for v in range(n):
        side = winner[v]
        if side not in (0, 1):
            return Certificate(False, f"{_name(game, v)} has winner {side!r}; use 0 or 1", v)
        if owner[v] == side:
            move = strategy[v]
            if move not in successors[v]:
                return Certificate(
                    False, f"{_name(game, v)}: its winner picks {move!r}, not a successor", v
                )
            if winner[move] != side:
                return Certificate(
                    False, f"{_name(game, v)}: its winner's pick {move} leaves the region", v
                )
        else:
            for w in successors[v]:
                if winner[w] != side:
                    return Certificate(
                        False,
                        f"{_name(game, v)}: the loser can move to {w}, outside player"
                        f" {side}'s region",
                        v,
                    )
    for side in (0, 1):
        bad = _losing_cycle(game, winner, strategy, side)
        if bad is not None:
            return Certificate(
                False,
                f"{_name(game, bad)} lies on a cycle in player {side}'s region whose top"
                f" priority {game.priority[bad]} is the opponent's",
                bad,
            )
    return Certificate(True)


def verify_certificate(game: GameGraph, winner: Sequence[int], strategy: Sequence[int]) -> None:
    """Raise unless ``check_certificate`` accepts the solution.

    Raises:
        CertificateError: naming the problem and the vertex at fault.
    """
    verdict = check_certificate(game, winner, strategy)
    if not verdict.valid:
        msg = f"the parity solution is not proven: {verdict.problem}"
        raise CertificateError(msg, vertex=verdict.vertex)


def _losing_cycle(
    game: GameGraph, winner: Sequence[int], strategy: Sequence[int], side: int
) -> int | None:
    """Return the top vertex of a cycle losing for ``side`` in its region, or ``None``."""
    n = len(game)
    priority = game.priority
    owner = game.owner
    out: list[Sequence[int]] = [
        (strategy[v],) if owner[v] == side else game.successors[v] for v in range(n)
    ]
    piece = [-1] * n
    pieces = [[v for v in range(n) if winner[v] == side]]
    label = 0
    while pieces:
        members = pieces.pop()
        for v in members:
            piece[v] = label
        for component in _components(members, out, piece, label):
            if len(component) == 1:
                v = component[0]
                if v not in out[v]:
                    continue
            worst = -1
            worst_vertex = -1
            for v in component:
                if priority[v] % 2 != side and priority[v] > worst:
                    worst = priority[v]
                    worst_vertex = v
            if worst < 0:
                continue
            if max(priority[v] for v in component) == worst:
                return worst_vertex
            pieces.append([v for v in component if priority[v] <= worst])
        label += 1
    return None


def _components(
    members: list[int], out: list[Sequence[int]], piece: list[int], label: int
) -> list[list[int]]:
    """Tarjan's strongly connected components of the vertices labelled ``label``, iteratively."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    found: list[list[int]] = []
    counter = 0
    for root in members:
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(out[root]))]
        while work:
            v, edges = work[-1]
            advanced = False
            for w in edges:
                if piece[w] != label:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(out[w])))
                    advanced = True
                    break
                if w in on_stack and index[w] < low[v]:
                    low[v] = index[w]
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                if low[v] < low[parent]:
                    low[parent] = low[v]
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                found.append(component)
    return found
