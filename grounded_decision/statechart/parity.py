"""Parity games (max-parity, both owners): winning regions with strategies that prove them.

``solve_parity`` runs one of the solvers in ``ALGORITHMS`` on the game and returns a
``ParitySolution``: the winner of every vertex and both players' positional strategies.
``winning_regions``, ``even_wins`` and ``controller_wins_from_start`` (the progress check's
entry point) solve with ``auto`` and run the independent checker of
``statechart.certificate`` on every answer before returning it.
"""

from __future__ import annotations

import time
from collections.abc import Generator
from typing import TYPE_CHECKING, overload

import attrs

from grounded_decision.errors import ParityUnsolved, SolverChoiceError
from grounded_decision.statechart._parity_core import Budget, compress_priorities
from grounded_decision.statechart._peel import Peeling, decide_peeled, peel, restrict
from grounded_decision.statechart._promotion import promotion_steps
from grounded_decision.statechart._rtl import RecursiveTangleSolver, solve_recursive_tangles
from grounded_decision.statechart._tangle import solve_tangles
from grounded_decision.statechart._zielonka import solve_zielonka
from grounded_decision.statechart._zielonka_fast import ZielonkaSolver
from grounded_decision.statechart._zielonka_native import NativeZielonka, available
from grounded_decision.statechart.certificate import verify_certificate
from grounded_decision.statechart.game import GameGraph, Limits, _arrays_module_of

if TYPE_CHECKING:
    from grounded_decision.statechart.arrays import ArrayGame, ArraySolution

__all__ = [
    "ALGORITHMS",
    "ParitySolution",
    "controller_wins_from_start",
    "even_wins",
    "fast_solver_available",
    "solve_parity",
    "winning_regions",
]

ALGORITHMS = ("auto", "zielonka", "promotion", "tl", "rtl")
"""Solver names ``solve_parity`` accepts.

``zielonka`` is Zielonka's recursive algorithm, run iteratively; ``promotion`` is priority
promotion; ``tl`` is tangle learning; ``rtl`` is recursive tangle learning, which also splits
every leaking region again and learns the tangles inside it. Under a depth cap
(``Limits.max_parity_depth``, 64 by default, defined by Zielonka's nesting) ``zielonka`` is
the plain recursion on compressed priorities, so every documented refusal reads the same,
and ``auto`` runs it and, once it has done far more work than the game's size calls for,
solves as if there were no cap. Priority promotion and the tangle learners always, and the
others with no depth cap, first peel off the vertices no move can return to (``_peel``);
then ``zielonka`` takes Verver's and Oink's refinements (heads until the parity changes, no
second solve when the opponent gains nothing), and ``auto`` runs that Zielonka alone for an
allowance of work and then races it against recursive tangle learning (``_race``). That
refined Zielonka runs compiled on cores of ``NATIVE_MIN_VERTICES`` or more when numba is
installed (``_zielonka_native``), with the same answers and work.
"""

AUTO_WORK_PER_EDGE = 16
"""``auto`` gives Zielonka this many units of work per vertex and edge (plus a floor)."""
AUTO_WORK_FLOOR = 200_000
"""The least work ``auto`` lets Zielonka do under a depth cap before handing over."""
AUTO_FAST_FLOOR = 10_000
"""The least work ``auto`` lets Zielonka do alone with no depth cap before the race."""
NATIVE_MIN_VERTICES = 20_000
"""Cores of at least this many vertices are solved by the compiled Zielonka when numba is
installed (the same algorithm and answer; loading it costs about a second per process)."""
RACE_TURN_SECONDS = 0.05
"""In ``auto``'s race, a solver keeps its turn until it has used this much more processor
time than the other (or finishes)."""


@attrs.frozen
class ParitySolution:
    """The solution of a parity game.

    Parameters:
        winner: ``0`` (controller, Even) or ``1`` (environment, Odd) for each vertex.
        strategy: for each vertex whose owner wins there, the successor the owner picks;
            ``-1`` at vertices whose owner loses (any move loses there).
        algorithm: the solver that produced it (``zielonka``, ``promotion``, ``tl`` or
            ``rtl``).
        steps: units of work spent (vertices attracted plus edges scanned).

    .. versionadded:: Unreleased
    """

    winner: tuple[int, ...]
    strategy: tuple[int, ...]
    algorithm: str
    steps: int

    @property
    def regions(self) -> tuple[frozenset[int], frozenset[int]]:
        """The winning regions ``(controller, environment)``."""
        even = frozenset(v for v, side in enumerate(self.winner) if side == 0)
        odd = frozenset(v for v, side in enumerate(self.winner) if side == 1)
        return even, odd


@overload
def solve_parity(
    game: GameGraph, limits: Limits | None = None, *, algorithm: str = "auto"
) -> ParitySolution: ...


@overload
def solve_parity(
    game: ArrayGame, limits: Limits | None = None, *, algorithm: str = "auto"
) -> ArraySolution: ...


def solve_parity(
    game: GameGraph | ArrayGame, limits: Limits | None = None, *, algorithm: str = "auto"
) -> ParitySolution | ArraySolution:
    """Solve the parity game and return both players' winning regions and strategies.

    The result is not checked here; pass it to ``check_certificate`` (or use
    ``winning_regions``, which does).

    Parameters:
        game: the game; an ``arrays.ArrayGame`` gives an ``arrays.ArraySolution``, solved
            by compiled code from end to end under ``zielonka`` and ``auto`` with no depth
            cap when numba is installed.
        limits: ``max_game_vertices``, ``max_parity_depth`` (Zielonka's nesting),
            ``parity_steps`` and ``parity_seconds`` apply; ``None`` in any of them is no cap.
        algorithm: one of ``ALGORITHMS``.

    Raises:
        TypeError: when ``limits`` is not a ``Limits``.
        SolverChoiceError: when ``algorithm`` is not one of ``ALGORITHMS``.
        ParityUnsolved: when the game has more vertices than ``limits.max_game_vertices``,
            Zielonka nests deeper than ``limits.max_parity_depth``, or a budget is spent; the
            message names the setting.

    .. versionadded:: Unreleased
    .. versionchanged:: Unreleased ``ArrayGame``.
    """
    if algorithm not in ALGORITHMS:
        msg = f"no parity algorithm named {algorithm!r}; choose one of: {', '.join(ALGORITHMS)}"
        raise SolverChoiceError(msg)
    if limits is None:
        limits = Limits()
    elif not isinstance(limits, Limits):
        msg = f"limits must be a Limits or None, got {type(limits).__name__}"
        raise TypeError(msg)
    if not isinstance(game, GameGraph):
        arrays = _arrays_module_of(game, "solve_parity")
        _refuse_past_size(len(game), limits)
        solved: ArraySolution = arrays._solve(game, limits, algorithm)
        return solved
    n = len(game)
    _refuse_past_size(n, limits)
    budget = Budget(limits.parity_steps, limits.parity_seconds)
    depth = limits.max_parity_depth
    if depth is None or algorithm in ("promotion", "tl", "rtl"):
        used, winner, strategy = _solve_peeled(game, algorithm, budget)
    else:
        args = (game.successors, game.predecessors, game.owner, compress_priorities(game.priority))
        used = "zielonka"
        if algorithm == "zielonka":
            winner, strategy = solve_zielonka(*args, max_depth=depth, budget=budget)
        else:
            trial = Budget(AUTO_WORK_FLOOR + AUTO_WORK_PER_EDGE * (n + _edges(game)), None)
            try:
                winner, strategy = solve_zielonka(
                    *args, max_depth=depth, budget=_Both(trial, budget)
                )
            except _Handover:
                used, winner, strategy = _solve_peeled(game, "auto", budget, alone=False)
    return ParitySolution(
        winner=tuple(winner), strategy=tuple(strategy), algorithm=used, steps=budget.steps
    )


def _refuse_past_size(n: int, limits: Limits) -> None:
    if limits.max_game_vertices is not None and n > limits.max_game_vertices:
        msg = (
            f"{n} vertices exceed limit {limits.max_game_vertices} (Limits.max_game_vertices);"
            " raise max_game_vertices, or pass None for no cap"
        )
        raise ParityUnsolved(msg, limit=limits.max_game_vertices, setting="max_game_vertices")


def fast_solver_available() -> bool:
    """Whether the compiled Zielonka can run here: numba is installed (the ``fast`` extra).

    With it, ``zielonka`` and ``auto`` solve cores of ``NATIVE_MIN_VERTICES`` or more with
    compiled code; the answers and ``ParitySolution.steps`` are the same either way. The
    first call in a process imports numba and loads (or, on a new install, compiles) the
    kernel.

    .. versionadded:: Unreleased
    """
    return available()


def _edges(game: GameGraph) -> int:
    return sum(map(len, game.successors))


def _solve_peeled(
    game: GameGraph, algorithm: str, budget: Budget, *, alone: bool = True
) -> tuple[str, list[int], list[int]]:
    """Solve the core left by ``peel`` with ``algorithm`` and decide the peeled vertices.

    ``auto`` races Zielonka against recursive tangle learning (``_race``); with ``alone`` Zielonka
    first runs by itself for its allowance.
    """
    peeling = peel(game.successors, game.predecessors)
    budget.charge(peeling.work)
    args = (game.successors, game.predecessors, game.owner, game.priority)
    core = peeling.core
    used = algorithm
    if algorithm == "promotion":
        winner, strategy = _finish(_promote(game, peeling, budget))
    elif algorithm == "zielonka":
        winner, strategy = _finish(_run(_zielonka(game, budget, core)))
    elif algorithm == "tl":
        winner, strategy = solve_tangles(*args, budget=budget, vertices=core)
    elif algorithm == "rtl":
        winner, strategy = solve_recursive_tangles(*args, budget=budget, vertices=core)
    else:
        allowance = 0
        if alone:
            size = len(core) + sum(map(len, map(game.successors.__getitem__, core)))
            allowance = AUTO_FAST_FLOOR + AUTO_WORK_PER_EDGE * size
        used, (winner, strategy) = _race(game, peeling, budget, allowance)
    decide_peeled(peeling, game.successors, game.owner, winner, strategy)
    return used, winner, strategy


Answer = tuple[list[int], list[int]]
"""``(winner, strategy)`` over the whole game."""


def _race(game: GameGraph, peeling: Peeling, budget: Budget, allowance: int) -> tuple[str, Answer]:
    """Zielonka by itself for ``allowance`` units, then Zielonka and recursive tangle learning
    in turns.

    The learner has the first turn (Zielonka has just had its allowance, or the
    depth-capped trial that handed over) and a turn stays with a solver, a step (a level,
    or a region) at a time, until it has used ``RACE_TURN_SECONDS`` more processor time than
    the other (Zielonka's allowance included, so its head start is not given twice); the
    first to finish gives the answer. Crafted games that make Zielonka exponential (the
    core counter, van Dijk's two counters, the recursive ladder) fall to recursive tangle
    learning, games where that learner is slow (large random ones, ladders) to Zielonka, at
    most about twice the faster one's time. Turns of a step each measured up to 12% slower
    on random games of 100,000 vertices, and twice as slow on van Dijk's counters, which
    the learner now finishes within its first turn. The two take work at very different
    rates per unit, so time, not units, decides the turns; which one finishes first can
    therefore differ between runs on a close race, never the regions. (Priority promotion
    and plain tangle learning measured slower in this race on the benchmark games, and a
    three-way race slower still.)
    """
    args = (game.successors, game.predecessors, game.owner, game.priority)
    core = peeling.core
    clock = time.process_time
    begun = clock()
    share = _Share(budget)
    solver = _zielonka(game, share, core)
    allowance *= solver.pace
    zielonka = _run(solver)
    while share.steps <= allowance:
        try:
            next(zielonka)
        except StopIteration as done:
            return "zielonka", done.value
    started = clock()
    learner = RecursiveTangleSolver(*args, _Share(budget), core)
    entrants = [("zielonka", zielonka), ("rtl", _run(learner))]
    spent = [started - begun, clock() - started]
    turn = 1  # Zielonka has had its go: the allowance, or the depth-capped trial before
    while True:
        name, steps = entrants[turn]
        started = clock()
        try:
            next(steps)
        except StopIteration as done:
            return name, done.value
        spent[turn] += clock() - started
        if spent[turn] > spent[1 - turn] + RACE_TURN_SECONDS:
            turn = 1 - turn


Solver = ZielonkaSolver | NativeZielonka | RecursiveTangleSolver


def _zielonka(game: GameGraph, budget: Budget, core: list[int]) -> ZielonkaSolver | NativeZielonka:
    """The refined Zielonka on ``core``: compiled for large cores when numba is there."""
    args = (game.successors, game.predecessors, game.owner, game.priority)
    if len(core) >= NATIVE_MIN_VERTICES and available():
        return NativeZielonka(*args, budget, core)
    return ZielonkaSolver(*args, budget, core)


def _run(solver: Solver) -> Generator[None, None, Answer]:
    """A solver's steps, returning its answer."""
    yield from solver.steps()
    return solver.answer()


def _finish(steps: Generator[None, None, Answer]) -> Answer:
    """Run a solver's steps to the end and return its answer."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            answer: Answer = done.value
            return answer


def _promote(game: GameGraph, peeling: Peeling, budget: Budget) -> Generator[None, None, Answer]:
    """Priority promotion on the core, renumbered densely as it needs, a step at a time."""
    yield
    core = peeling.core
    successors, predecessors = restrict(peeling, game.successors, game.predecessors)
    owner = [game.owner[v] for v in core]
    priority = compress_priorities([game.priority[v] for v in core])
    found, picks = yield from promotion_steps(
        successors, predecessors, owner, priority, budget=budget
    )
    n = len(game)
    winner = [0] * n
    strategy = [-1] * n
    for v, side, pick in zip(core, found, picks, strict=True):
        winner[v] = side
        if pick >= 0:
            strategy[v] = core[pick]
    return winner, strategy


class _Share(Budget):
    """One solver's share of the work: counted here and charged to the solve's budget."""

    __slots__ = ("outer",)

    def __init__(self, outer: Budget) -> None:
        super().__init__(None, None)
        self.outer = outer

    def charge(self, units: int) -> None:
        """Count ``units`` here and charge them to the solve's budget."""
        self.steps += units
        self.outer.charge(units)


class _Handover(Exception):
    """Zielonka's trial allowance is spent; ``auto`` moves on to the race (``_race``)."""


class _Both(Budget):
    """The user's budget, plus the trial allowance ``auto`` gives Zielonka."""

    __slots__ = ("outer", "trial")

    def __init__(self, trial: Budget, outer: Budget) -> None:
        super().__init__(None, None)
        self.trial = trial
        self.outer = outer

    def charge(self, units: int) -> None:
        """Charge both; the trial running out hands over instead of failing."""
        self.outer.charge(units)
        self.trial.steps += units
        if self.trial.max_steps is not None and self.trial.steps > self.trial.max_steps:
            raise _Handover


def winning_regions(
    game: GameGraph, limits: Limits | None = None
) -> tuple[frozenset[int], frozenset[int]]:
    """Return the winning regions ``(controller, environment)``; together they partition the game.

    The controller (Even) wins a play when the largest priority seen infinitely often is
    even. The answer is solved with ``auto`` and checked by ``verify_certificate``.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: if the checker rejected the solver's strategies (a solver bug).
    """
    solution = solve_parity(game, limits)
    verify_certificate(game, solution.winner, solution.strategy)
    return solution.regions


def even_wins(game: GameGraph, limits: Limits | None = None) -> tuple[bool, ...]:
    """Return, for each vertex, whether the controller (Even) wins the parity game from it.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: see ``winning_regions``.
    """
    controller, _ = winning_regions(game, limits)
    return tuple(v in controller for v in range(len(game)))


def controller_wins_from_start(game: GameGraph, limits: Limits | None = None) -> bool:
    """Return whether the controller wins the parity game from ``game.start``.

    Raises:
        ParityUnsolved: see ``solve_parity``.
        CertificateError: see ``winning_regions``.
    """
    return even_wins(game, limits)[game.start]
