"""Text in, facts out: the catalog's `extract` parts turn a text into a request's state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from solvi.catalog import Part
from solvi.errors import SolviError

__all__ = ["extract_facts"]


def extract_facts(parts: Sequence[Part], text: str) -> dict[str, Any]:
    """The state `ask_text` asks with: ``text`` and the facts each extract part returns.

    Extract parts run in declaration order; each reads ``text`` and facts earlier
    ones produced, and a later one wins on a shared key.

    Raises:
        SolviError: an extract part reads something else, or returns no dict.
    """
    state: dict[str, Any] = {"text": text}
    for part in parts:
        if part.kind != "extract":
            continue
        missing = [i for i in part.inputs if i not in state]
        if missing:
            msg = (
                f"extract part {part.name!r} reads {', '.join(missing)}; an extract part "
                f"may only read 'text' and facts earlier extractors produced"
            )
            raise SolviError(msg)
        facts = part.func(*(state[i] for i in part.inputs))
        if not isinstance(facts, Mapping):
            msg = (
                f"extract part {part.name!r} returned {type(facts).__name__}; it must "
                f"return a dict of facts"
            )
            raise SolviError(msg)
        state.update(facts)
    return state
