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
from typing import TYPE_CHECKING, Final

import attrs

from grounded_decision.errors import CertificateError
from grounded_decision.statechart.game import GameGraph, _arrays_module_of

if TYPE_CHECKING:
    from grounded_decision.statechart.arrays import ArrayGame

__all__ = ["Certificate", "check_certificate", "verify_certificate"]

#: how many characters of a vertex name or a strategy value one problem shows: the
#: names come from the game file, and a name of ten megabytes must not make a problem
#: (and the line a command prints of it) of ten megabytes
_SHOWN: Final = 200


def _shown(value: object) -> str:
    """``value`` as ``repr`` writes it, cut past ``_SHOWN`` characters with a note."""
    # imported here, not at the top: checking a certificate loads no solvi until a
    # problem has a value to show
    from solvi._terminal import visible

    return visible(repr(value), _SHOWN)


@attrs.frozen
class Certificate:
    """The verdict of ``check_certificate``.

    Parameters:
        valid: whether the strategies prove the regions.
        problem: what is wrong, naming a vertex, when not valid (a vertex's name and
            a strategy value as ``repr`` writes them, cut past 200 characters).
        vertex: that vertex, when there is one.

    .. versionadded:: Unreleased
    """

    valid: bool
    problem: str | None = None
    vertex: int | None = None


@attrs.frozen
class _Labels:
    """How messages name vertices: by index, or by the game file's ids when given."""

    game: GameGraph
    ids: Sequence[int] | None

    def of(self, v: int) -> str:
        """``v`` as the file names it (its index when there are no ids)."""
        return str(v if self.ids is None else self.ids[v])

    def vertex(self, v: int) -> str:
        """``vertex ID ('name')``; the name is left out when it only repeats the id, and
        cut past ``_SHOWN`` characters."""
        label = self.of(v)
        name = self.game.names[v]
        return f"vertex {label}" if name == label else f"vertex {label} ({_shown(name)})"

    def pick(self, move: object) -> str:
        """A strategy entry: a vertex by its label, anything else as given."""
        if isinstance(move, int) and not isinstance(move, bool) and 0 <= move < len(self.game):
            return self.of(move)
        return _shown(move)


def _checked_ids(game: GameGraph, ids: Sequence[int] | None) -> Sequence[int] | None:
    if ids is not None and len(ids) != len(game):
        msg = (
            f"check_certificate: ids has {len(ids)} entries for {len(game)} vertices;"
            " pass the ids read_pgsolver_with_ids returned with this game"
        )
        raise ValueError(msg)
    return ids


def check_certificate(
    game: GameGraph | ArrayGame,
    winner: Sequence[int],
    strategy: Sequence[int],
    *,
    ids: Sequence[int] | None = None,
) -> Certificate:
    """Check that ``strategy`` wins every vertex ``winner`` gives to each player.

    Parameters:
        game: the game; an ``arrays.ArrayGame`` is checked by compiled code (the same
            checks and problems, vertices named by index) when numba is installed.
        winner: ``0`` or ``1`` per vertex (a sequence or a numpy array).
        strategy: per vertex, the successor its owner picks when the owner is the winner
            there (any value elsewhere).
        ids: the game file's id of each vertex (from ``read_pgsolver_with_ids``), so that
            ``problem`` names vertices as the file does; without, by index.
            ``Certificate.vertex`` stays the index either way, to look the vertex up in
            ``game``.

    Returns:
        A ``Certificate``; ``valid`` is false with the first problem found.

    Raises:
        ValueError: when ``ids`` does not have one entry per vertex, or is given with an
            ``ArrayGame``.

    .. versionchanged:: Unreleased ``ids``, ``ArrayGame``.
    """
    if isinstance(game, GameGraph):
        arrays = None
        label = _Labels(game, _checked_ids(game, ids))
    else:
        arrays = _arrays_module_of(game, "check_certificate")
        if ids is not None:
            msg = "check_certificate: ids name the vertices of a GameGraph; an ArrayGame has none"
            raise ValueError(msg)
    n = len(game)
    if len(winner) != n or len(strategy) != n:
        return Certificate(
            False,
            f"the solution has {len(winner)} winners and {len(strategy)} strategy entries"
            f" for {n} vertices; give one of each per vertex",
        )
    if arrays is not None:
        verdict: Certificate = arrays._check(game, winner, strategy)
        return verdict
    assert isinstance(game, GameGraph)
    owner = game.owner
    successors = game.successors
    for v in range(n):
        side = winner[v]
        if side not in (0, 1):
            return Certificate(False, f"{label.vertex(v)} has winner {_shown(side)}; use 0 or 1", v)
        if owner[v] == side:
            move = strategy[v]
            if move == -1:
                return Certificate(
                    False,
                    f"{label.vertex(v)}: its owner wins it but has no pick (-1);"
                    " give the successor the owner moves to",
                    v,
                )
            if move not in successors[v]:
                return Certificate(
                    False,
                    f"{label.vertex(v)}: its winner picks {label.pick(move)}, not a successor",
                    v,
                )
            if winner[move] != side:
                return Certificate(
                    False,
                    f"{label.vertex(v)}: its winner's pick {label.of(move)} leaves the region",
                    v,
                )
        else:
            for w in successors[v]:
                if winner[w] != side:
                    return Certificate(
                        False,
                        f"{label.vertex(v)}: the loser can move to {label.of(w)}, outside player"
                        f" {side}'s region",
                        v,
                    )
    for side in (0, 1):
        bad = _losing_cycle(game, winner, strategy, side)
        if bad is not None:
            return Certificate(
                False,
                f"{label.vertex(bad)} lies on a cycle in player {side}'s region whose top"
                f" priority {game.priority[bad]} is the opponent's",
                bad,
            )
    return Certificate(True)


def verify_certificate(
    game: GameGraph | ArrayGame,
    winner: Sequence[int],
    strategy: Sequence[int],
    *,
    ids: Sequence[int] | None = None,
) -> None:
    """Raise unless ``check_certificate`` accepts the solution.

    Raises:
        CertificateError: naming the problem and the vertex at fault (``vertex`` is its
            index; the message uses ``ids`` when given, as ``check_certificate`` does).
        ValueError: when ``ids`` does not have one entry per vertex.

    .. versionchanged:: Unreleased ``ids``.
    """
    verdict = check_certificate(game, winner, strategy, ids=ids)
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
