"""A small loans catalog whose behaviour tests can change between recording and replay."""

from __future__ import annotations

import time
from typing import Any

import anyio.lowlevel

from solvi import Catalog, Question, System


def loans_catalog(settings: dict[str, Any], *, extra: bool = False) -> Catalog:
    """Loans: a hard check, an async rate, a slow bureau call with a timeout, two rules.

    `settings["limit"]` is the score `approve` needs; `settings["bureau_delay"]` the
    seconds the bureau takes (its timeout is 0.05 s). `extra` adds a part, which
    changes the catalog version.
    """
    cat = Catalog("loans")

    @cat.check(hard=True)
    def adult(applicant: dict[str, Any]) -> bool:
        return int(applicant["age"]) >= 18

    @cat.fn
    async def rate(applicant: dict[str, Any]) -> float:
        await anyio.lowlevel.checkpoint()
        return 0.05 if applicant["income"] > 50_000 else 0.08

    @cat.fn
    def score(applicant: dict[str, Any], rate: float) -> int:
        return int(applicant["income"] // 1000 - rate * 100)

    @cat.fn(timeout=0.05)
    def bureau(applicant: dict[str, Any]) -> dict[str, Any]:
        time.sleep(settings["bureau_delay"])
        return {"clean": not applicant.get("defaulted", False)}

    @cat.rule
    def approve(adult: bool, score: int) -> bool:
        return score >= settings["limit"]

    @cat.rule
    def clean_record(bureau: dict[str, Any]) -> bool:
        return bool(bureau["clean"])

    if extra:

        @cat.fn
        def note(applicant: dict[str, Any]) -> str:
            return "new part"

    return cat


def loans_system(settings: dict[str, Any], *, extra: bool = False) -> System:
    """The loans System: `approve` is forced False when the applicant is not adult."""
    return System(
        loans_catalog(settings, extra=extra), [Question("approve", forced=False), "clean_record"]
    )


#: What the module-level `system` reads; tests change it between record and replay.
SETTINGS: dict[str, Any] = {"limit": 40, "bureau_delay": 0.0}
system = loans_system(SETTINGS)
