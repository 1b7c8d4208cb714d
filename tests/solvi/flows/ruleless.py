"""A System asked a question whose name matches no rule: it reports every computable fact."""

from __future__ import annotations

from solvi import Catalog, System

catalog = Catalog("ruleless")


@catalog.fn
def total(price: float, quantity: int) -> float:
    """The order total."""
    return price * quantity


@catalog.rule
def approve(total: float) -> bool:
    """Approve small orders."""
    return total < 100


system = System(catalog, ["aprove"])
