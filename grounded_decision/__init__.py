"""grounded_decision: workflow policies whose decisions carry their own checks."""

from __future__ import annotations

from grounded_decision.errors import (
    ChartError,
    EvidenceError,
    GameTooLarge,
    GroundedDecisionError,
    ParityUnsolved,
    PolicyCompileError,
    PolicySyntaxError,
    RecordError,
)
from grounded_decision.statechart import GameGraph, Limits, State, Statechart, Transition

__all__ = [
    "ChartError",
    "EvidenceError",
    "GameGraph",
    "GameTooLarge",
    "GroundedDecisionError",
    "Limits",
    "ParityUnsolved",
    "PolicyCompileError",
    "PolicySyntaxError",
    "RecordError",
    "State",
    "Statechart",
    "Transition",
]
