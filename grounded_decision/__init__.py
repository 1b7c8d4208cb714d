"""grounded_decision: workflow policies whose decisions carry their own checks."""

from __future__ import annotations

__all__: list[str] = []
