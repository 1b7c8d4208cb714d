"""How a System plans a request: its compiled flows and, under measured costs, which
of several equivalent producers each flow uses.

A System plans every request through its `Planner`, and so do the modules that must
plan exactly as it does without being part of it: `solvi.replay` (the flow a record
ran) and `solvi.heads` (a new strategist once heads are fitted). Keeping that in one
object with a public surface is what lets them do so without reading the System's
private state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from solvi._run.steps import Node, Program
from solvi.catalog import Part
from solvi.costs import CostBook, ProducerChooser
from solvi.flow import Flow
from solvi.flow_cache import FlowCache
from solvi.inputs import RequestGuard, as_state
from solvi.order import OrderModel
from solvi.question import Question
from solvi.settings import Settings
from solvi.strategy import Price, Prices, Strategist

__all__ = ["Planner"]


class Planner:
    """The flows of one System, planned once per key set (and producer choice).

    Attributes:
        chooser: the producer chooser when the System plans with measured costs or
            learned producers, else None (every flow is then keyed by its keys alone).
        journal_version: what a journaled request pins: the catalog's version (and
            its heads') and a digest of the questions, since a changed forced value
            changes answers.
    """

    def __init__(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        guard: RequestGuard,
        settings: Settings,
        cost_book: CostBook,
        journal_version: str,
    ) -> None:
        self.parts = parts
        self.questions = questions
        self.guard = guard
        self.cost_book = cost_book
        self.max_flows = settings.max_flows
        self.chooser: ProducerChooser | None = None
        if settings.cost_policy == "measured" or settings.learned_producers:
            groups: dict[str, list[Part]] = {}
            for p in parts:
                if p.kind != "extract":
                    groups.setdefault(p.provides, []).append(p)
            self.chooser = ProducerChooser(
                {f: tuple(ps) for f, ps in groups.items() if len(ps) > 1},
                cost_book,
                settings.costs,
                measured=settings.cost_policy == "measured",
                failures=OrderModel() if settings.learned_producers else None,
            )
        self.replan(settings.strategist, journal_version)

    def replan(self, strategist: Strategist, journal_version: str) -> None:
        """Plan with `strategist` from now on, pinning `journal_version`: every cached
        flow is forgotten."""
        self._flows = FlowCache(self.parts, self.questions, strategist, self.guard, self.max_flows)
        self.journal_version = journal_version

    def __len__(self) -> int:
        """How many compiled flows are cached."""
        return len(self._flows)

    def cached(self, cache_key: Any) -> Program | None:
        """The compiled flow for `cache_key` if it is cached, else None (nothing planned)."""
        return self._flows.cached(cache_key)

    def program(self, cache_key: Any, prices: Prices | None = None) -> Program:
        """The compiled flow for `cache_key`: the keys, or (keys, producer choice).

        Raises:
            RequestError: the keys set a hard check or a fact one reads.
        """
        return self._flows.get(cache_key, prices)

    def plan(self, keys: Iterable[str]) -> Flow:
        """The flow for requests that bring exactly these keys, under the current choice
        of producers (no request is counted)."""
        keys = frozenset(keys)
        if self.chooser is None:
            return self.program(keys).flow
        signature, prices = self.chooser.prices(ask=False)
        return self.program((keys, signature), prices).flow

    def program_for(self, state: dict[str, Any]) -> tuple[Program, Prices | None]:
        """The compiled flow for a request's state, and the prices it was planned at
        (None under declared costs). A state already checked by `as_state` is not
        checked again on a cached flow: this runs on every request."""
        keys = frozenset(state)
        if self.chooser is None:
            program = self.cached(keys)
            if program is None:
                as_state(state)
                program = self._flows.get(keys)
            return program, None
        as_state(state)
        signature, prices = self.chooser.prices(state=state)
        return self.program((keys, signature), prices), prices

    def recorded_program(self, keys: frozenset[str], plan: object) -> tuple[Program, Prices | None]:
        """The flow a record's `plan` ran: under measured costs, the producers it names,
        whatever the cost book would choose now (and without counting an ask)."""
        chooser = self.chooser
        if chooser is None:
            return self.program(keys), None
        _, current = chooser.prices(ask=False)
        prices: dict[str, Price] = dict(current)
        for fact, group in chooser.groups.items():
            entry = plan.get(fact) if isinstance(plan, Mapping) else None
            if not isinstance(entry, Mapping):
                continue
            producer, costs = entry.get("producer"), entry.get("candidates")
            if producer not in {p.name for p in group} or not isinstance(costs, Mapping):
                continue
            for p in group:
                cost = costs.get(p.name)
                if not isinstance(cost, int | float) or isinstance(cost, bool):
                    cost = prices[p.name].cost_ms
                source = str(entry.get("source")) if p.name == producer else prices[p.name].source
                prices[p.name] = Price(float(cost), source, preferred=p.name == producer)
        signature = tuple(
            next(p.name for p in group if prices[p.name].preferred)
            for group in chooser.groups.values()
        )
        return self.program((keys, signature), prices), prices

    def node_cost(self, node: Node) -> float:
        """Expected ms of a node: its measured mean, else its declared cost, else 0."""
        part = node.parts[0]
        mean = self.cost_book.mean(part.name)
        if mean is not None:
            return mean
        return part.cost if part.cost is not None else 0.0
