"""What the parity solvers share: priority compression, the work budget and region ropes."""

from __future__ import annotations

import time
from collections.abc import Sequence

from grounded_decision.errors import ParityUnsolved

__all__ = ["Budget", "Rope", "compress_priorities", "concat", "flatten"]

Rope = list[int] | tuple["Rope", "Rope"] | None
"""A region as nested pairs of lists, so that joining two regions costs nothing until read."""


def compress_priorities(priority: Sequence[int]) -> list[int]:
    """Renumber priorities densely, keeping order and parity, merging same-parity neighbours.

    Two priorities with no priority of the other parity between them decide every play the
    same way, so they can share a value; the solvers then see at most one value per parity
    change, which bounds their nesting depth by it.
    """
    mapping: dict[int, int] = {}
    current = -1
    for value in sorted(set(priority)):
        if current < 0:
            current = value % 2
        elif value % 2 != current % 2:
            current += 1
        mapping[value] = current
    return list(map(mapping.__getitem__, priority))


def concat(left: Rope, right: Rope) -> Rope:
    """Join two ropes without copying either."""
    if left is None:
        return right
    if right is None:
        return left
    return (left, right)


def flatten(rope: Rope) -> list[int]:
    """The vertices of a rope, left to right."""
    out: list[int] = []
    todo = [rope]
    while todo:
        part = todo.pop()
        if part is None:
            continue
        if isinstance(part, list):
            out.extend(part)
        else:
            todo.append(part[1])
            todo.append(part[0])
    return out


class Budget:
    """Counts solver work against ``Limits.parity_steps`` and ``Limits.parity_seconds``.

    One owner, one solve: the solver adds its work now and then and the budget raises
    ``ParityUnsolved`` naming the setting once either budget is spent.
    """

    __slots__ = ("deadline", "max_steps", "seconds", "steps")

    def __init__(self, max_steps: int | None, seconds: float | None) -> None:
        self.steps = 0
        self.max_steps = max_steps
        self.seconds = seconds
        self.deadline = None if seconds is None else time.monotonic() + seconds

    def charge(self, units: int) -> None:
        """Add ``units`` of work; raise when a budget is spent."""
        self.steps += units
        if self.max_steps is not None and self.steps > self.max_steps:
            msg = (
                f"parity solver used more than {self.max_steps} steps (Limits.parity_steps);"
                " raise parity_steps, or pass None for no cap"
            )
            raise ParityUnsolved(msg, limit=self.max_steps, setting="parity_steps")
        if self.deadline is not None and time.monotonic() > self.deadline:
            msg = (
                f"parity solver ran longer than {self.seconds:g} s (Limits.parity_seconds);"
                " raise parity_seconds, or pass None for no cap"
            )
            raise ParityUnsolved(msg, limit=self.seconds or 0.0, setting="parity_seconds")
