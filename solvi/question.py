"""Questions: what a System is asked, and what it says when a hard check fails."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

import attrs

__all__ = ["UNSET", "Question"]


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


def _names(value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def _optional_names(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    return None if value is None else _names(value)


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

    name: str
    rule: str | None = None
    uses: tuple[str, ...] | None = attrs.field(default=None, converter=_optional_names)
    requires: tuple[str, ...] = attrs.field(default=(), converter=_names)
    forced: Any = UNSET

    @property
    def has_forced(self) -> bool:
        """Whether a failed hard check forces a value rather than abstaining."""
        return self.forced is not UNSET
