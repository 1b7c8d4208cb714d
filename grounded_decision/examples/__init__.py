"""Runnable examples: ``grounded-decision examples NAME`` prints each one's decisions."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from grounded_decision.examples import (
    incident_response,
    payment,
    retry_loop,
    step_json_roundtrip,
    two_path,
)
from grounded_decision.module import Decision

__all__ = ["EXAMPLES", "TITLES"]

EXAMPLES: Mapping[str, Callable[[], list[Decision]]] = MappingProxyType(
    {
        "two_path_module": two_path.run,
        "incident_response": incident_response.run,
        "step_json_roundtrip": step_json_roundtrip.run,
        "retry_loop": retry_loop.run,
        "payment": payment.run,
    }
)
"""Each example's name and the function that runs it and returns its decisions."""

TITLES: Mapping[str, str] = MappingProxyType(
    {
        "two_path_module": two_path.TITLE,
        "incident_response": incident_response.TITLE,
        "step_json_roundtrip": step_json_roundtrip.TITLE,
        "retry_loop": retry_loop.TITLE,
        "payment": payment.TITLE,
    }
)
"""A one-line description of each example."""
