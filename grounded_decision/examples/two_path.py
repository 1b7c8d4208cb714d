"""Two paths from intake: routine work is auto-approved, escalations go to review."""

from __future__ import annotations

from grounded_decision.examples.common import (
    single_source_evidence,
    two_path_module,
    well_corroborated_evidence,
)
from grounded_decision.module import Decision, Event

__all__ = ["TITLE", "run"]

TITLE = "two paths from intake, auto-approve or review"


def run() -> list[Decision]:
    """Decide a routine claim, an escalation on thin evidence, and a hold."""
    module = two_path_module()
    return [
        module.decide(Event("routine", entity="claim-1"), well_corroborated_evidence()),
        module.decide(Event("escalation", entity="claim-2"), single_source_evidence()),
        module.decide(Event("hold", entity="claim-1"), well_corroborated_evidence()),
    ]
