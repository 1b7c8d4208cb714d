"""A card payment where the customer, not the service, decides what happens during 3-D Secure."""

from __future__ import annotations

from grounded_decision.examples.common import untraced_evidence, well_corroborated_evidence
from grounded_decision.module import Decision, Event, Module
from grounded_decision.statechart.chart import Statechart

__all__ = ["TITLE", "payment_chart", "run"]

TITLE = "card payment with a customer-owned 3-D Secure step"


def payment_chart() -> Statechart:
    """The challenge state is environment-owned; the service can always capture afterwards."""
    return (
        Statechart("payment")
        .state("created", initial=True)
        .state("authorized", action="capture_funds")
        .state("challenge", action="request_3ds", priority=1, environment=True)
        .state("cancelled", action="void_authorization")
        .state("settled", action="send_receipt", payoff=1.0)
        .on("created", "authorize", "authorized")
        .on("authorized", "challenged", "challenge")
        .on("challenge", "verified", "authorized")
        .on("challenge", "abandoned", "cancelled")
        .on("authorized", "captured", "settled")
        .validate()
    )


def run() -> list[Decision]:
    """Authorize, get challenged, verify with an untraced report, verify properly, capture."""
    module = Module(name="payment", chart=payment_chart())
    good = well_corroborated_evidence
    return [
        module.decide(Event("authorize", entity="pay-1"), good()),
        module.decide(Event("challenged", entity="pay-1"), good()),
        module.decide(Event("verified", entity="pay-1"), untraced_evidence()),
        module.decide(Event("captured", entity="pay-1"), good()),
        module.decide(Event("abandoned", entity="pay-2"), good()),
    ]
