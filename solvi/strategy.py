"""Strategists: from a catalog, questions and the request's keys to a Flow.

A strategist decides which producers of each fact belong in a flow; the walk
from the questions' targets back to the keys, the checks of what was computed,
the cycle reports and the ordering are shared by all of them. The walk and the
cycle search are also functions of their own (`reachable_facts`, `fact_cycles`),
so that ``solvi check`` reports what the planner would do.
"""

from __future__ import annotations

import heapq
import os
from collections import deque
from collections.abc import Iterable, Mapping, Sequence, Set
from types import MappingProxyType
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from solvi.catalog import Part
from solvi.errors import PlanError, _closest
from solvi.flow import Flow, FlowNode, QuestionPlan
from solvi.order import MAX_CHECKPOINT_BYTES, Head, read_checkpoint
from solvi.question import Question

__all__ = [
    "CYCLE_SHOWN",
    "CostStrategist",
    "DeterministicStrategist",
    "HeadPlan",
    "ModelStrategist",
    "Price",
    "Prices",
    "Strategist",
    "cycle_text",
    "each_reachable_facts",
    "fact_cycles",
    "price_of",
    "reachable_facts",
]


@attrs.frozen
class Price:
    """What a part costs for planning, where that figure came from, and whether a
    cost policy wants it tried now (warm-up, recheck, frozen choice) whatever it costs."""

    cost_ms: float
    source: str
    preferred: bool = False
    #: why a cost policy chose as it did, when a figure alone does not say
    note: str | None = None


#: part name -> Price
Prices = Mapping[str, Price]


@attrs.frozen
class HeadPlan(QuestionPlan):
    """The plan of a question answered by a trained head: its targets are the facts
    the head selected, and the answer is the head's."""

    head: Head


def price_of(part: Part, prices: Prices | None) -> Price:
    """A part's price: the given one, else its declared cost, else 0 ms."""
    if prices is not None and part.name in prices:
        return prices[part.name]
    return Price(part.cost if part.cost is not None else 0.0, "declared")


# -- the walk and the cycle search, shared by the planner and `solvi check` -------------


def _rule_of(question: Question, by_name: Mapping[str, Part]) -> Part | None:
    """The rule part that answers `question`, or None when it reports facts instead."""
    if question.uses is not None and question.rule is None:
        return None
    rule = by_name.get(question.rule if question.rule is not None else question.name)
    return rule if rule is not None and rule.kind == "rule" else None


def _check_readers(parts: Iterable[Part]) -> dict[str, list[Part]]:
    """For each fact, the checks among `parts` that read it: `_walk_back`'s index."""
    readers: dict[str, list[Part]] = {}
    for c in (p for p in parts if p.kind == "check"):
        for i in c.inputs:
            readers.setdefault(i, []).append(c)
    return readers


def _walk_back(
    start: Iterable[str],
    producers: Mapping[str, Sequence[Part]],
    keys: Set[str],
    check_readers: Mapping[str, Sequence[Part]],
) -> set[str]:
    """The facts a flow computes for `start`: back through `producers` to the keys, plus
    each check (among `producers`) whose inputs that reaches and that reads a computed fact
    (such a check reads a reached fact, so only `check_readers` of those are looked at)."""
    facts: set[str] = set()
    fresh: list[str] = []  # reached facts whose check readers are still to be looked at

    def closure(todo: Iterable[str]) -> None:
        stack = [f for f in todo if f not in keys]
        while stack:
            f = stack.pop()
            if f in facts:
                continue
            facts.add(f)
            fresh.append(f)
            for p in producers.get(f, ()):
                stack.extend(i for i in p.inputs if i not in keys and i not in facts)

    closure(start)
    while fresh:
        for c in check_readers.get(fresh.pop(), ()):
            f = c.provides
            if f in facts or f in keys or c not in producers.get(f, ()):
                continue
            if all(i in keys or i in facts for i in c.inputs):
                closure((f,))
    return facts


def reachable_facts(
    question: Question, parts: Sequence[Part], keys: Set[str] | None = None
) -> frozenset[str]:
    """The facts `question` can ever need: the planner's walk with every producer planned.

    It starts where the planner starts (the rule and its arguments, else `uses`, else
    every fact of an fn or check part), adds the parts the question `requires`, walks back
    through every producer to the request's `keys` (by default the facts no part provides:
    the widest walk), and adds each check whose inputs are reached, one a computed fact.
    """
    (facts,) = each_reachable_facts([question], parts, keys)
    return facts


def each_reachable_facts(
    questions: Iterable[Question], parts: Sequence[Part], keys: Set[str] | None = None
) -> tuple[frozenset[str], ...]:
    """`reachable_facts` of each question, in order, the parts' tables built once for all."""
    flow_parts = [p for p in parts if p.kind != "extract"]
    producers: dict[str, list[Part]] = {}
    for p in flow_parts:
        producers.setdefault(p.provides, []).append(p)
    if keys is None:
        keys = {i for p in flow_parts for i in p.inputs if i not in producers}
    by_name = {p.name: p for p in flow_parts}
    every = list(dict.fromkeys(p.provides for p in flow_parts if p.kind in ("fn", "check")))
    readers = _check_readers(flow_parts)
    found = []
    for question in questions:
        rule = _rule_of(question, by_name)
        uses = every if question.uses is None else question.uses
        start = [rule.provides, *rule.inputs] if rule is not None else list(uses)
        start.extend(by_name[name].provides for name in question.requires if name in by_name)
        found.append(frozenset(_walk_back(start, producers, keys, readers)))
    return tuple(found)


#: the most facts of a cycle a reason names; a longer one is cut, its length said
CYCLE_SHOWN = 12


def cycle_text(path: Sequence[str]) -> str:
    """A closed path as a reason shows it: ``a -> b -> a``, cut in the middle past
    `CYCLE_SHOWN` facts (every part of a cycle of 5,000 held all 5,000 names)."""
    if len(path) <= CYCLE_SHOWN + 1:
        return " -> ".join(path)
    head = " -> ".join(path[: CYCLE_SHOWN - 1])
    return f"{head} -> ... ({len(path) - 1} facts in all) -> {path[-1]}"


def fact_cycles(
    producers: Mapping[str, Sequence[Part]], among: Set[str] | None = None
) -> dict[str, tuple[str, ...]]:
    """For each fact that depends on itself, the shortest such dependency, as a closed path.

    A path ``a -> b -> a`` means a producer of `b` reads `a` and a producer of
    `a` reads `b`. Ties go to the alphabetically first step, so reports are
    stable; every fact on a cycle is a key of the result.

    Args:
        producers: fact -> the parts that provide it.
        among: look only at dependencies among these facts (default: all of
            `producers`); the planner passes the facts it cannot compute.

    Returns:
        fact -> the closed path from that fact back to itself, for the facts
        on a cycle, in the order of `producers`.
    """
    facts = [f for f in producers if among is None or f in among]
    inside = set(facts)
    readers: dict[str, set[str]] = {f: set() for f in facts}
    for f in facts:
        for p in producers[f]:
            for i in p.inputs:
                if i in inside:
                    readers[i].add(f)
    succ = {f: sorted(rs) for f, rs in readers.items()}
    # A cycle through f stays inside f's strongly connected component: the search
    # from f looks only there, and not at all for a fact on no cycle (a chain of
    # 10,000 facts took 7 s when every fact searched the whole graph).
    import networkx  # only when a report or a blocked plan needs it

    graph = networkx.DiGraph()
    graph.add_nodes_from(facts)
    graph.add_edges_from((g, h) for g, hs in succ.items() for h in hs)
    component: dict[str, set[str]] = {}
    for members in networkx.strongly_connected_components(graph):
        if len(members) > 1 or any(f in succ[f] for f in members):
            for f in members:
                component[f] = members
    cycles: dict[str, tuple[str, ...]] = {}
    for f in facts:
        scc = component.get(f)
        if scc is None:
            continue
        # Breadth first from f, back to f: the first arrival is a shortest cycle.
        came_from: dict[str, str] = {}
        queue = deque([f])
        while queue and f not in came_from:
            g = queue.popleft()
            for h in succ[g]:
                if h in scc and h not in came_from:
                    came_from[h] = g
                    queue.append(h)
                    if h == f:
                        break
        if f in came_from:
            path = [f]
            g = came_from[f]
            while g != f:
                path.append(g)
                g = came_from[g]
            path.append(f)
            cycles[f] = tuple(reversed(path))
    return cycles


@runtime_checkable
class Strategist(Protocol):
    """Plans a flow for one set of request keys.

    `plan` is called once per key set (the System caches the result), never per
    request, so it may be thorough.
    """

    name: str

    def plan(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        keys: frozenset[str],
        prices: Prices | None = None,
    ) -> Flow:
        """Return the flow for requests that bring exactly `keys`.

        `prices` maps part names to a `Price`, for planners that choose by
        cost; parts it does not name use their declared `cost=`.
        """
        ...


@attrs.frozen
class _Why:
    """Why a fact cannot be computed from the keys."""

    guard: Literal["cycle", "inputs"]
    text: str


class _Planner:
    """The shared planning machinery; subclasses say which producers a fact uses."""

    name = "base"
    #: "all": a fact is computable only when every producer can run;
    #: "any": when at least one can.
    needs: Literal["all", "any"] = "all"
    #: whether `select` keeps only some of the producers that can run
    prunes = False

    def select(
        self, fact: str, runnable: Sequence[Part], prices: Prices | None
    ) -> tuple[Part, ...]:
        """The producers of `fact` the flow holds, from those that can run."""
        return tuple(runnable)

    def plan(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        keys: frozenset[str],
        prices: Prices | None = None,
        *,
        heads: Mapping[str, Head] | None = None,
    ) -> Flow:
        """Plan a flow for the given keys (see the module docstring).

        `heads` maps question names to trained heads: a question without a rule
        that has one targets the head's facts (its plan is a `HeadPlan`).
        """
        flow_parts = [p for p in parts if p.kind != "extract"]
        producers: dict[str, list[Part]] = {}
        for p in flow_parts:
            producers.setdefault(p.provides, []).append(p)
        computable, runnable = self._fixpoint(flow_parts, producers, keys)
        why = self._explain(producers, keys, computable, runnable)
        usable = {
            f: [p for p in ps if p in runnable]
            for f, ps in producers.items()
            if f in computable and f not in keys
        }
        keep: list[frozenset[str]] | None = None
        if self.prunes:
            # Whatever producers are chosen, every hard check that would govern a
            # question with all of them planned still governs it.
            full = {f: tuple(ps) for f, ps in usable.items()}
            full_plans, _ = self._questions(
                parts, questions, keys, producers, computable, runnable, full, why, None, heads
            )
            by_name = {p.name: p for p in flow_parts}
            keep = [frozenset(by_name[g].provides for g in q.governing) for q in full_plans]
        selected = {f: self.select(f, ps, prices) for f, ps in usable.items()}
        plans, per_question = self._questions(
            parts, questions, keys, producers, computable, runnable, selected, why, keep, heads
        )
        nodes = self._order(selected, keys, plans, per_question)
        in_flow = {p.name for node in nodes for p in node.parts}
        skipped: dict[str, str] = {}
        choices: dict[str, dict[str, Any]] = {}
        for node in nodes:
            candidates = usable[node.fact]
            if self.prunes and len(candidates) > 1:
                (winner,) = node.parts
                price = price_of(winner, prices)
                choices[node.fact] = {
                    "producer": winner.name,
                    "cost_ms": price.cost_ms,
                    "source": price.source,
                    "candidates": {p.name: price_of(p, prices).cost_ms for p in candidates},
                }
                for p in candidates:
                    if p is not winner:
                        skipped[p.name] = f"not needed: {node.fact} comes from {winner.name}"
        for p in flow_parts:
            if p.name not in in_flow and p.name not in skipped:
                skipped[p.name] = self._skip_reason(p, keys, producers, computable, runnable, why)
        return Flow(
            keys=keys,
            nodes=nodes,
            questions=tuple(plans),
            skipped={p.name: skipped[p.name] for p in flow_parts if p.name in skipped},
            strategist=self.name,
            choices=choices,
        )

    # -- what can be computed -------------------------------------------

    def _fixpoint(
        self, parts: Sequence[Part], producers: Mapping[str, list[Part]], keys: frozenset[str]
    ) -> tuple[set[str], set[Part]]:
        computable: set[str] = set(keys)
        runnable: set[Part] = set()
        unmet: dict[Part, int] = {}
        readers: dict[str, list[Part]] = {}
        for p in parts:
            wanted = {i for i in p.inputs if i not in keys}
            unmet[p] = len(wanted)
            for i in wanted:
                readers.setdefault(i, []).append(p)
        pending_producers = {f: len(ps) for f, ps in producers.items()}
        queue = [p for p in parts if unmet[p] == 0]
        while queue:
            p = queue.pop()
            runnable.add(p)
            fact = p.provides
            if fact in computable:
                continue
            pending_producers[fact] -= 1
            if self.needs == "any" or pending_producers[fact] == 0:
                computable.add(fact)
                for reader in readers.get(fact, ()):
                    unmet[reader] -= 1
                    if unmet[reader] == 0:
                        queue.append(reader)
        return computable, runnable

    def _explain(
        self,
        producers: Mapping[str, list[Part]],
        keys: frozenset[str],
        computable: set[str],
        runnable: set[Part],
    ) -> dict[str, _Why]:
        """For each fact that cannot be computed, say why: a cycle, or missing inputs."""
        blocked = {f for f in producers if f not in computable}
        if not blocked:
            return {}
        why: dict[str, _Why] = {
            f: _Why("cycle", "on a cycle: " + cycle_text(path))
            for f, path in fact_cycles(producers, among=blocked).items()
        }
        for f in sorted(blocked):
            if f in why:
                continue
            missing: list[str] = []
            for p in producers[f]:
                for i in p.inputs:
                    if i not in computable and i not in missing:
                        missing.append(i)
            why[f] = _Why("inputs", _missing(missing, keys, producers))
        return why

    def _skip_reason(
        self,
        part: Part,
        keys: frozenset[str],
        producers: Mapping[str, list[Part]],
        computable: set[str],
        runnable: set[Part],
        why: Mapping[str, _Why],
    ) -> str:
        fact = part.provides
        if fact in keys:
            return "not needed"
        if fact in why and why[fact].guard == "cycle":
            return why[fact].text
        missing = [i for i in part.inputs if i not in computable]
        if missing:
            return _missing(missing, keys, producers)
        if fact not in computable:
            return why[fact].text
        return "not needed"

    # -- questions --------------------------------------------------------

    def _questions(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        keys: frozenset[str],
        producers: Mapping[str, list[Part]],
        computable: set[str],
        runnable: set[Part],
        selected: Mapping[str, tuple[Part, ...]],
        why: Mapping[str, _Why],
        keep: Sequence[frozenset[str]] | None,
        heads: Mapping[str, Head] | None,
    ) -> tuple[list[QuestionPlan], list[frozenset[str]]]:
        by_name = {p.name: p for p in parts}
        check_readers = _check_readers(parts)
        plans: list[QuestionPlan] = []
        facts_per_question: list[frozenset[str]] = []

        def reason_for(fact: str) -> _Why:
            if fact not in why:
                return _Why("inputs", _missing([fact], keys, producers))
            if fact in answer_facts and rule is not None:
                return why[fact]
            return _Why(why[fact].guard, f"cannot compute {fact}: {why[fact].text}")

        for index, q in enumerate(questions):
            rule = _rule_of(q, by_name)
            head = heads.get(q.name) if heads and rule is None else None
            narrowed = True
            if rule is not None:
                targets: tuple[str, ...] = rule.inputs
                answer_facts: tuple[str, ...] = (rule.provides,)
            elif head is not None:
                targets = answer_facts = head.facts
            elif q.uses is not None:
                targets = q.uses
                answer_facts = q.uses
            else:
                targets = tuple(
                    f
                    for f in dict.fromkeys(p.provides for p in parts if p.kind in ("fn", "check"))
                    if f in computable and f not in keys
                )
                answer_facts = targets
                narrowed = False
            blocked: _Why | None = None
            for f in (*targets, *answer_facts):
                if f not in computable:
                    blocked = reason_for(f)
                    break
            required_facts: list[str] = []
            if blocked is None:
                for name in q.requires:
                    part = by_name[name]
                    if part.provides not in computable or part not in runnable:
                        text = self._skip_reason(part, keys, producers, computable, runnable, why)
                        blocked = _Why(
                            "cycle" if text.startswith("on a cycle") else "inputs",
                            f"required part {name}: {text}",
                        )
                        break
                    required_facts.append(part.provides)
            facts: set[str] = set()
            if blocked is None:
                start = (*answer_facts, *targets, *required_facts)
                if keep is not None:
                    start = (*start, *keep[index])
                facts = _walk_back(start, selected, keys, check_readers)
            governing = tuple(
                p.name
                for p in sorted(
                    (p for f in facts for p in selected.get(f, ()) if p.is_hard_check),
                    key=lambda p: p.index,
                )
            )
            fields: dict[str, Any] = {
                "name": q.name,
                "index": index,
                "rule": rule.name if rule is not None else None,
                "targets": tuple(targets),
                "facts": frozenset(facts),
                "governing": governing,
                "narrowed": narrowed,
                "blocked": None if blocked is None else blocked.text,
                "blocked_guard": None if blocked is None else blocked.guard,
                "forced": q.forced,
            }
            plans.append(QuestionPlan(**fields) if head is None else HeadPlan(**fields, head=head))
            facts_per_question.append(frozenset(facts))
        return plans, facts_per_question

    # -- order ------------------------------------------------------------

    def _order(
        self,
        selected: Mapping[str, tuple[Part, ...]],
        keys: frozenset[str],
        plans: Sequence[QuestionPlan],
        per_question: Sequence[frozenset[str]],
    ) -> tuple[FlowNode, ...]:
        facts: set[str] = set().union(*per_question) if per_question else set()
        selected = _without_cycles(selected, facts)
        reads = {f: [i for p in selected[f] for i in p.inputs if i in facts] for f in facts}
        hard = {f for f in facts if any(p.is_hard_check for p in selected[f])}
        first_phase: set[str] = set()
        stack = list(hard)
        while stack:
            f = stack.pop()
            if f not in first_phase:
                first_phase.add(f)
                stack.extend(reads[f])
        is_rule = {f: all(p.kind == "rule" for p in selected[f]) for f in facts}
        rank = {f: min(p.index for p in selected[f]) for f in facts}
        waiting = {f: len(set(reads[f])) for f in facts}
        dependents: dict[str, list[str]] = {f: [] for f in facts}
        for f in facts:
            for i in set(reads[f]):
                dependents[i].append(f)

        def key(f: str) -> tuple[int, bool, int, str]:
            return (0 if f in first_phase else 1, is_rule[f], rank[f], f)

        heap = [key(f) for f in facts if waiting[f] == 0]
        heapq.heapify(heap)
        order: list[str] = []
        while heap:
            f = heapq.heappop(heap)[-1]
            order.append(f)
            for d in dependents[f]:
                waiting[d] -= 1
                if waiting[d] == 0:
                    heapq.heappush(heap, key(d))
        position = {f: n for n, f in enumerate(order)}
        members: dict[str, set[int]] = {f: set() for f in facts}  # one pass over the plans
        for q, fs in zip(plans, per_question, strict=True):
            for f in fs:
                members[f].add(q.index)
        return tuple(
            FlowNode(
                index=n,
                fact=f,
                parts=selected[f],
                inputs=tuple(dict.fromkeys(i for p in selected[f] for i in p.inputs)),
                deps=tuple(sorted({position[i] for i in reads[f]})),
                phase=0 if f in first_phase else 1,
                questions=frozenset(members[f]),
                is_rule=is_rule[f],
                is_hard_check=f in hard,
            )
            for n, f in enumerate(order)
        )


def _without_cycles(
    selected: Mapping[str, tuple[Part, ...]], facts: set[str]
) -> Mapping[str, tuple[Part, ...]]:
    """The producers of `facts` less those that read a fact on a cycle among them.

    A fact with a second producer that reads a fact computed from the first (``a``
    from a key, or from ``b``, where ``b`` reads ``a``) could never be ordered; left
    out, it took every question that needed it to a "decided" answer of no value. The
    producer that closes the cycle cannot run before the fact it computes, so it is
    dropped where the fact keeps another producer.

    Raises:
        PlanError: a cycle no dropped producer breaks (the planner blocks those
            before, so this is a strategist's flow gone wrong).
    """
    kept = dict(selected)
    while True:
        waiting = {f: {i for p in kept[f] for i in p.inputs if i in facts} for f in facts}
        dependents: dict[str, list[str]] = {f: [] for f in facts}
        for f, inputs in waiting.items():
            for i in inputs:
                dependents[i].append(f)
        count = {f: len(inputs) for f, inputs in waiting.items()}
        ready = [f for f in facts if not count[f]]
        done: set[str] = set()
        while ready:
            f = ready.pop()
            done.add(f)
            for d in dependents[f]:
                count[d] -= 1
                if not count[d]:
                    ready.append(d)
        left = facts - done
        if not left:
            return kept
        dropped = False
        for f in sorted(left):
            rest = tuple(p for p in kept[f] if not any(i in left for i in p.inputs))
            if rest and len(rest) < len(kept[f]):
                kept[f] = rest
                dropped = True
        if not dropped:
            msg = (
                f"the flow cannot order the facts {', '.join(sorted(left))}: each waits for "
                f"another of them; break the cycle in the catalog"
            )
            raise PlanError(msg)


class DeterministicStrategist(_Planner):
    """The default: every producer of a needed fact is in the flow.

    A fact is computable only when all its producers can run; at run time the
    producers are tried in declaration order until one succeeds.
    """

    name = "deterministic"
    needs: Literal["all", "any"] = "all"


class CostStrategist(_Planner):
    """Plans with costs in mind.

    Args:
        producers: ``"all"`` keeps every producer of a fact that can run and
            drops those whose inputs are never given (so one missing input no
            longer blocks a fact); ``"equivalent"`` treats the producers of a
            fact as interchangeable and plans only the cheapest (by declared
            `cost=`, or the prices the System passes, e.g. measured ones; ties go
            to the first declared), keeping every hard check that would govern a
            question were all producers planned.

    Raises:
        ValueError: `producers` is neither ``"all"`` nor ``"equivalent"``.
    """

    needs: Literal["all", "any"] = "any"

    def __init__(self, producers: Literal["all", "equivalent"] = "all") -> None:
        if producers not in ("all", "equivalent"):
            msg = f'producers must be "all" or "equivalent", got {producers!r}'
            raise ValueError(msg)
        self.producers = producers
        self.prunes = producers == "equivalent"
        self.name = "cost" if producers == "all" else "cost-equivalent"

    def __repr__(self) -> str:
        return f"CostStrategist(producers={self.producers!r})"

    def select(
        self, fact: str, runnable: Sequence[Part], prices: Prices | None
    ) -> tuple[Part, ...]:
        """All producers that can run, or only the cheapest of them."""
        if not self.prunes or len(runnable) < 2:
            return tuple(runnable)

        def rank(p: Part) -> tuple[bool, float, int]:
            price = price_of(p, prices)
            return (not price.preferred, price.cost_ms, p.index)

        return (min(runnable, key=rank),)


class ModelStrategist:
    """Plans like its base strategist, with the targets of trained heads.

    A question without a rule that has a head targets the facts the head
    selected, so its flow narrows to their producers; every other question is
    planned as the base strategist plans it. A System whose questions were
    fitted (`System.fit`) plans with one of these; `load` reads one from a
    checkpoint written by `System.save_heads`, for a fresh process that plans
    and answers without refitting: ``System(cat, strategist=ModelStrategist.load(p))``.

    Args:
        heads: the trained heads, at most one per question.
        base: the strategist that plans everything else (default
            `DeterministicStrategist()`); a `DeterministicStrategist` or a
            `CostStrategist`.
        catalog: the name of the catalog the heads were fitted on, if known.

    Raises:
        TypeError: `base` is not a `DeterministicStrategist` or `CostStrategist`,
            or a head is not a `Head`.
        ValueError: two heads answer the same question.
    """

    def __init__(
        self,
        heads: Iterable[Head] = (),
        base: Strategist | None = None,
        *,
        catalog: str | None = None,
    ) -> None:
        if isinstance(base, ModelStrategist):
            base = base.base
        if base is None:
            base = DeterministicStrategist()
        if not isinstance(base, _Planner):
            msg = (
                f"ModelStrategist plans with heads on top of a DeterministicStrategist or a "
                f"CostStrategist, got {type(base).__name__}; pass one of those as base="
            )
            raise TypeError(msg)
        by_question: dict[str, Head] = {}
        for head in heads:
            if not isinstance(head, Head):
                msg = f"ModelStrategist takes solvi.order.Head objects, got {type(head).__name__}"
                raise TypeError(msg)
            if head.question in by_question:
                msg = f"two heads answer question {head.question!r}; keep one head per question"
                raise ValueError(msg)
            by_question[head.question] = head
        self.base: Strategist = base
        self.heads: Mapping[str, Head] = MappingProxyType(by_question)
        self.catalog = catalog
        self.name = f"{base.name}+heads"
        self.prunes = base.prunes
        self.needs = base.needs

    def __repr__(self) -> str:
        heads = ", ".join(self.heads) or "no heads"
        return f"<ModelStrategist {self.name}: {heads}>"

    def plan(
        self,
        parts: Sequence[Part],
        questions: Sequence[Question],
        keys: frozenset[str],
        prices: Prices | None = None,
    ) -> Flow:
        """The base strategist's flow, with the heads' facts as their questions' targets."""
        assert isinstance(self.base, _Planner)  # checked in __init__
        flow = self.base.plan(parts, questions, keys, prices, heads=self.heads)
        return attrs.evolve(flow, strategist=self.name)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, base: Strategist | None = None
    ) -> ModelStrategist:
        """The strategist of a checkpoint written by `System.save_heads`.

        Only JSON is read, and all of it is checked (see `solvi.order.read_checkpoint`):
        a checkpoint never runs anything. A System built with it refuses heads
        fitted on another catalog version.

        Raises:
            CheckpointError: the file is not a heads checkpoint, or was changed.
            OSError: the file cannot be read.
        """
        source = os.fspath(path)
        with open(source, "rb") as f:
            data = f.read(MAX_CHECKPOINT_BYTES + 1)  # one byte more: too large is refused
        checkpoint = read_checkpoint(data, source=source)
        return cls(checkpoint.heads, base, catalog=checkpoint.catalog)


def _missing(
    names: Sequence[str], keys: frozenset[str], producers: Mapping[str, list[Part]]
) -> str:
    """``inputs missing: a, b``, with the closest request key for a name no part
    produces (a typo of a key the request has: ``incom (did you mean 'income'?)``)."""
    # A stricter match than for names in code: a request's keys are few and unrelated.
    shown = [n if n in producers else n + _closest(n, keys, cutoff=0.8) for n in names]
    return "inputs missing: " + ", ".join(shown)
