"""A catalog whose facts `score` and `limit` depend on each other, so `approve` never decides."""

from __future__ import annotations

from solvi import Catalog, System

catalog = Catalog("cyclic")


@catalog.fn
def score(limit: float, amount: float) -> float:
    """A score that reads the limit."""
    return amount / limit


@catalog.fn
def limit(score: float) -> float:
    """A limit that reads the score: the cycle."""
    return 1000.0 * (1.0 - score)


@catalog.fn
def band(amount: float) -> str:
    """A band that needs nothing from the cycle."""
    return "small" if amount < 1000 else "large"


@catalog.rule
def approve(score: float, band: str) -> bool:
    """Needs the score, which is on the cycle."""
    return score < 0.5 and band == "small"


@catalog.rule
def label(band: str) -> str:
    """Needs only the band, so it still decides."""
    return band.upper()


system = System(catalog)
