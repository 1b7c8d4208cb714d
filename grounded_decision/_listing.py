"""Lists of names and values in messages, kept short however long or large they are."""

from __future__ import annotations

import reprlib
from collections.abc import Sequence

__all__ = ["LISTED", "listed", "shown"]

#: names a message shows before it counts the rest
LISTED = 10


def listed(names: Sequence[str]) -> str:
    """The first LISTED names and a count of the rest: a summary, an error message, and
    every record that copies one stay short for a chart of 100,000 states."""
    head = ", ".join(names[:LISTED])
    rest = len(names) - LISTED
    return head if rest <= 0 else f"{head} and {rest} more"


def shown(value: object) -> str:
    """``value``'s repr cut short (``reprlib``), so an int of 400 digits or a long list
    echoed in an error stays one readable line; an int past the digits Python converts to
    text, which ``repr`` refuses, is described instead."""
    try:
        return reprlib.repr(value)
    except ValueError:  # an int over sys.get_int_max_str_digits(), maybe inside a list
        name = type(value).__name__
        return f"{'an' if name[0] in 'aeiou' else 'a'} {name} too large to show"
