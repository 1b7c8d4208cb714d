"""Evidence for a decision: observations from sources, and the thresholds the checks apply."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from grounded_decision._listing import shown
from grounded_decision.errors import EvidenceError

__all__ = ["Evidence", "EvidenceRules", "Observation"]


def _is_seconds(value: object) -> bool:
    """Whether `value` is a number of seconds a float holds: >= 0, finite, not a bool
    (an int past a float's range, which JSON allows, is refused here, not by an
    OverflowError later)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return 0 <= float(value) < math.inf
    except OverflowError:
        return False


def _check_observation(obs: Observation) -> None:
    if not isinstance(obs.source, str) or not obs.source:
        msg = f"observation source must be a non-empty string, got {obs.source!r}"
        raise EvidenceError(msg)
    if isinstance(obs.age_s, bool) or not isinstance(obs.age_s, int | float):
        msg = f"observation from {obs.source!r}: age_s must be a number, got {obs.age_s!r}"
        raise EvidenceError(msg)
    if not _is_seconds(obs.age_s):
        msg = (
            f"observation from {obs.source!r}: age_s must be a finite number of seconds >= 0,"
            f" got {shown(obs.age_s)}"
        )
        raise EvidenceError(msg)
    if not isinstance(obs.supports, bool):
        msg = f"observation from {obs.source!r}: supports must be True or False"
        raise EvidenceError(msg)
    if obs.provenance is not None and (
        not isinstance(obs.provenance, str) or not obs.provenance.strip()
    ):
        msg = (
            f"observation from {obs.source!r}: provenance must be a non-blank string (a "
            f"ticket id, a log line, a URL) or None, got {obs.provenance!r}"
        )
        raise EvidenceError(msg)


@attrs.frozen
class Observation:
    """One report about the event being decided.

    Parameters:
        source: who reported it (a monitor, a service, a person); distinct names count as
            independent sources.
        supports: ``True`` if it supports the event, ``False`` if it contradicts it.
        age_s: how old the observation is, in seconds, at decision time.
        provenance: where it can be looked up (ticket id, log line, URL), or ``None``.

    Raises:
        EvidenceError: when a field has the wrong type, ``age_s`` is negative or not finite,
            or ``provenance`` is blank.
    """

    source: str
    supports: bool = True
    age_s: float = 0.0
    provenance: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_observation(self)


def _observations(items: Iterable[Observation]) -> tuple[Observation, ...]:
    if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
        msg = (
            f"Evidence takes a list of Observation values, got {type(items).__name__}:"
            f" {shown(items)}; pass Evidence([Observation(...), ...]), or [] for none"
        )
        raise EvidenceError(msg)
    found = tuple(items)
    for item in found:
        if not isinstance(item, Observation):
            msg = f"evidence holds Observation values, got {type(item).__name__}: {item!r}"
            raise EvidenceError(msg)
    return found


@attrs.frozen
class Evidence:
    """The observations offered for one decision.

    Raises:
        EvidenceError: when ``observations`` is not a list (any iterable) or an item is not
            an ``Observation``.
    """

    observations: tuple[Observation, ...] = attrs.field(converter=_observations)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {"observations": [attrs.asdict(obs) for obs in self.observations]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        """Build evidence from ``to_dict`` output.

        Raises:
            EvidenceError: when ``observations`` is missing or an entry is malformed.
        """
        raw = data.get("observations") if isinstance(data, Mapping) else None
        if not isinstance(raw, list):
            msg = "evidence needs an 'observations' list of {source, supports, age_s, provenance}"
            raise EvidenceError(msg)
        try:
            return cls(tuple(Observation(**_mapping(item)) for item in raw))
        except TypeError as exc:
            msg = f"malformed observation in evidence: {exc}"
            raise EvidenceError(msg) from exc


def _mapping(item: object) -> Mapping[str, Any]:
    if not isinstance(item, Mapping):
        msg = f"an observation must be an object of its fields, got {type(item).__name__}"
        raise TypeError(msg)
    return item


def _count(name: str) -> Any:
    def check(_: object, __: object, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            msg = f"EvidenceRules.{name} must be a whole number >= 0, got {value!r}"
            raise EvidenceError(msg)

    return check


def _check_age(_: object, __: object, value: object) -> None:
    if not _is_seconds(value):
        msg = f"EvidenceRules.max_age_s must be a finite number of seconds >= 0, got {shown(value)}"
        raise EvidenceError(msg)


def _check_share(_: object, __: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        msg = f"EvidenceRules.min_agreement must be a share from 0 to 1, got {value!r}"
        raise EvidenceError(msg)


def _source_names(value: object) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        msg = f"EvidenceRules.known_sources must be a set of names, got the string {value!r}"
        raise EvidenceError(msg)
    try:
        names: frozenset[object] = frozenset(value)  # type: ignore[call-overload]  # checked below
    except TypeError:
        msg = f"EvidenceRules.known_sources must be a set of names, got {value!r}"
        raise EvidenceError(msg) from None
    if not all(isinstance(n, str) for n in names):
        msg = f"EvidenceRules.known_sources must hold source names (strings), got {value!r}"
        raise EvidenceError(msg)
    return frozenset(n for n in names if isinstance(n, str))


@attrs.frozen
class EvidenceRules:
    """The thresholds of the four evidence checks.

    Parameters:
        min_sources: independent sources that must support the event (``sources`` check).
        max_age_s: oldest acceptable supporting observation, in seconds (``freshness``).
        min_agreement: smallest share of observations that must support the event
            (``agreement``).
        known_sources: when set, every source must be one of these (``provenance``); every
            observation must also carry a provenance either way. Any iterable of names.

    Raises:
        EvidenceError: when a threshold has the wrong type or lies out of its range.
    """

    min_sources: int = attrs.field(default=2, validator=_count("min_sources"))
    max_age_s: float = attrs.field(default=900.0, validator=_check_age)
    min_agreement: float = attrs.field(default=0.75, validator=_check_share)
    known_sources: frozenset[str] | None = attrs.field(default=None, converter=_source_names)
