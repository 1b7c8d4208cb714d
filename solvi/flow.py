"""A planned flow: which parts run for a set of request keys, in which order, and why."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from solvi.catalog import Part

__all__ = ["Flow", "FlowNode", "QuestionPlan"]


def _frozen_map(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@attrs.frozen
class FlowNode:
    """One fact the flow computes, with its producers in the order they are tried.

    `phase` is 0 for hard checks and what they read, 1 for the rest; `deps` are
    the indices of the nodes whose facts it reads; `questions` the indices of the
    questions whose flow holds it.
    """

    index: int
    fact: str
    parts: tuple[Part, ...]
    inputs: tuple[str, ...]
    deps: tuple[int, ...]
    phase: int
    questions: frozenset[int]
    is_rule: bool
    is_hard_check: bool


@attrs.frozen
class QuestionPlan:
    """How one question is answered under a flow.

    `blocked` says why it cannot be answered at all with these keys (it then
    abstains without running anything); `governing` lists the hard checks in its
    flow, in declaration order: the first of them that fails decides.
    """

    name: str
    index: int
    rule: str | None
    targets: tuple[str, ...]
    facts: frozenset[str]
    governing: tuple[str, ...]
    narrowed: bool
    blocked: str | None
    blocked_guard: str | None
    forced: Any


@attrs.frozen
class Flow:
    """The plan for every request whose state has exactly these keys.

    A flow depends only on the key set, the catalog, the questions and the
    strategist's choices; a System caches it and never re-plans per request.
    """

    keys: frozenset[str]
    nodes: tuple[FlowNode, ...]
    questions: tuple[QuestionPlan, ...]
    skipped: Mapping[str, str] = attrs.field(converter=_frozen_map)
    strategist: str = "deterministic"
    choices: Mapping[str, Mapping[str, Any]] = attrs.field(factory=dict, converter=_frozen_map)

    @property
    def steps(self) -> tuple[str, ...]:
        """Part names in execution order: hard checks and what they read first, rules last."""
        return tuple(p.name for node in self.nodes for p in node.parts)

    @property
    def narrowed(self) -> Mapping[str, bool]:
        """Per question: False when it reports everything computable (no rule, no `uses`)."""
        return MappingProxyType({q.name: q.narrowed for q in self.questions})

    def question(self, name: str) -> QuestionPlan:
        """The plan of one question.

        Raises:
            KeyError: the flow has no question of that name.
        """
        for q in self.questions:
            if q.name == name:
                return q
        raise KeyError(name)

    def to_mermaid(self) -> str:
        """A Mermaid flowchart: request keys, parts (hard checks as hexagons), data edges."""
        lines = ["flowchart LR"]
        producer_of: dict[str, list[str]] = {}
        for node in self.nodes:
            producer_of.setdefault(node.fact, []).extend(p.name for p in node.parts)
        used_keys = sorted(
            {i for node in self.nodes for p in node.parts for i in p.inputs if i in self.keys}
        )
        for key in used_keys:
            lines.append(f"    key_{key}[/{key}/]")
        for node in self.nodes:
            for p in node.parts:
                if p.is_hard_check:
                    shape = f"{{{{{p.name}}}}}"
                elif p.kind == "rule":
                    shape = f"([{p.name}])"
                else:
                    shape = f"[{p.name}]"
                lines.append(f"    {p.name}{shape}")
        for node in self.nodes:
            for p in node.parts:
                for i in p.inputs:
                    if i in self.keys:
                        lines.append(f"    key_{i} --> {p.name}")
                    else:
                        for src in producer_of.get(i, ()):
                            lines.append(f"    {src} -->|{i}| {p.name}")
        return "\n".join(lines)
