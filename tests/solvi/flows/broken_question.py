"""A module whose System names a rule the catalog does not have, so building it fails."""

from __future__ import annotations

from solvi import Catalog, Question, System

catalog = Catalog("broken")


@catalog.rule
def approve(amount: float) -> bool:
    """The only rule."""
    return amount < 100


system = System(catalog, [Question("approve", rule="aprove")])
