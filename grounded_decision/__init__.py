"""grounded_decision: workflow policies whose decisions carry their own checks."""

from __future__ import annotations

from grounded_decision.checks import CHECK_NAMES, Channel, Progress
from grounded_decision.errors import (
    ChartError,
    EvidenceError,
    GameTooLarge,
    GroundedDecisionError,
    ParityUnsolved,
    PolicyCompileError,
    PolicySyntaxError,
    ProgressRefused,
    RecordError,
)
from grounded_decision.evidence import Evidence, EvidenceRules, Observation
from grounded_decision.module import Decision, Event, Module, Verdict
from grounded_decision.policy import Expr, parse, star_height
from grounded_decision.refs import REFS, Ref
from grounded_decision.statechart import GameGraph, Limits, State, Statechart, Transition

__all__ = [
    "CHECK_NAMES",
    "REFS",
    "Channel",
    "ChartError",
    "Decision",
    "Event",
    "Evidence",
    "EvidenceError",
    "EvidenceRules",
    "Expr",
    "GameGraph",
    "GameTooLarge",
    "GroundedDecisionError",
    "Limits",
    "Module",
    "Observation",
    "ParityUnsolved",
    "PolicyCompileError",
    "PolicySyntaxError",
    "Progress",
    "ProgressRefused",
    "RecordError",
    "Ref",
    "State",
    "Statechart",
    "Transition",
    "Verdict",
    "parse",
    "star_height",
]
