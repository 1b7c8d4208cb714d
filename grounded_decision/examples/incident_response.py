"""An incident run-book that never really finishes: watch, mitigate, page, resolve, repeat."""

from __future__ import annotations

from grounded_decision.examples.common import stale_evidence, well_corroborated_evidence
from grounded_decision.module import Decision, Event, Module
from grounded_decision.statechart.chart import Statechart

__all__ = ["TITLE", "incident_chart", "incident_module", "run"]

TITLE = "on-call run-book: mitigate, page when it stays bad, close when clear"


def incident_chart() -> Statechart:
    """Paging is allowed to recur (priority 2) but costs a little (payoff -0.2)."""
    return (
        Statechart("incident_response")
        .state("watch", initial=True)
        .state("mitigating", action="start_mitigation", payoff=1.0)
        .state("paging", action="page_oncall", priority=2, payoff=-0.2)
        .state("resolved", action="close_incident", payoff=2.0)
        .on("watch", "alert", "mitigating")
        .on("mitigating", "still_bad", "paging")
        .on("paging", "ack", "mitigating")
        .on("mitigating", "clear", "resolved")
        .on("resolved", "alert", "mitigating")
        .validate()
    )


def incident_module() -> Module:
    """The incident chart as a module."""
    return Module(name="incident_response", chart=incident_chart())


def run() -> list[Decision]:
    """Walk one incident through alert, escalation on stale data, recovery and a new alert.

    The entity's state follows every event, including those the checks abstain on.
    """
    module = incident_module()
    good = well_corroborated_evidence
    return [
        module.decide(Event("alert", entity="INC-7"), good()),
        module.decide(Event("still_bad", entity="INC-7"), stale_evidence()),
        module.decide(Event("ack", entity="INC-7"), good()),
        module.decide(Event("clear", entity="INC-7"), good()),
        module.decide(Event("alert", entity="INC-7"), good()),
    ]
