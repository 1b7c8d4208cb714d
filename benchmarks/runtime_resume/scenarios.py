"""Where each scenario stops the child, and how the orchestrator proves it stopped there.

The child reads `trigger`; the orchestrator reads `premise`. A trigger is a
point the child reaches (never a timer): a journal write about to begin or
just committed, or a part's call that holds until the process is killed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from before import Before

FAN_OUT = ("price", "broken", "history", "risk", "docs")


@attrs.frozen
class Trigger:
    """What makes the child signal READY and freeze.

    `freeze_at` is a journal point ``(write, "pre"|"post", part or "")``;
    `hold` are parts whose call blocks once entered; READY comes when
    `holds` of them are held and every part in `settled` has committed.
    """

    freeze_at: tuple[str, str, str] | None = None
    hold: frozenset[str] = frozenset()
    holds: int = 0
    settled: frozenset[str] = frozenset()


@attrs.frozen
class Scenario:
    """One way to die, and what must be true at death for the arm to count."""

    name: str
    title: str
    trigger: Trigger
    workers: int = 1
    #: damage the last journal entry after the kill (a torn tail, made by hand)
    tear_last: bool = False
    #: start two resumers at once
    racing: bool = False
    #: inspect while a live resumer holds the claim, before it resumes
    inspect_claimed: bool = False


def premise(scenario: Scenario, before: Before, plan: tuple[str, ...]) -> str:
    """Why the child did not reach the scenario's shape ("" when it did)."""
    if not before.ready:
        return "the child never signalled READY"
    if not before.killed:
        return f"the child exited on its own (status {before.returncode}) instead of being killed"
    name = scenario.name
    if name == "before_open":
        return "" if not before.open_committed else "the open entry had committed"
    if not before.open_committed:
        return "the open entry never committed"
    running = before.running()
    if name == "after_open":
        return "" if not before.started else f"steps had started: {sorted(before.started)}"
    if name in (
        "during_step",
        "during_idempotent_step",
        "during_hard_check",
        "racing_resumers",
        "claimed_then_inspected",
    ):
        (part,) = scenario.trigger.hold
        return "" if running == {part} else f"running at death: {sorted(running)}, wanted {part}"
    if name == "torn_started":
        (part,) = scenario.trigger.hold
        if running != {part} or before.last_commit != ("started", part):
            return f"running: {sorted(running)}; last commit {before.last_commit}"
        return ""
    if name in ("between_steps", "torn_tail"):
        point = scenario.trigger.freeze_at
        assert point is not None
        part = point[2]
        if part not in before.settled or running:
            return f"{part} settled: {part in before.settled}; running: {sorted(running)}"
        if before.last_commit != ("settled", part):
            return f"the last commit was {before.last_commit}, not {part}'s settled entry"
        later = [p for p in plan[plan.index(part) + 1 :] if p in before.started]
        return "" if not later else f"steps after {part} had started: {later}"
    if name == "fan_out":
        members = set(FAN_OUT)
        ok = {p for p, s in before.settled.items() if s.outcome == "ok"} & members
        failed = {p for p, s in before.settled.items() if s.outcome != "ok"} & members
        waiting = members - before.started
        if ok and failed and running & members and waiting:
            return ""
        return (
            f"fan-out at death: settled {sorted(ok)}, failed {sorted(failed)}, running "
            f"{sorted(running)}, not started {sorted(waiting)}: each must be non-empty"
        )
    if name == "before_close":
        if before.close_committed or running:
            return f"closed: {before.close_committed}; running: {sorted(running)}"
        return "" if before.close_reached else "the close entry was never about to be written"
    return f"no premise for scenario {name!r}"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario(
        "before_open",
        "inside ask, before the open entry commits",
        Trigger(freeze_at=("open", "pre", "")),
    ),
    Scenario(
        "after_open",
        "after the open entry, before any step starts",
        Trigger(freeze_at=("open", "post", "")),
    ),
    Scenario(
        "during_step",
        "during step score (fan-in, not idempotent)",
        Trigger(hold=frozenset({"score"}), holds=1),
    ),
    Scenario(
        "during_idempotent_step",
        "during step history (idempotent)",
        Trigger(hold=frozenset({"history"}), holds=1),
    ),
    Scenario(
        "between_steps",
        "after step price settles, before broken starts",
        Trigger(freeze_at=("settled", "post", "price")),
    ),
    Scenario(
        "fan_out",
        "mid fan-out, workers=2: settled, failed, running, not started",
        Trigger(
            hold=frozenset({"history", "risk", "docs"}),
            holds=2,
            settled=frozenset({"price", "broken"}),
        ),
        workers=2,
    ),
    Scenario(
        "during_hard_check",
        "during the hard check eligible",
        Trigger(hold=frozenset({"eligible"}), holds=1),
    ),
    Scenario(
        "before_close",
        "every step settled, before the close entry",
        Trigger(freeze_at=("close", "pre", "")),
    ),
    Scenario(
        "torn_tail",
        "torn tail: docs settled, its entry damaged after the kill",
        Trigger(freeze_at=("settled", "post", "docs")),
        tear_last=True,
    ),
    Scenario(
        "torn_started",
        "torn tail: during score (not idempotent), its started entry damaged",
        Trigger(hold=frozenset({"score"}), holds=1),
        tear_last=True,
    ),
    Scenario(
        "claimed_then_inspected",
        "during score, inspected while a live resumer holds the claim",
        Trigger(hold=frozenset({"score"}), holds=1),
        inspect_claimed=True,
    ),
    Scenario(
        "racing_resumers",
        "during history, then two resumers at once",
        Trigger(hold=frozenset({"history"}), holds=1),
        racing=True,
    ),
)

BY_NAME = {s.name: s for s in SCENARIOS}
