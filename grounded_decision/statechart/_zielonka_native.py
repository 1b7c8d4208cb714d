"""The refined Zielonka of ``_zielonka_fast``, compiled with numba when it is installed.

The same algorithm, step for step: the same levels, the same order of attraction, the same
strategies and the same units of work charged to the budget, so the two give identical
``(winner, strategy)`` and ``steps`` on every game (the tests compare them). Only the data
differ. The Python solver keeps each level's attracted vertices and regions as lists and
ropes; here every array is flat:

- Taken vertices are kept in two stacks, one per winner (``logs[0]``, ``logs[1]``). A level
  remembers where each stack stood when it began, so its subgame's regions, once solved,
  are the two stacks above those marks: "did the opponent win anything below" is a
  subtraction. A vertex that the opponent's attractor takes back moves to the other stack,
  and the level then releases everything still on its own player's stack above its mark
  (to be solved again), which leaves that stack at its mark: no stale entry ever stays.
- Heads and the priority-sorted lists of released vertices live on stacks that a level
  pops when it ends.

The kernel runs until it has done a given amount of work and then returns with its whole
state in arrays, so a solve is a generator of steps like the Python solver's: budgets, time
limits and ``auto``'s race all work the same. numba is optional (the ``fast`` extra); without
it ``available()`` is false and the Python solver is used.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Iterator, Sequence
from itertools import chain
from typing import Any

from grounded_decision.statechart._parity_core import Budget

__all__ = ["CHUNK", "NativeZielonka", "available"]

CHUNK = 1 << 16
"""Units of work the kernel does between two returns to Python (about a millisecond)."""

# Fields of a level in the stack array ``lv``: its number, phase, player, cursor and end in
# the sorted list it scans, where each region stack stood when it began, its heads, what its
# own attractor took, and where the stack of sorted lists stood.
_ID, _PHASE, _PLAYER, _CURSOR, _OEND, _SEG0, _SEG1, _HS, _HE, _PULLED, _OTOP = range(11)
_FIELDS = 11
# Scalars of the run in the array ``sc``: stack depth, next level number, the tops of the
# region stacks, of the heads and of the sorted lists, the attractor stamp, the work done,
# and the sizes of the regions of the level that ended last.
_DEPTH, _NEXT, _TOP0, _TOP1, _HEADS, _ORD, _STAMP, _WORK, _LAST0, _LAST1 = range(10)
_SCALARS = 10


@functools.cache
def _load() -> Any:
    """The compiled kernel's module, or None without numba (imported once per process).

    numba that is installed but cannot load the kernel here (most often: no folder it may
    write its cache to) is said once, as a RuntimeWarning, and the Python solver is used.
    """
    try:
        import numba  # noqa: F401  # only whether it is there
    except ImportError:
        return None
    try:
        from grounded_decision.statechart import _zielonka_kernel
    except Exception as exc:  # any failure here means: solve in Python
        warnings.warn(
            f"the compiled Zielonka could not be loaded ({exc}); parity games are solved"
            " in Python. If numba could not cache its code, set NUMBA_CACHE_DIR to a"
            " folder this process may write",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return _zielonka_kernel


def available() -> bool:
    """Whether numba is installed, so that ``NativeZielonka`` can run."""
    return _load() is not None


class NativeZielonka:
    """One solve by the compiled kernel, with ``ZielonkaSolver``'s interface."""

    pace = 10
    """About ten units of work in the time the Python solver does one (measured on random
    games of 100,000 vertices: 20 to 30 ns a unit against 200 to 260 ns)."""

    def __init__(
        self,
        successors: Sequence[Sequence[int]],
        predecessors: Sequence[Sequence[int]],
        owner: Sequence[int],
        priority: Sequence[int],
        budget: Budget,
        vertices: Sequence[int] | None,
    ) -> None:
        if not available():
            msg = "the compiled Zielonka needs numba: pip install 'solvi[fast]'"
            raise RuntimeError(msg)
        import numpy as np

        n = len(priority)
        sp, sx = _csr(successors)
        pp, px = _csr(predecessors)
        every = range(n) if vertices is None else vertices
        try:
            prio = np.asarray(priority, dtype=np.int64)
        except OverflowError:  # a priority past 64 bits: Python sorts it
            prio = np.fromiter((p & 1 for p in priority), dtype=np.int64, count=n)
            order = np.asarray(
                sorted(every, key=priority.__getitem__, reverse=True), dtype=np.int32
            )
        else:
            # Stable, so vertices of one priority keep their order, as Python's sort does.
            taken = np.asarray(every, dtype=np.int64)
            order = taken[np.argsort(-prio[taken], kind="stable")].astype(np.int32)
        owners = np.asarray(owner, dtype=np.int8)
        self._setup((sp, sx, pp, px), owners, prio, order, np.zeros(0, dtype=np.bool_), budget)

    @classmethod
    def on_arrays(
        cls,
        graph: tuple[Any, Any, Any, Any],
        owner: Any,
        priority: Any,
        order: Any,
        outside: Any,
        budget: Budget,
    ) -> NativeZielonka:
        """A solve of a game already in arrays: ``graph`` is the successors' and the
        predecessors' (offsets, targets), ``order`` every vertex from the highest priority
        down (stable), ``outside`` marks those not to solve (an empty array: none)."""
        solver = cls.__new__(cls)
        solver._setup(graph, owner, priority, order, outside, budget)
        return solver

    def _setup(
        self,
        graph: tuple[Any, Any, Any, Any],
        owner: Any,
        priority: Any,
        order: Any,
        outside: Any,
        budget: Budget,
    ) -> None:
        import numpy as np

        kernel = _load()
        n = owner.shape[0]
        self.budget = budget
        self.sp, self.sx, self.pp, self.px = graph
        self.owner = owner
        prepared = kernel.prepare(self.sp, priority, order, outside)
        self.ordbuf, self.position, self.state, self.free, self.parity = prepared[:5]
        size = int(prepared[5])
        self.mark = np.zeros(n, dtype=np.int64)
        self.counted = np.zeros(n, dtype=np.int64)
        self.count = np.zeros(n, dtype=np.int32)
        self.strategy = np.full(n, -1, dtype=np.int32)
        self.outbuf = np.empty(max(n, 1), dtype=np.int32)
        self.logs = np.empty((2, max(n, 1)), dtype=np.int32)
        self.heads = np.empty(max(n, 16), dtype=np.int32)
        self.lv = np.zeros((64, _FIELDS), dtype=np.int64)
        self.sc = np.zeros(_SCALARS, dtype=np.int64)
        # The first level: the whole game, scanned from the top of the sorted order.
        self.lv[0, _OEND] = size
        self.lv[0, _OTOP] = size
        self.sc[_DEPTH] = 1
        self.sc[_NEXT] = 1
        self.sc[_ORD] = size

    def steps(self) -> Iterator[None]:
        """Run the kernel a chunk of work at a time, charging the budget after each."""
        kernel = _load().kernel
        done = 0
        while True:
            yield
            status, self.lv, self.heads, self.ordbuf = _interruptible(
                kernel,
                self.sp,
                self.sx,
                self.pp,
                self.px,
                self.owner,
                self.parity,
                self.position,
                self.state,
                self.free,
                self.mark,
                self.counted,
                self.count,
                self.strategy,
                self.outbuf,
                self.lv,
                self.logs,
                self.heads,
                self.ordbuf,
                self.sc,
                done + CHUNK,
            )
            work = int(self.sc[_WORK])
            if work > done:
                self.budget.charge(work - done)
                done = work
            if status == 0:
                return

    def answer(self) -> tuple[list[int], list[int]]:
        """Read ``(winner, strategy)`` off the arrays once ``steps`` has run out."""
        winner, strategy = self.answer_arrays()
        return winner.tolist(), strategy.tolist()

    def answer_arrays(self) -> tuple[Any, Any]:
        """``answer`` as numpy arrays (int8 winners, int32 picks), for games kept in arrays."""
        return _load().answer(self.state, self.strategy, self.owner)  # type: ignore[no-any-return]


def _interruptible(kernel: Any, *args: Any) -> Any:
    """Call the kernel; an exception a signal's handler raises (Ctrl-C's KeyboardInterrupt,
    or a handler of the program's own) in the Python code numba runs while it hands the
    result back comes out as itself, not as the SystemErrors that wrap it ("returned a
    result with an exception set")."""
    try:
        return kernel(*args)
    except SystemError as exc:
        cause = exc.__cause__
        while isinstance(cause, SystemError):
            cause = cause.__cause__
        if cause is None:
            raise
        raise cause from None


def _csr(lists: Sequence[Sequence[int]]) -> tuple[Any, Any]:
    """Flatten per-vertex lists into (offsets, targets)."""
    import numpy as np  # installed with numba, which is optional

    lengths = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    targets = np.fromiter(chain.from_iterable(lists), dtype=np.int32, count=total)
    return offsets, targets
