"""Questions: what a System is asked, and what it says when a hard check fails."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs

from solvi.errors import PlanError, _closest

if TYPE_CHECKING:
    from solvi.catalog import Catalog

__all__ = ["UNSET", "Fail", "Question", "check_questions"]


class _Unset:
    """The marker for 'no forced value': a failed hard check makes the question abstain."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()


def _reason(_instance: object, _attribute: object, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        msg = f"Fail(reason) takes a non-empty string saying why the check failed, got {value!r}"
        raise TypeError(msg)


@attrs.frozen
class Fail:
    """What a check returns to fail with a reason of its own.

    A check that returns ``Fail("evidence is 40 days old")`` fails like one that
    returns False, and the answers it settles say why: ``hard check fresh failed:
    evidence is 40 days old``. The check's value in the record is still False.
    """

    reason: str = attrs.field(validator=_reason)

    def __bool__(self) -> bool:
        return False


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _optional_names(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else _names(value)


def _check_name(value: object) -> None:
    if not isinstance(value, str):
        msg = f"a Question's name must be a string (its rule's name), got {value!r}"
        raise TypeError(msg)


@attrs.frozen
class Question:
    """A named question a System answers.

    Args:
        name: the question's name, and by default the name of its rule.
        rule: the rule part that answers it (default: the rule called `name`;
            without one the question reports facts instead).
        uses: for a question without a rule, the facts it reports.
        requires: parts that must run for this question whatever its rule reads.
        forced: the value the question takes when a hard check that governs it
            fails (status ``"forced"``); without it the question abstains.
    """

    name: str = attrs.field(validator=lambda _, __, v: _check_name(v))
    rule: str | None = None
    uses: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)
    requires: tuple[str, ...] = attrs.field(default=(), converter=_names)
    forced: Any = UNSET

    @property
    def has_forced(self) -> bool:
        """Whether a failed hard check forces a value rather than abstaining."""
        return self.forced is not UNSET


def check_questions(catalog: Catalog, questions: tuple[Question, ...]) -> None:
    """Raise for a question that names what the catalog lacks (found at System build).

    Raises:
        PlanError: an unknown or misused name, with the closest known names.
        TypeError: an item is not a Question.
    """
    parts = {p.name: p for p in catalog.parts}
    facts = {p.provides for p in catalog.parts if p.kind != "extract"}
    seen: set[str] = set()
    for q in questions:
        if not isinstance(q, Question):
            msg = f"questions must be Question objects or names, got {q!r}"
            raise TypeError(msg)
        if q.name in seen:
            msg = f"question {q.name!r} is listed twice"
            raise PlanError(msg, name=q.name)
        seen.add(q.name)
        if q.rule is not None:
            if q.rule not in parts:
                rules = [p.name for p in catalog.parts if p.kind == "rule"]
                msg = (
                    f"question {q.name!r} names rule {q.rule!r}, which catalog "
                    f"{catalog.name!r} does not have{_closest(q.rule, rules)}; fix the "
                    f"Question's rule="
                )
                raise PlanError(
                    msg,
                    name=q.rule,
                )
            if parts[q.rule].kind != "rule":
                msg = (
                    f"question {q.name!r} names {q.rule!r} as its rule, but it is a "
                    f"{parts[q.rule].kind} part; declare it with @catalog.rule"
                )
                raise PlanError(
                    msg,
                    name=q.rule,
                )
        if q.rule is None and q.uses is None and q.name not in parts:
            rules = [p.name for p in catalog.parts if p.kind == "rule"]
            hint = _closest(q.name, rules)
            if hint:
                msg = (
                    f"question {q.name!r} has no rule of that name{hint}; name the rule "
                    f"(Question({q.name!r}, rule=...)), or pass uses= to report facts"
                )
                raise PlanError(msg, name=q.name)
        for fact in q.uses or ():
            if fact not in facts:
                msg = (
                    f"question {q.name!r} uses {fact!r}, which no part of catalog "
                    f"{catalog.name!r} provides{_closest(fact, facts)}; fix the Question's "
                    f"uses="
                )
                raise PlanError(
                    msg,
                    name=fact,
                )
        for name in q.requires:
            if name not in parts:
                msg = (
                    f"question {q.name!r} requires part {name!r}, which catalog "
                    f"{catalog.name!r} does not have{_closest(name, parts)}; fix the "
                    f"Question's requires="
                )
                raise PlanError(
                    msg,
                    name=name,
                )
