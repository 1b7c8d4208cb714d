"""A text policy for access requests; every record goes through JSON and back unchanged."""

from __future__ import annotations

from grounded_decision.errors import RecordError
from grounded_decision.examples.common import well_corroborated_evidence
from grounded_decision.module import Decision, Event, Module
from grounded_decision.policy.parse import parse

__all__ = ["POLICY", "TITLE", "run"]

TITLE = "access requests from a text policy, each record round-tripped through JSON"

POLICY = """
# grant access once a request has a manager's approval; repeat for the next request
(test(request) ; test(manager_approved) ; act(grant_access))*
"""


def run() -> list[Decision]:
    """Decide a request, its approval, and an approval that arrives before any request.

    Raises:
        RecordError: if a record does not survive the JSON round trip unchanged.
    """
    module = Module.from_expr("access_requests", parse(POLICY))
    evidence = well_corroborated_evidence()
    decisions = [
        module.decide(Event("request", entity="alice"), evidence),
        module.decide(Event("manager_approved", entity="alice"), evidence),
        module.decide(Event("manager_approved", entity="bob"), evidence),
    ]
    for decision in decisions:
        if Decision.from_json(decision.to_json()) != decision:
            msg = f"record for {decision.entity!r} changed in its JSON round trip"
            raise RecordError(msg)
    return decisions
