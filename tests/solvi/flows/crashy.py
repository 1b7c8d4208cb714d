"""A claims-like catalog whose parts can be told to crash the process, for the journal tests."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from solvi import Catalog, Question, System


class Crash(BaseException):
    """Stands for the process dying mid-call (not an Exception, so nothing catches it)."""


#: part name -> "raise" (raise Crash) or "kill" (signal readiness, then SIGKILL itself)
CRASH_AT: dict[str, str] = {}
#: every call, for counting executions across a crash
CALL_LOG: list[str] = []


def _maybe_crash(name: str) -> None:
    CALL_LOG.append(name)
    side_log = os.environ.get("SOLVI_CALL_LOG")
    if side_log:
        with Path(side_log).open("a") as f:
            f.write(name + "\n")
    how = CRASH_AT.get(name)
    if how == "raise":
        raise Crash(name)
    if how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(5)


def build(journal: Any) -> System:
    """A System over the crashy catalog, journaling to `journal`."""
    cat = Catalog("crashy")

    @cat.fn(idempotent=True)
    def policy(policy_id: str) -> dict[str, Any]:
        _maybe_crash("policy")
        return {"id": policy_id, "active": not policy_id.startswith("X")}

    @cat.check(hard=True)
    def policy_in_force(policy: dict[str, Any]) -> bool:
        _maybe_crash("policy_in_force")
        return bool(policy["active"])

    @cat.fn
    def fraud_score(claim: dict[str, Any]) -> float:
        _maybe_crash("fraud_score")
        return 0.1 if claim.get("amount", 0) < 5000 else 0.6

    @cat.fn(idempotent=True)
    def documents(claim: dict[str, Any]) -> list[str]:
        _maybe_crash("documents")
        return sorted(claim.get("documents", []))

    @cat.fn
    def points(fraud_score: float, documents: list[str]) -> int:
        _maybe_crash("points")
        return int(fraud_score < 0.5) + len(documents)

    @cat.rule
    def approve(policy_in_force: bool, points: int) -> bool:
        _maybe_crash("approve")
        return points >= 2

    return System(cat, [Question("approve", forced=False)], journal=journal)


STATE = {"policy_id": "P1", "claim": {"amount": 100, "documents": ["form", "photo"]}}
