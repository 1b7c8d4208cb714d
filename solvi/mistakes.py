"""Catalog mistakes a System finds when it is built, before any request runs.

Each finder looks at the catalog's parts (and questions) once and says what is
wrong in words that name the parts and the fix. `System` raises or warns with
them; `solvi check` reports the same findings, so the two never disagree.
"""

from __future__ import annotations

import math
import types
import typing
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Union

import attrs

from solvi.catalog import Part, inputs_of
from solvi.errors import _closest
from solvi.question import Question
from solvi.strategy import each_reachable_facts

__all__ = [
    "SolviWarning",
    "TypeConflict",
    "check_inputs",
    "key_typos",
    "request_keys",
    "type_conflicts",
    "ungoverning_checks",
]


class SolviWarning(UserWarning):
    """A catalog works but does something its author almost surely did not mean."""


def _flow_parts(parts: Iterable[Part]) -> list[Part]:
    return [p for p in parts if p.kind != "extract"]


# -- hard checks that gate nothing -------------------------------------------------


def ungoverning_checks(parts: Sequence[Part], questions: Sequence[Question]) -> list[str]:
    """One message per hard check that no question's flow can hold, whatever the keys.

    Such a check never runs, so it can never fail a request: a check that reads
    only request keys joins a flow only when a rule reads it or a question
    requires it.
    """
    flow_parts = _flow_parts(parts)
    reached: set[str] = set().union(*each_reachable_facts(questions, flow_parts))
    rules = [p.name for p in flow_parts if p.kind == "rule"]
    example = rules[0] if rules else "approve"
    return [
        f"hard check {p.name!r} governs no question: no question's flow holds it for any "
        f"request, so it never runs and can never fail one; read it in the rules it should "
        f"gate (e.g. def {example}({p.provides}, ...)), or list it in their "
        f"Question(..., requires=[{p.name!r}])"
        for p in flow_parts
        if p.is_hard_check and p.provides not in reached
    ]


# -- request keys ------------------------------------------------------------------


def _produced(parts: Iterable[Part]) -> set[str]:
    return {p.provides for p in parts}


def _readers(parts: Iterable[Part], name: str) -> list[str]:
    return [p.name for p in parts if name in p.inputs]


def request_keys(parts: Sequence[Part]) -> list[str]:
    """The names parts read that no part provides, in the order they are first read."""
    return list(inputs_of(parts))


def check_inputs(parts: Sequence[Part], inputs: Iterable[str]) -> str | None:
    """With declared inputs, the first name a part reads that nothing gives it.

    Returns:
        The message for `PlanError`, or None when every name a part reads is a
        declared input or a fact some part provides.
    """
    declared = list(dict.fromkeys(inputs))
    flow_parts = _flow_parts(parts)
    produced = _produced(flow_parts)
    for name in declared:
        if name in produced:
            makers = ", ".join(p.name for p in flow_parts if p.provides == name)
            return (
                f"inputs= lists {name!r}, which part {makers} provides; inputs= names only "
                f"request keys no part computes (to let a request bring a computed fact a "
                f"hard check relies on, use overrides=)"
            )
    known = set(declared)
    for key in request_keys(flow_parts):
        if key in known:
            continue
        readers = ", ".join(_readers(flow_parts, key))
        hint = _closest(key, [*declared, *sorted(produced)])
        return (
            f"part {readers} reads {key!r}, which no part provides and inputs= does not "
            f"list{hint}; fix the parameter name, or add {key!r} to inputs="
        )
    return None


#: how much alike (difflib's ratio) a request key and another name must look to be reported
_TYPO_CUTOFF = 0.8


def key_typos(parts: Sequence[Part]) -> list[str]:
    """One message per request key that looks like a computed fact or another key.

    A misspelt parameter becomes a request key nobody sends, so every request
    abstains for want of it; these are the likely cases.
    """
    flow_parts = _flow_parts(parts)
    produced = sorted(_produced(flow_parts))
    keys = request_keys(flow_parts)
    readers: dict[str, list[str]] = {}
    for p in flow_parts:
        for name in dict.fromkeys(p.inputs):
            readers.setdefault(name, []).append(p.name)
    alike = _LookAlikes.of([*produced, *keys], _TYPO_CUTOFF)
    found = []
    for key in keys:
        # difflib picks among the names that reach the cutoff, and near() holds them all
        others = [n for n in alike.near(key) if n != key and not _compound(key, n)]
        hint = _closest(key, others, cutoff=_TYPO_CUTOFF)
        if hint:
            found.append(
                f"request key {key!r}, read by {', '.join(readers[key])}, looks like a misspelt "
                f"name{hint}; fix the parameter name, or declare the request keys with "
                f"System(..., inputs=[...]) so a misspelling fails when the System is built"
            )
    return found


def _ratio(matches: int, length: int) -> float:
    """difflib's ratio, from matched letters and both names' length, as difflib works it."""
    return 2.0 * matches / length if length else 1.0


def _pieces(name: str) -> list[tuple[str, int]]:
    """The name's pairs of adjacent letters, the nth repeat of a pair numbered n, so two
    names share as many pieces as their multisets of pairs have in common."""
    seen: dict[str, int] = {}
    out = []
    for i in range(len(name) - 1):
        pair = name[i : i + 2]
        seen[pair] = seen.get(pair, 0) + 1
        out.append((pair, seen[pair]))
    return out


def _pieces_needed(length: int, cutoff: float) -> int:
    """How many pieces two names of `length` letters in all share when their ratio reaches
    `cutoff`.

    The ratio is 2M/length, M the letters of difflib's matching blocks. k blocks hold
    M - k shared pieces, and blocks are apart by an unmatched letter of either name,
    so k <= length - 2M + 1: at least 3M - length - 1 pieces, M the least that reaches.
    """
    least = max(0, math.ceil(cutoff * length / 2) - 1)
    while _ratio(least, length) < cutoff:
        least += 1
    return 3 * least - length - 1


@attrs.frozen
class _LookAlikes:
    """Names indexed by length and pieces, to find the few that may look like a given one
    without comparing it with each (5,000 request keys against all names took 50 s)."""

    cutoff: float
    by_length: Mapping[int, Sequence[str]]
    #: piece -> the names that hold it
    holders: Mapping[tuple[str, int], Sequence[str]]

    @classmethod
    def of(cls, names: Iterable[str], cutoff: float) -> _LookAlikes:
        """Index `names` for look-alikes at `cutoff`."""
        by_length: dict[int, list[str]] = {}
        holders: dict[tuple[str, int], list[str]] = {}
        for name in dict.fromkeys(names):
            by_length.setdefault(len(name), []).append(name)
            for piece in _pieces(name):
                holders.setdefault(piece, []).append(name)
        return cls(cutoff, by_length, holders)

    def near(self, name: str) -> list[str]:
        """Every indexed name whose difflib ratio with `name` may reach the cutoff.

        A name too long or too short cannot (difflib's real_quick_ratio), nor can one
        that shares fewer pieces with `name` than that ratio needs.
        """
        needed = {
            length: _pieces_needed(length + len(name), self.cutoff)
            for length in self.by_length
            if _ratio(min(length, len(name)), length + len(name)) >= self.cutoff
        }
        found = [
            n for length, least in needed.items() if least <= 0 for n in self.by_length[length]
        ]
        shared: Counter[str] = Counter()
        for piece in _pieces(name):
            shared.update(self.holders.get(piece, ()))
        for n, count in shared.items():
            least = needed.get(len(n))
            if least is not None and 0 < least <= count:  # (least <= 0: found already)
                found.append(n)
        return found


def _compound(a: str, b: str) -> bool:
    """Whether one name is the other with words added (`policy_id` and `policy`): the
    way a request names what a part looks up, not a misspelling."""
    short, long = sorted((a.split("_"), b.split("_")), key=len)
    size = len(short)
    return size < len(long) and any(
        long[i : i + size] == short for i in range(len(long) - size + 1)
    )


# -- type hints --------------------------------------------------------------------


@attrs.frozen
class TypeConflict:
    """A producer's return annotation that a consumer's parameter annotation cannot accept."""

    producer: str
    consumer: str
    fact: str
    returns: str
    reads: str

    def __str__(self) -> str:
        return (
            f"part {self.producer!r} returns {self.returns} (its return annotation) but part "
            f"{self.consumer!r} reads {self.fact!r} as {self.reads} (its parameter "
            f"annotation), and the two cannot match; correct one of the annotations, or "
            f"convert the value in {self.producer!r}"
        )


def _hints(part: Part) -> dict[str, Any]:
    """The part's resolved annotations; none when they cannot be resolved."""
    try:
        return typing.get_type_hints(part.func)
    except Exception:  # unresolvable hints say nothing either way
        return {}


def _alternatives(hint: Any) -> list[Any] | None:
    """The classes a hint allows, or None when it allows anything or is not understood."""
    if hint is Any or hint is object:
        return None
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        out: list[Any] = []
        for member in typing.get_args(hint):
            classes = _alternatives(member)
            if classes is None:
                return None
            out.extend(classes)
        return out
    if origin is typing.Annotated:
        return _alternatives(typing.get_args(hint)[0])
    if origin is typing.Literal:
        return list(dict.fromkeys(type(v) for v in typing.get_args(hint)))
    if hint is None or hint is type(None):
        return [type(None)]
    cls = origin if origin is not None else hint
    return [cls] if isinstance(cls, type) else None


#: what a consumer annotated with the key also takes (the numeric tower of PEP 484)
_WIDER: dict[type, tuple[type, ...]] = {float: (int,), complex: (int, float)}


def _may_match(produced: type, wanted: type) -> bool:
    try:
        if any(issubclass(produced, narrower) for narrower in _WIDER.get(wanted, ())):
            return True
        return issubclass(produced, wanted) or issubclass(wanted, produced)
    except TypeError:  # a class that refuses issubclass (a non-runtime protocol)
        return True


def _text(hint: Any) -> str:
    if isinstance(hint, type) and not typing.get_args(hint):
        return hint.__qualname__
    return repr(hint).replace("typing.", "")


def type_conflicts(parts: Sequence[Part]) -> list[TypeConflict]:
    """Every (producer, consumer) pair whose annotations of one fact cannot match.

    A check's value is always a bool, whatever its annotation says. Where either
    side has no annotation, or one that cannot be resolved, nothing is said.
    """
    flow_parts = _flow_parts(parts)
    hints = {p.name: _hints(p) for p in flow_parts}
    returns: dict[str, list[tuple[Part, Any]]] = {}
    for p in flow_parts:
        hint: Any = bool if p.kind == "check" else hints[p.name].get("return")
        if hint is not None:
            returns.setdefault(p.provides, []).append((p, hint))
    conflicts = []
    for consumer in flow_parts:
        for fact in consumer.inputs:
            wanted_hint = hints[consumer.name].get(fact)
            if wanted_hint is None:
                continue
            wanted = _alternatives(wanted_hint)
            if wanted is None:
                continue
            for producer, produced_hint in returns.get(fact, ()):
                produced = _alternatives(produced_hint)
                if produced is None:
                    continue
                if not any(_may_match(a, b) for a in produced for b in wanted):
                    conflicts.append(
                        TypeConflict(
                            producer.name,
                            consumer.name,
                            fact,
                            _text(produced_hint),
                            _text(wanted_hint),
                        )
                    )
    return conflicts
