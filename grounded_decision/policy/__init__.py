"""Text policies: parsing, automata and their statecharts."""

from __future__ import annotations

from grounded_decision.policy.automata import (
    ACTION_PRIORITY,
    MAX_POLICY_STATES,
    MAX_POLICY_TRANSITIONS,
    POSITIONS_PER_STATE,
    WAITING_PRIORITY,
    Dfa,
    Symbol,
    compile_policy,
    cycle_rank,
    dfa_to_statechart,
)
from grounded_decision.policy.parse import Act, Alt, Expr, Seq, Star, Test, parse, star_height

__all__ = [
    "ACTION_PRIORITY",
    "MAX_POLICY_STATES",
    "MAX_POLICY_TRANSITIONS",
    "POSITIONS_PER_STATE",
    "WAITING_PRIORITY",
    "Act",
    "Alt",
    "Dfa",
    "Expr",
    "Seq",
    "Star",
    "Symbol",
    "Test",
    "compile_policy",
    "cycle_rank",
    "dfa_to_statechart",
    "parse",
    "star_height",
]
