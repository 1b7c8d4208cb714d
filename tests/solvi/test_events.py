"""Structured events: emitted through the logger a System is given, none without one."""

from __future__ import annotations

import structlog
from flows.claims_small import Calls, claims_catalog
from structlog.testing import capture_logs

from solvi import Question, System


def test_events_for_request_steps_and_safeguards() -> None:
    """A System with a logger emits one event per step, per safeguard and per request."""
    system = System(
        claims_catalog(Calls()),
        [Question("approve", forced=False)],
        logger=structlog.get_logger("solvi-test"),
    )
    with capture_logs() as events:
        system.ask({"policy_id": "P1", "claim": {"model_down": True}})
    kinds = [e["event"] for e in events]
    assert kinds.count("request") == 1
    assert kinds.count("step") == len(system.plan({"policy_id", "claim"}).steps)
    (guard,) = [e for e in events if e["event"] == "safeguard"]
    assert guard["part"] == "fraud_model"
    assert guard["log_level"] == "warning"
    request = next(e for e in events if e["event"] == "request")
    assert request["answers"] == {"approve": "decided"}
    assert request["catalog"] == "claims"


def test_no_events_without_a_logger() -> None:
    """By default nothing is logged."""
    system = System(claims_catalog(Calls()))
    with capture_logs() as events:
        system.ask({"policy_id": "P1", "claim": {}})
    assert events == []
