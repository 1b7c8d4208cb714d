"""The scheduler: what one request has done, what it may still do, and what it means.

Plain logic, shared by every driver (`ask` sequential, `ask` with worker
threads, `aask`): which nodes are wanted, what a failed hard check settles,
how answers follow from what ran. It knows nothing of threads or event loops,
which is why records cannot drift between the drivers.
"""

from __future__ import annotations

from typing import Any

import attrs

from solvi.program import Node, Program

__all__: list[str] = []

PENDING, OK, FAILED, NOT_RUN = 0, 1, 2, 3


@attrs.frozen
class Cause:
    """Why a fact is missing at run time: a part timed out or raised."""

    kind: str  # "timeout" | "error"
    part: str
    fact: str
    message: str


@attrs.frozen
class Attempt:
    """One call of one part: when it started and ended, and how it went."""

    node: int
    part: str
    fact: str
    start: float
    end: float
    outcome: str  # "ok" | "timeout" | "error"
    message: str | None = None


class Run:
    """The mutable state of one request; owned by one driver, never shared."""

    __slots__ = (
        "attempts",
        "causes",
        "early_exit",
        "open_mask",
        "prices",
        "program",
        "settled",
        "skip_reasons",
        "started",
        "state",
        "status",
        "timeout",
        "vals",
    )

    def __init__(
        self,
        program: Program,
        state: dict[str, Any],
        *,
        early_exit: bool,
        timeout: float | None,
        started: float,
        prices: Any = None,
    ) -> None:
        self.program = program
        self.state = state
        self.vals: dict[str, Any] = dict(state)
        self.status = [PENDING] * len(program.nodes)
        self.causes: dict[int, Cause] = {}
        self.attempts: list[Attempt] = []
        self.skip_reasons: dict[str, str] = {}
        self.early_exit = early_exit
        self.timeout = timeout
        self.started = started
        self.prices = prices
        self.open_mask = program.all_questions_mask
        #: question index -> (deciding hard-check node, "failed" | "unevaluated")
        self.settled: dict[int, tuple[int, str]] = {}

    # -- before a node runs ------------------------------------------------

    def wanted(self, node: Node) -> bool:
        """Whether some question that is still open needs this node."""
        return bool(node.qmask & self.open_mask)

    def missing_input(self, node: Node) -> Cause | None:
        """The cause of the first input that upstream failures left missing, if any."""
        if not self.causes:
            return None
        for d in node.deps:
            if self.status[d] == FAILED:
                return self.causes[d]
        return None

    # -- after a call ---------------------------------------------------------

    def called(
        self, node: Node, tried: int, start: float, end: float, value: Any, cause: Cause | None
    ) -> bool:
        """Note one call of the node's `tried`-th producer; True when the node is done."""
        part = node.parts[tried]
        if cause is None:
            self.attempts.append(Attempt(node.index, part.name, node.fact, start, end, "ok"))
            self.succeed(node, value, tried)
            return True
        self.attempts.append(
            Attempt(node.index, part.name, node.fact, start, end, cause.kind, cause.message)
        )
        if tried + 1 == len(node.parts):
            self.fail(node, cause)
            return True
        return False

    def discard(self, node: Node) -> None:
        """Forget a node that ran speculatively but turned out unnecessary."""
        self.vals.pop(node.fact, None)
        self.causes.pop(node.index, None)
        self.attempts = [a for a in self.attempts if a.node != node.index]
        self.skip_unneeded(node)

    # -- after a node ran --------------------------------------------------

    def succeed(self, node: Node, value: Any, tried: int) -> None:
        """Store a node's value; the producers after the `tried`-th are not needed."""
        self.vals[node.fact] = bool(value) if node.is_check else value
        self.status[node.index] = OK
        if tried + 1 < len(node.parts):
            winner = node.parts[tried].name
            for p in node.parts[tried + 1 :]:
                self.skip_reasons[p.name] = f"not needed: {node.fact} came from {winner}"

    def fail(self, node: Node, cause: Cause) -> None:
        """Mark a node's fact missing: every producer failed, or an input was missing."""
        self.status[node.index] = FAILED
        self.causes[node.index] = cause

    def block(self, node: Node, cause: Cause) -> None:
        """A node could not start because an input is missing."""
        for p in node.parts:
            self.skip_reasons[p.name] = f"inputs missing: {cause.fact} ({_describe(cause)})"
        self.fail(node, cause)

    def skip_unneeded(self, node: Node) -> None:
        """A node no open question needs: say which hard check made it unnecessary."""
        self.status[node.index] = NOT_RUN
        reason = self.unneeded_reason(node)
        for p in node.parts:
            self.skip_reasons[p.name] = reason

    def unneeded_reason(self, node: Node) -> str:
        """Why a node is no longer needed: the check that settled its first question."""
        mask = node.qmask
        q = 0
        while mask:
            if mask & 1 and q in self.settled:
                check_node, how = self.settled[q]
                name = self.program.nodes[check_node].parts[0].name
                if how == "failed":
                    return f"not needed: hard check {name} failed"
                return f"not needed: hard check {name} could not be evaluated"
            mask >>= 1
            q += 1
        return "not needed"

    # -- hard checks -------------------------------------------------------

    def settle(self) -> None:
        """Settle the questions whose first-declared non-passing hard check is known."""
        nodes = self.program.nodes
        status = self.status
        vals = self.vals
        for slot in self.program.questions:
            if slot.index in self.settled or slot.blocked is not None:
                continue
            for g in slot.governing:
                state = status[g]
                if state == PENDING:
                    break  # an earlier-declared check is still unknown: wait
                if state == OK:
                    if vals[nodes[g].fact]:
                        continue
                    self.settled[slot.index] = (g, "failed")
                else:
                    self.settled[slot.index] = (g, "unevaluated")
                self.open_mask &= ~(1 << slot.index)
                break

    def drop_unneeded(self) -> None:
        """After speculation: forget every later-phase node no open question needs."""
        for node in self.program.nodes:
            if node.phase == 1 and not node.qmask & self.open_mask:
                self.discard(node)


def _describe(cause: Cause) -> str:
    if cause.kind == "timeout":
        return f"{cause.part} {cause.message}"
    return f"{cause.part} raised {cause.message}"
