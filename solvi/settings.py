"""A System's configuration: one frozen value, checked once when the System is built.

The System keeps its run-time state (the flow cache, the cost book, the order
model, the stats) beside it; what it was configured with never changes under a
running request. `System.learn_order` replaces the settings with a new value
rather than editing them.
"""

from __future__ import annotations

import math
from typing import Any, Generic, Literal, TypeVar, overload

import attrs

from solvi.costs import MeasuredCosts
from solvi.errors import _finite
from solvi.strategy import CostStrategist, DeterministicStrategist, Strategist

__all__ = ["Setting", "Settings", "check_flag", "check_names", "check_positive"]

T = TypeVar("T")


def check_positive(name: str, value: Any, *, integer: bool = False) -> None:
    """Raise ValueError naming `name` unless `value` is a positive number (whole with
    `integer`) that a float holds: not NaN, not infinite (None is the way to say "no
    limit", where there is one)."""
    if not _finite(value) or (integer and not isinstance(value, int)) or not value > 0:
        expected = "a positive whole number" if integer else "a positive finite number"
        msg = f"{name} must be {expected}, got {value!r}"
        if not integer and isinstance(value, float) and value == math.inf:
            msg += " (an infinite one is no limit: leave the option out, or pass None)"
        raise ValueError(msg)


def check_flag(name: str, value: object) -> None:
    """Raise TypeError naming `name` unless `value` is True or False (a string such as
    "no" would otherwise count as true)."""
    if not isinstance(value, bool):
        msg = f"{name} must be True or False, got {value!r}"
        raise TypeError(msg)


def check_names(name: str, value: object) -> list[str]:
    """The names in `value`, an iterable of strings; raise TypeError naming `name` for a
    lone string (which would be read letter by letter) or anything else."""
    if isinstance(value, str):
        msg = f"{name} must be a list of names, got the string {value!r}; write [{value!r}]"
        raise TypeError(msg)
    try:
        names: list[object] = list(value)  # type: ignore[call-overload]  # checked here
    except TypeError:
        msg = f"{name} must be a list of names, got {type(value).__name__}"
        raise TypeError(msg) from None
    for item in names:
        if not isinstance(item, str):
            msg = f"{name} must hold names (strings), got {item!r}"
            raise TypeError(msg)
    return names  # type: ignore[return-value]  # every item is a str, checked above


class Setting(Generic[T]):
    """A read-only attribute that shows one field of its owner's `settings`.

    ``workers = Setting[int]("Threads for ...")`` in a class body makes
    ``obj.workers`` read ``obj.settings.workers``; assigning to it raises.
    """

    def __init__(self, doc: str) -> None:
        self.__doc__ = doc
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[T]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object | None, owner: type) -> T | Setting[T]:
        if obj is None:
            return self
        value: T = getattr(obj.settings, self.name)  # type: ignore[attr-defined]  # owners have settings
        return value

    def __set__(self, obj: object, value: object) -> None:
        msg = (
            f"{self.name} is a setting, fixed when the System is built; build a System with "
            f"{self.name}={value!r} instead"
        )
        raise AttributeError(msg)


def _one_of(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        listed = " or ".join(f'"{c}"' for c in choices)
        msg = f"{name} must be {listed}, got {value!r}"
        raise ValueError(msg)


@attrs.frozen(kw_only=True)
class Settings:
    """How a System plans and runs requests (see `System` for each option)."""

    workers: int = 1
    timeout: float | None = None
    early_exit: bool = True
    strategist: Strategist = attrs.field(factory=DeterministicStrategist)
    threads: int = 16
    cost_policy: Literal["declared", "measured"] = "declared"
    costs: MeasuredCosts = attrs.field(factory=MeasuredCosts)
    order: Literal["default", "learned"] = "default"
    learn: bool = False
    guards: Literal["declared", "found"] = "declared"
    max_flows: int = 1000
    #: producers="learned": equivalent producers chosen per request by learned P(fail)
    learned_producers: bool = False

    @classmethod
    def of(
        cls,
        *,
        workers: int,
        timeout: float | None,
        early_exit: bool,
        strategist: Strategist | None,
        producers: Literal["all", "equivalent", "learned"] | None,
        threads: int,
        cost_policy: Literal["declared", "measured"],
        costs: MeasuredCosts | None,
        order: Literal["default", "learned"],
        learn: bool,
        guards: Literal["declared", "found"],
        max_flows: int = 1000,
    ) -> Settings:
        """Check the System's options and make its settings.

        Raises:
            ValueError: an option has a wrong value, or two options do not go together.
        """
        check_flag("early_exit", early_exit)
        check_flag("learn", learn)
        if strategist is not None and not callable(getattr(strategist, "plan", None)):
            msg = (
                f"strategist must be a solvi.Strategist (an object with a plan method), got "
                f'{strategist!r}; for cost-based planning pass producers="equivalent"'
            )
            raise TypeError(msg)
        check_positive("workers", workers, integer=True)
        check_positive("threads", threads, integer=True)
        check_positive("max_flows", max_flows, integer=True)
        if timeout is not None:
            check_positive("timeout", timeout)
        if producers is not None:
            if strategist is not None:
                msg = "pass either strategist= or producers=, not both"
                raise ValueError(msg)
            _one_of("producers", producers, ("all", "equivalent", "learned"))
            strategist = CostStrategist("equivalent" if producers == "learned" else producers)
        strategist = strategist or DeterministicStrategist()
        _one_of("cost_policy", cost_policy, ("declared", "measured"))
        if cost_policy == "measured" and not getattr(strategist, "prunes", False):
            msg = (
                'cost_policy="measured" chooses among equivalent producers; add '
                'producers="equivalent" (or a strategist that prunes producers)'
            )
            raise ValueError(msg)
        if costs is not None and cost_policy != "measured":
            msg = 'costs= only applies with cost_policy="measured"'
            raise ValueError(msg)
        _one_of("order", order, ("default", "learned"))
        _one_of("guards", guards, ("declared", "found"))
        return cls(
            workers=workers,
            timeout=timeout,
            early_exit=early_exit,
            strategist=strategist,
            threads=threads,
            cost_policy=cost_policy,
            costs=costs or MeasuredCosts(),
            order=order,
            learn=learn or order == "learned",
            guards=guards,
            max_flows=max_flows,
            learned_producers=producers == "learned",
        )
