"""Evidence for a decision: observations from sources, and the thresholds the checks apply."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from grounded_decision.errors import EvidenceError

__all__ = ["Evidence", "EvidenceRules", "Observation"]


def _check_observation(obs: Observation) -> None:
    if not isinstance(obs.source, str) or not obs.source:
        msg = f"observation source must be a non-empty string, got {obs.source!r}"
        raise EvidenceError(msg)
    if isinstance(obs.age_s, bool) or not isinstance(obs.age_s, int | float):
        msg = f"observation from {obs.source!r}: age_s must be a number, got {obs.age_s!r}"
        raise EvidenceError(msg)
    if not math.isfinite(obs.age_s) or obs.age_s < 0:
        msg = (
            f"observation from {obs.source!r}: age_s must be a finite number of seconds >= 0,"
            f" got {obs.age_s!r}"
        )
        raise EvidenceError(msg)
    if not isinstance(obs.supports, bool):
        msg = f"observation from {obs.source!r}: supports must be True or False"
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
        EvidenceError: when a field has the wrong type, or ``age_s`` is negative or not finite.
    """

    source: str
    supports: bool = True
    age_s: float = 0.0
    provenance: str | None = None

    def __attrs_post_init__(self) -> None:
        _check_observation(self)


def _observations(items: Iterable[Observation]) -> tuple[Observation, ...]:
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
        EvidenceError: when an item is not an ``Observation``.
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
        raw = data.get("observations")
        if not isinstance(raw, list):
            msg = "evidence needs an 'observations' list of {source, supports, age_s, provenance}"
            raise EvidenceError(msg)
        try:
            return cls(tuple(Observation(**item) for item in raw))
        except TypeError as exc:
            msg = f"malformed observation in evidence: {exc}"
            raise EvidenceError(msg) from exc


@attrs.frozen
class EvidenceRules:
    """The thresholds of the four evidence checks.

    Parameters:
        min_sources: independent sources that must support the event (``sources`` check).
        max_age_s: oldest acceptable supporting observation, in seconds (``freshness``).
        min_agreement: smallest share of observations that must support the event
            (``agreement``).
        known_sources: when set, every source must be one of these (``provenance``); every
            observation must also carry a provenance either way.
    """

    min_sources: int = 2
    max_age_s: float = 900.0
    min_agreement: float = 0.75
    known_sources: frozenset[str] | None = None
