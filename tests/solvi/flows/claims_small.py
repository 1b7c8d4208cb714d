"""A small claims catalog: two hard checks, two producers of one fact, two rules."""

from __future__ import annotations

import threading
from typing import Any

from solvi import Catalog


class Calls:
    """A thread-safe log of which parts were called."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.names: list[str] = []

    def __call__(self, name: str) -> None:
        with self._lock:
            self.names.append(name)


def claims_catalog(calls: Calls) -> Catalog:
    """A small claims catalog: two hard checks, two producers of one fact, two rules."""
    cat = Catalog("claims")

    @cat.fn(cost=5.0)
    def policy(policy_id: str) -> dict[str, Any]:
        calls("policy")
        return {"id": policy_id, "active": not policy_id.startswith("X")}

    @cat.check(hard=True)
    def policy_in_force(policy: dict[str, Any], claim: dict[str, Any]) -> bool:
        calls("policy_in_force")
        return bool(policy["active"])

    @cat.fn(provides="fraud_score", cost=170.0)
    def fraud_model(claim: dict[str, Any]) -> float:
        calls("fraud_model")
        if claim.get("model_down"):
            raise ConnectionError("model server unreachable")
        return float(claim.get("risk", 0.1))

    @cat.fn(provides="fraud_score", cost=20.0)
    def fraud_rules(claim: dict[str, Any]) -> float:
        calls("fraud_rules")
        return 0.5 if claim.get("amount", 0) > 10_000 else 0.2

    @cat.check(hard=True)
    def not_sanctioned(claim: dict[str, Any]) -> bool:
        calls("not_sanctioned")
        return not claim.get("sanctioned", False)

    @cat.check
    def fraud_ok(fraud_score: float) -> bool:
        calls("fraud_ok")
        return fraud_score < 0.7

    @cat.fn
    def points(claim: dict[str, Any], fraud_score: float) -> int:
        calls("points")
        return int(claim.get("amount", 0) < 5_000) + int(fraud_score < 0.3)

    @cat.rule
    def approve(policy_in_force: bool, not_sanctioned: bool, fraud_ok: bool, points: int) -> bool:
        calls("approve")
        return fraud_ok and points >= 1

    @cat.rule
    def fast_track(points: int) -> bool:
        calls("fast_track")
        return points >= 2

    return cat
