"""Evidence builders and the two-path chart shared by the examples, docs and tests."""

from __future__ import annotations

from grounded_decision.evidence import Evidence, Observation
from grounded_decision.module import Module
from grounded_decision.statechart.chart import Statechart

__all__ = [
    "conflicting_evidence",
    "single_source_evidence",
    "stale_evidence",
    "two_path_chart",
    "two_path_module",
    "untraced_evidence",
    "well_corroborated_evidence",
]


def well_corroborated_evidence() -> Evidence:
    """Three recent, agreeing observations from three sources, each with a provenance."""
    return Evidence(
        (
            Observation("monitoring", supports=True, age_s=30.0, provenance="alert#4411"),
            Observation("service_logs", supports=True, age_s=45.0, provenance="log:api-7:1203"),
            Observation("on_call_note", supports=True, age_s=120.0, provenance="ticket:OPS-88"),
        )
    )


def single_source_evidence() -> Evidence:
    """One observation only: fails the ``sources`` check."""
    return Evidence((Observation("monitoring", age_s=30.0, provenance="alert#4412"),))


def stale_evidence() -> Evidence:
    """Two sources, one of them two hours old: fails the ``freshness`` check."""
    return Evidence(
        (
            Observation("monitoring", age_s=30.0, provenance="alert#4413"),
            Observation("service_logs", age_s=7200.0, provenance="log:api-7:0007"),
        )
    )


def conflicting_evidence() -> Evidence:
    """Two sources for and two against: fails the ``agreement`` check."""
    return Evidence(
        (
            Observation("monitoring", age_s=30.0, provenance="alert#4414"),
            Observation("service_logs", age_s=40.0, provenance="log:api-7:1300"),
            Observation("synthetic_probe", supports=False, age_s=20.0, provenance="probe:eu-1"),
            Observation("status_page", supports=False, age_s=60.0, provenance="status:ok"),
        )
    )


def untraced_evidence() -> Evidence:
    """Two agreeing sources, one without a provenance: fails the ``provenance`` check."""
    return Evidence(
        (
            Observation("monitoring", age_s=30.0, provenance="alert#4415"),
            Observation("hallway_chat", age_s=10.0),
        )
    )


def two_path_chart() -> Statechart:
    """intake routes routine work to ``auto`` and escalations to ``review``; both end in hold."""
    return (
        Statechart("two_path")
        .state("intake", initial=True)
        .state("auto", action="auto_approve", payoff=1.0)
        .state("review", action="send_to_review", payoff=0.5)
        .state("hold")
        .on("intake", "routine", "auto")
        .on("intake", "escalation", "review")
        .on("auto", "hold", "hold")
        .on("review", "hold", "hold")
        .validate()
    )


def two_path_module() -> Module:
    """The two-path chart as a module with default limits and evidence rules."""
    return Module(name="two_path", chart=two_path_chart())
