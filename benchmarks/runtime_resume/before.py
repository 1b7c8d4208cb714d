"""What the dying child showed at its death, read from the events it printed."""

from __future__ import annotations

import json
from collections import Counter

import attrs


@attrs.frozen
class Settled:
    """A settled entry the child saw commit, with the value its part returned."""

    outcome: str
    value: object
    message: str | None
    returned: object


@attrs.define
class Before:
    """The child's own account: commits it saw return, parts it entered, where it froze."""

    ready: bool = False
    killed: bool = False
    returncode: int | None = None
    plan: tuple[str, ...] = ()
    open_committed: bool = False
    close_reached: bool = False
    close_committed: bool = False
    started: set[str] = attrs.field(factory=set)
    settled: dict[str, Settled] = attrs.field(factory=dict)
    entered: Counter[str] = attrs.field(factory=Counter)
    last_commit: tuple[str, str] | None = None
    returned: dict[str, object] = attrs.field(factory=dict)
    raised: dict[str, str] = attrs.field(factory=dict)

    def running(self) -> set[str]:
        """Started (committed) and not settled: what was executing when the child died."""
        return self.started - set(self.settled)

    def not_started(self) -> set[str]:
        """Planned parts with no committed start."""
        return set(self.plan) - self.started

    def feed(self, line: str) -> None:
        """Take one line of the child's stdout."""
        line = line.strip()
        if line == "READY":
            self.ready = True
            return
        if not line.startswith("{"):
            return
        event = json.loads(line)
        kind = event["ev"]
        part = event.get("part", "")
        if kind == "enter":
            self.entered[part] += 1
        elif kind == "return":
            self.returned[part] = event["value"]
        elif kind == "raise":
            self.raised[part] = event["message"]
        elif kind == "journal":
            self._journal(event, part)

    def _journal(self, event: dict[str, object], part: str) -> None:
        write, when = event["write"], event["when"]
        if write == "open":
            self.plan = tuple(event["plan"])  # type: ignore[arg-type]
        if write == "close" and when == "pre":
            self.close_reached = True
        if when != "post":
            return
        self.last_commit = (str(write), part)
        if write == "open":
            self.open_committed = True
        elif write == "close":
            self.close_committed = True
        elif write == "started":
            self.started.add(part)
        elif write == "settled":
            outcome = str(event["outcome"])
            returned = self.returned.get(part) if outcome == "ok" else self.raised.get(part)
            message = event.get("message")
            self.settled[part] = Settled(
                outcome, event.get("value"), None if message is None else str(message), returned
            )
