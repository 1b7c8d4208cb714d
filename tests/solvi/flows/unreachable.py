"""A clean catalog with one part that no question reaches."""

from __future__ import annotations

from solvi import Catalog, Question, System

catalog = Catalog("unreachable")


@catalog.fn
def total(price: float, quantity: int) -> float:
    """The order total."""
    return price * quantity


@catalog.check(hard=True)
def in_stock(total: float, stock: int) -> bool:
    """A check of what was computed: it joins every flow that computes the total."""
    return stock > 0 and total > 0


@catalog.fn
def legacy_discount(customer: str) -> float:
    """Nothing reads this any more."""
    return 0.1 if customer.startswith("VIP") else 0.0


@catalog.rule
def accept(total: float) -> bool:
    """Accept orders under a limit."""
    return total < 500


system = System(catalog, [Question("accept", forced=False)])
