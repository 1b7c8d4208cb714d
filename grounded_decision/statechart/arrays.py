"""Parity games held in flat numpy arrays, for games of millions of vertices.

A ``GameGraph`` keeps every vertex's moves as Python tuples with events and weights, which
a statechart needs and a policy's few hundred states afford. A parity game of tens of
millions of vertices and edges does not: building its tuples takes minutes and gigabytes
before any solving starts. An ``ArrayGame`` keeps the same game the way compiled solvers
do, as an owner and a priority per vertex and the moves in compressed rows (``offsets``
and ``targets``), and ``solve_parity`` and ``check_certificate`` solve and check it with
compiled passes from end to end (peeling, the order by priority, the refined Zielonka,
the checker), never making a Python object per vertex.

numpy and numba come with the ``fast`` extra: ``pip install 'solvi[fast]'``. Without numba
an ``ArrayGame`` is still solved and checked, through a ``GameGraph`` and the Python code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from grounded_decision.statechart.game import GameGraphError

try:
    import numpy as np
except ImportError as exc:  # pragma: no cover - numpy comes with the ``fast`` extra
    msg = "grounded_decision.statechart.arrays needs numpy: pip install 'solvi[fast]'"
    raise ImportError(msg) from exc

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from grounded_decision.statechart.certificate import Certificate
    from grounded_decision.statechart.game import GameGraph, Limits

__all__ = ["ArrayGame", "ArraySolution", "read_pgsolver_arrays"]


def _frozen(values: Any, dtype: Any, what: str) -> Any:
    """A read-only one-dimensional copy of ``values`` as ``dtype``, or a clear error."""
    try:
        array = np.array(values, dtype=dtype, copy=True)
    except (TypeError, ValueError, OverflowError) as exc:
        msg = f"ArrayGame.{what} must be whole numbers that fit {np.dtype(dtype).name}: {exc}"
        raise GameGraphError(msg) from None
    if array.ndim != 1:
        msg = f"ArrayGame.{what} must be one-dimensional, got shape {array.shape}"
        raise GameGraphError(msg)
    array.setflags(write=False)
    return array


def _owners(values: Any) -> NDArray[np.int8]:
    return _frozen(values, np.int8, "owner")  # type: ignore[no-any-return]


def _priorities(values: Any) -> NDArray[np.int64]:
    return _frozen(values, np.int64, "priority")  # type: ignore[no-any-return]


def _offsets(values: Any) -> NDArray[np.int64]:
    return _frozen(values, np.int64, "offsets")  # type: ignore[no-any-return]


def _targets(values: Any) -> NDArray[np.int32]:
    return _frozen(values, np.int32, "targets")  # type: ignore[no-any-return]


def _predecessors(offsets: Any, targets: Any) -> tuple[Any, Any]:
    """Every vertex's predecessors in increasing order, as ``(offsets, sources)``: a counting
    sort when numba is there, a stable sort otherwise."""
    from grounded_decision.statechart._zielonka_native import available

    if available():
        from grounded_decision.statechart import _game_kernel

        return _game_kernel.predecessors(offsets, targets)  # type: ignore[no-any-return]
    n = offsets.shape[0] - 1
    by_target = np.argsort(targets, kind="stable")
    sources = np.repeat(np.arange(n, dtype=np.int32), np.diff(offsets))[by_target]
    pred_offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(targets, minlength=n), out=pred_offsets[1:])
    return pred_offsets, sources


def _by_priority(priority: Any) -> Any:
    """The vertices from the highest priority down, stable: counting when numba is there and
    the priorities span at most a few times the vertices, a stable sort otherwise."""
    from grounded_decision.statechart._zielonka_native import available

    n = priority.shape[0]
    low, high = int(priority.min()), int(priority.max())
    if available() and high - low <= 4 * n + 1024:
        from grounded_decision.statechart import _game_kernel

        return _game_kernel.order_by_priority(priority, low, high)
    return np.argsort(-priority, kind="stable").astype(np.int32)


def _first(mask: Any) -> int:
    return int(np.flatnonzero(mask)[0])


@attrs.frozen(eq=False)
class ArrayGame:
    """A parity game as arrays: vertices ``0..n-1``, vertex ``v``'s moves are
    ``targets[offsets[v]:offsets[v + 1]]``.

    The arrays are copied, as int8, int64, int64 and int32, and made read-only, so the game
    cannot change under a solve. Moves are used as given: a move listed twice counts
    twice in ``steps``, never in the answer. Like ``GameGraph``, the game finds every
    vertex's predecessors when it is made (``pred_offsets`` and ``sources``, in the same
    form), and, as a compiled solver reorders a game it reads, the ``order`` of the vertices
    by priority, from the highest down; every solve needs both.

    Parameters:
        owner: ``0`` (controller, Even) or ``1`` (environment, Odd) per vertex.
        priority: a priority of 0 or more per vertex (below 2**63).
        offsets: ``n + 1`` increasing positions into ``targets``, from 0 to its length.
        targets: the successors, vertex after vertex.
        start: the initial vertex.

    Raises:
        GameGraphError: when lengths differ, an array is not one-dimensional whole numbers,
            a vertex has no move, a target, owner or priority is out of range, or ``start``
            is not a vertex; the message names the first vertex or edge at fault.

    .. versionadded:: Unreleased
    """

    owner: NDArray[np.int8] = attrs.field(converter=_owners)
    priority: NDArray[np.int64] = attrs.field(converter=_priorities)
    offsets: NDArray[np.int64] = attrs.field(converter=_offsets)
    targets: NDArray[np.int32] = attrs.field(converter=_targets)
    start: int = 0
    pred_offsets: NDArray[np.int64] = attrs.field(init=False, repr=False)
    sources: NDArray[np.int32] = attrs.field(init=False, repr=False)
    order: NDArray[np.int32] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        n = self.owner.shape[0]
        if self.priority.shape[0] != n or self.offsets.shape[0] != n + 1:
            msg = (
                f"ArrayGame has {n} owners, {self.priority.shape[0]} priorities and"
                f" {self.offsets.shape[0]} offsets; give one owner and one priority per vertex"
                " and one offset more than vertices"
            )
            raise GameGraphError(msg)
        if n == 0:
            msg = "ArrayGame has no vertices; give at least one"
            raise GameGraphError(msg)
        m = self.targets.shape[0]
        if self.offsets[0] != 0 or self.offsets[-1] != m:
            msg = (
                f"ArrayGame.offsets must run from 0 to len(targets) = {m}, got"
                f" {int(self.offsets[0])} to {int(self.offsets[-1])}"
            )
            raise GameGraphError(msg)
        moves = np.diff(self.offsets)
        if (moves <= 0).any():
            v = _first(moves <= 0)
            msg = f"vertex {v} has no outgoing edge (offsets {v} and {v + 1} are equal or fall);"
            raise GameGraphError(msg + " every vertex needs one")
        outside = (self.targets < 0) | (self.targets >= n)
        if outside.any():
            e = _first(outside)
            v = int(np.searchsorted(self.offsets, e, side="right")) - 1
            msg = f"edge {v} -> {int(self.targets[e])} leaves the vertices 0..{n - 1}"
            raise GameGraphError(msg)
        bad = (self.owner != 0) & (self.owner != 1)
        if bad.any():
            v = _first(bad)
            msg = f"vertex {v} has owner {int(self.owner[v])}; use 0 or 1"
            raise GameGraphError(msg)
        if (self.priority < 0).any():
            v = _first(self.priority < 0)
            msg = f"vertex {v} has priority {int(self.priority[v])}; give an int of 0 or more"
            raise GameGraphError(msg)
        if type(self.start) is not int or not 0 <= self.start < n:
            msg = f"start vertex {self.start!r} is not in 0..{n - 1}; give a vertex index"
            raise GameGraphError(msg)
        pred_offsets, sources = _predecessors(self.offsets, self.targets)
        for name, value in (
            ("pred_offsets", pred_offsets),
            ("sources", sources),
            ("order", _by_priority(self.priority)),
        ):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    def __len__(self) -> int:
        """Return the number of vertices."""
        return int(self.owner.shape[0])

    @classmethod
    def from_game(cls, game: GameGraph) -> ArrayGame:
        """The parity game of ``game`` (its distinct successors; names, events and weights
        are left behind)."""
        from grounded_decision.statechart._zielonka_native import _csr

        offsets, targets = _csr(game.successors)
        return cls(game.owner, game.priority, offsets, targets, game.start)

    def to_game(self) -> GameGraph:
        """The same game as a ``GameGraph``, vertices named by index, as ``read_pgsolver``
        names them (events ``"to <id>"``, weights 0.0)."""
        from grounded_decision.statechart.game import GameGraph

        offsets = self.offsets.tolist()
        targets = self.targets.tolist()
        edges = tuple(
            tuple((w, f"to {w}", 0.0) for w in targets[offsets[v] : offsets[v + 1]])
            for v in range(len(self))
        )
        return GameGraph(
            names=tuple(map(str, range(len(self)))),
            start=self.start,
            edges=edges,
            priority=tuple(self.priority.tolist()),
            owner=tuple(self.owner.tolist()),
        )


@attrs.frozen(eq=False)
class ArraySolution:
    """The solution of an ``ArrayGame``: ``ParitySolution`` with arrays.

    Parameters:
        winner: ``0`` or ``1`` per vertex (int8).
        strategy: per vertex whose owner wins there, the successor the owner picks; ``-1``
            elsewhere (int32).
        algorithm: the solver that produced it.
        steps: units of work spent.

    .. versionadded:: Unreleased
    """

    winner: NDArray[np.int8]
    strategy: NDArray[np.int32]
    algorithm: str
    steps: int


def read_pgsolver_arrays(text: str | bytes) -> tuple[ArrayGame, NDArray[np.int64]]:
    """Read a PGSolver game file straight into an ``ArrayGame``, with each vertex's file id.

    ``read_pgsolver`` builds a ``GameGraph``: for a file of tens of millions of vertices and
    edges that takes minutes and many times the file's size in memory. Here, with numba,
    compiled code reads the file's bytes into the arrays in time linear in the file, never
    making a Python object per vertex. It reads the plain form writers produce (the one
    ``write_pgsolver`` writes: ``\\n`` line ends, no blank or comment lines, blanks that are
    spaces or tabs); any other file, and every file without numba, is read by
    ``read_pgsolver_with_ids`` and converted, so the answer, and the error for a bad file,
    are always that reader's.

    Returns:
        ``(game, ids)``: the game of ``ArrayGame.from_game(read_pgsolver(text))`` (ids
        renumbered in increasing order, each vertex's distinct successors in the order first
        listed, names left out) and ``ids[v]``, vertex ``v``'s id in the file, as
        ``read_pgsolver_with_ids`` gives them.

    Raises:
        TypeError: when ``text`` is neither ``str`` nor ``bytes``.
        UnicodeDecodeError: when ``bytes`` are not UTF-8 (a leading byte order mark is
            allowed).
        PgsolverFormatError: as ``read_pgsolver``, naming the line at fault.

    .. versionadded:: Unreleased
    """
    from grounded_decision.statechart.pgsolver import read_pgsolver_with_ids

    if not isinstance(text, str | bytes):
        msg = (
            "read_pgsolver_arrays takes the file's text as str or its UTF-8 bytes, got"
            f" {type(text).__name__}"
        )
        raise TypeError(msg)
    if isinstance(text, bytes) and not text.isascii():
        text.decode("utf-8")  # bytes that are not UTF-8 are refused before any reading
    read = _parsed(text)
    if read is not None:
        return read
    game, ids = read_pgsolver_with_ids(text if isinstance(text, str) else text.decode("utf-8"))
    return ArrayGame.from_game(game), np.array(ids, dtype=np.int64)


def _parsed(text: str | bytes) -> tuple[ArrayGame, NDArray[np.int64]] | None:
    """``read_pgsolver_arrays`` by the compiled reader, or ``None`` when numba is missing or
    the file is not in the plain form it reads."""
    from grounded_decision.statechart._zielonka_native import available

    if not available():
        return None
    from grounded_decision.statechart import _game_kernel

    # A lone surrogate can only stand in a name, which is skipped: let it through.
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    status, owner, priority, offsets, targets, ids, start = _game_kernel.parse_pgsolver(
        np.frombuffer(data, dtype=np.uint8)
    )
    if status != _game_kernel.PARSED:
        return None
    del data  # a str's copy as bytes goes before the game copies the arrays
    return ArrayGame(owner, priority, offsets, targets, int(start)), ids


def _solve(game: ArrayGame, limits: Limits, algorithm: str) -> ArraySolution:
    """``solve_parity`` for an ``ArrayGame`` (its caller checks ``algorithm`` and limits).

    With numba, ``zielonka`` and ``auto`` with no depth cap run compiled from end to end;
    ``auto`` hands over to the race of ``parity._race`` (through a ``GameGraph``) when the
    compiled Zielonka has not finished within its allowance. Everything else solves the
    game's ``GameGraph``.
    """
    from grounded_decision.statechart import parity
    from grounded_decision.statechart._parity_core import Budget
    from grounded_decision.statechart._zielonka_native import NativeZielonka, available

    compiled = algorithm in ("zielonka", "auto") and limits.max_parity_depth is None
    if not (compiled and available()):
        return _through_graph(game, limits, algorithm)
    from grounded_decision.statechart import _game_kernel as k

    budget = Budget(limits.parity_steps, limits.parity_seconds)
    peeled, outside, work, core_size = k.peel(game.offsets, game.targets, game.pred_offsets)
    budget.charge(int(work))
    allowance = None
    if algorithm == "auto":
        allowance = parity.AUTO_FAST_FLOOR + parity.AUTO_WORK_PER_EDGE * int(core_size)
    solver = NativeZielonka.on_arrays(
        (game.offsets, game.targets, game.pred_offsets, game.sources),
        game.owner,
        game.priority,
        game.order,
        outside,
        budget,
    )
    if allowance is not None:
        allowance *= solver.pace
    done = budget.steps
    for _ in solver.steps():
        if allowance is not None and budget.steps - done > allowance:
            # Zielonka is struggling (a game crafted against it): race it against recursive
            # tangle learning, which needs the game as a GameGraph.
            used, found, picks = parity._solve_peeled(game.to_game(), "auto", budget, alone=False)
            return _solution(found, picks, used, budget.steps)
    winner, strategy = solver.answer_arrays()
    k.decide_peeled(peeled, game.offsets, game.targets, game.owner, winner, strategy)
    return ArraySolution(winner, strategy, "zielonka", budget.steps)


def _through_graph(game: ArrayGame, limits: Limits, algorithm: str) -> ArraySolution:
    """Solve ``game.to_game()`` with ``solve_parity``."""
    from grounded_decision.statechart.parity import solve_parity

    solution = solve_parity(game.to_game(), limits, algorithm=algorithm)
    return _solution(solution.winner, solution.strategy, solution.algorithm, solution.steps)


def _solution(winner: Any, strategy: Any, algorithm: str, steps: int) -> ArraySolution:
    return ArraySolution(
        np.asarray(winner, dtype=np.int8), np.asarray(strategy, dtype=np.int32), algorithm, steps
    )


def _first_priority_from(game: ArrayGame, bound: int) -> int | None:
    """The first vertex whose priority is ``bound`` or more, if any."""
    past = game.priority >= bound
    return _first(past) if past.any() else None


def _pgsolver_lines(game: ArrayGame) -> str:
    """The vertex lines of ``write_pgsolver``: ``v priority owner w,w,...;`` (no names)."""
    from grounded_decision.statechart._zielonka_native import available

    if available():
        from grounded_decision.statechart import _game_kernel

        lines = _game_kernel.pgsolver_lines(game.owner, game.priority, game.offsets, game.targets)
        return lines.tobytes().decode("ascii")  # type: ignore[no-any-return]
    offsets = game.offsets.tolist()
    targets = game.targets.tolist()
    priority = game.priority.tolist()
    owner = game.owner.tolist()
    moves = (",".join(map(str, targets[offsets[v] : offsets[v + 1]])) for v in range(len(game)))
    return "".join(f"{v} {priority[v]} {owner[v]} {out};\n" for v, out in enumerate(moves))


def _check(game: ArrayGame, winner: Any, strategy: Any) -> Certificate:
    """``check_certificate`` for an ``ArrayGame`` whose solution has one entry per vertex:
    the same checks and problems, compiled."""
    from grounded_decision.statechart._zielonka_native import available
    from grounded_decision.statechart.certificate import Certificate, check_certificate

    if not available():
        return check_certificate(game.to_game(), list(winner), list(strategy))
    from grounded_decision.statechart import _game_kernel as k

    try:
        sides = np.asarray(winner, dtype=np.int64)
        picks = np.asarray(strategy, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return check_certificate(game.to_game(), list(winner), list(strategy))
    code, v, other = k.check_closed(game.offsets, game.targets, game.owner, sides, picks)
    if code:
        vertex = int(v)
        problem = _closed_problem(int(code), vertex, int(other), int(sides[vertex]))
        return Certificate(False, problem, vertex)
    for side in (0, 1):
        bad = int(
            k.losing_cycle(
                game.offsets, game.targets, game.owner, game.priority, sides, picks, side
            )
        )
        if bad >= 0:
            return Certificate(
                False,
                f"vertex {bad} lies on a cycle in player {side}'s region whose top"
                f" priority {int(game.priority[bad])} is the opponent's",
                bad,
            )
    return Certificate(True)


def _closed_problem(code: int, v: int, other: int, side: int) -> str:
    """The message of ``check_certificate`` for a code of ``_game_kernel.check_closed``."""
    if code == 1:
        return f"vertex {v} has winner {other}; use 0 or 1"
    if code == 2:
        return (
            f"vertex {v}: its owner wins it but has no pick (-1); give the successor the owner"
            " moves to"
        )
    if code == 3:
        return f"vertex {v}: its winner picks {other}, not a successor"
    if code == 4:
        return f"vertex {v}: its winner's pick {other} leaves the region"
    return f"vertex {v}: the loser can move to {other}, outside player {side}'s region"
