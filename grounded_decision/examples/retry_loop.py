"""A job that may retry, but must not retry forever: the service can always give up."""

from __future__ import annotations

from grounded_decision.examples.common import conflicting_evidence, well_corroborated_evidence
from grounded_decision.module import Decision, Event, Module
from grounded_decision.statechart.chart import Statechart

__all__ = ["TITLE", "retry_chart", "run"]

TITLE = "retries cost something and are marked 'must not circle here forever'"


def retry_chart() -> Statechart:
    """Retrying is odd (priority 1) and costly; give_up and succeed lead to final states."""
    return (
        Statechart("retry_loop")
        .state("submitted", initial=True)
        .state("retrying", action="retry_job", priority=1, payoff=-0.5)
        .state("closed", action="close_job")
        .state("done", action="report_success", payoff=1.0)
        .on("submitted", "fail", "retrying")
        .on("submitted", "succeed", "done")
        .on("retrying", "fail", "retrying")
        .on("retrying", "succeed", "done")
        .on("retrying", "give_up", "closed")
        .validate()
    )


def run() -> list[Decision]:
    """Fail twice, see a disputed failure, then give up."""
    module = Module(name="retry_loop", chart=retry_chart())
    good = well_corroborated_evidence
    return [
        module.decide(Event("fail", entity="job-42"), good()),
        module.decide(Event("fail", entity="job-42"), conflicting_evidence()),
        module.decide(Event("give_up", entity="job-42"), good()),
    ]
