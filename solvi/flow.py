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
        """A Mermaid flowchart: request keys, parts (hard checks as hexagons), data edges.

        Node ids are prefixed (``key_``, ``part_``) so no name can be a Mermaid keyword
        such as ``end``, and every label is quoted and escaped, so no name can end its
        label early and add nodes or edges of its own.
        """
        lines = ["flowchart LR"]
        producer_of: dict[str, list[str]] = {}
        for node in self.nodes:
            producer_of.setdefault(node.fact, []).extend(p.name for p in node.parts)
        used_keys = sorted(
            {i for node in self.nodes for p in node.parts for i in p.inputs if i in self.keys}
        )
        for key in used_keys:
            lines.append(f'    key_{key}[/"{_label(key)}"/]')
        for node in self.nodes:
            for p in node.parts:
                label = f'"{_label(p.name)}"'
                if p.is_hard_check:
                    shape = f"{{{{{label}}}}}"
                elif p.kind == "rule":
                    shape = f"([{label}])"
                else:
                    shape = f"[{label}]"
                lines.append(f"    part_{p.name}{shape}")
        for node in self.nodes:
            for p in node.parts:
                for i in p.inputs:
                    if i in self.keys:
                        lines.append(f"    key_{i} --> part_{p.name}")
                    else:
                        for src in producer_of.get(i, ()):
                            lines.append(f'    part_{src} -->|"{_label(i)}"| part_{p.name}')
        return "\n".join(lines)


#: characters a quoted Mermaid label must not hold as they are, and their entity codes
_MERMAID = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "\n": " "}


def _label(text: str) -> str:
    return "".join(_MERMAID.get(c, c) for c in text)
