"""Lists of names in messages, kept short however long the list."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["LISTED", "listed"]

#: names a message shows before it counts the rest
LISTED = 10


def listed(names: Sequence[str]) -> str:
    """The first LISTED names and a count of the rest: a summary, an error message, and
    every record that copies one stay short for a chart of 100,000 states."""
    shown = ", ".join(names[:LISTED])
    rest = len(names) - LISTED
    return shown if rest <= 0 else f"{shown} and {rest} more"
