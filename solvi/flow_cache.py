"""Compiled flows by request key set: planned once, kept in a bounded cache.

A service sees few key sets, so planning once per set makes a request's plan a
dictionary lookup. A hostile or careless caller can send ever new key sets, so
the cache is bounded and forgets the least recently used flow first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from solvi._run.steps import Program, compile_flow
from solvi.catalog import Part
from solvi.errors import PlanError
from solvi.flow import Flow
from solvi.inputs import RequestGuard
from solvi.question import Question
from solvi.strategy import Prices, Strategist

__all__ = ["FlowCache"]


class FlowCache:
    """At most `max_flows` compiled flows, keyed by key set (and producer choice)."""

    def __init__(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        strategist: Strategist,
        guard: RequestGuard,
        max_flows: int,
    ) -> None:
        self._parts = parts
        self._questions = questions
        self._strategist = strategist
        self._guard = guard
        self.max_flows = max_flows
        self._programs: OrderedDict[Any, Program] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._programs)

    def cached(self, cache_key: Any) -> Program | None:
        """The flow for `cache_key` if it is cached (then it is the most recently used)."""
        program = self._programs.get(cache_key)
        if program is not None:
            try:
                self._programs.move_to_end(cache_key)
            except KeyError:  # another thread evicted it since; it is still valid
                pass
        return program

    def get(self, cache_key: Any, prices: Prices | None = None) -> Program:
        """The flow for a key set (`cache_key` is the keys, or (keys, producer choice)).

        Raises:
            RequestError: the keys set a hard check or a fact one reads.
        """
        program = self.cached(cache_key)
        if program is not None:
            return program
        keys = cache_key if isinstance(cache_key, frozenset) else cache_key[0]
        self._guard.check(keys)
        plan = self._strategist.plan(self._parts, self._questions, keys, prices)
        _check_flow(plan, self._strategist)
        program = compile_flow(plan)
        with self._lock:
            self._programs[cache_key] = program
            while len(self._programs) > self.max_flows:
                self._programs.popitem(last=False)
        return program


def _check_flow(flow: object, strategist: object) -> None:
    """Refuse a flow no driver can run, before it is compiled: a strategist of one's
    own may return anything, and a flow out of order failed later with a KeyError, or
    answered a question whose rule it left out "decided" with no value.

    Raises:
        PlanError: naming the strategist and what is wrong with its flow.
    """
    who = f"strategist {getattr(strategist, 'name', type(strategist).__name__)!r}"
    if not isinstance(flow, Flow):
        msg = f"{who} returned {type(flow).__name__}, not a solvi.Flow; return the Flow it plans"
        raise PlanError(msg)
    seen: dict[str, int] = {}
    for position, node in enumerate(flow.nodes):
        if node.index != position or node.fact in seen:
            msg = (
                f"{who} planned node {node.fact!r} at {position} with index {node.index}; "
                f"give each fact one node, indexed in flow order"
            )
            raise PlanError(msg)
        late = [d for d in node.deps if not 0 <= d < position]
        if late:
            msg = (
                f"{who} planned {node.fact!r} before the nodes it reads ({late}); order the "
                f"nodes so that each comes after those it reads"
            )
            raise PlanError(msg)
        read = {seen[i] for i in node.inputs if i in seen}
        if set(node.deps) != read:
            msg = (
                f"{who} planned {node.fact!r} with deps {list(node.deps)}, but it reads the "
                f"facts of nodes {sorted(read)}; give each node the indices of the nodes it "
                f"reads"
            )
            raise PlanError(msg)
        seen[node.fact] = position
    for question in flow.questions:
        rule = question.rule
        given = rule is None or rule in seen or rule in flow.keys
        if question.blocked is None and not given:
            msg = (
                f"{who} left out the rule {question.rule!r} of question {question.name!r}; "
                f"plan a node for it, or block the question saying why"
            )
            raise PlanError(msg)
