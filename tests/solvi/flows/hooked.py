"""The catalog the hook tests run: a hard check, a score, a part that always fails."""

from __future__ import annotations

import time

import anyio

from solvi import Catalog, Question

QUESTIONS = [Question("approve", forced=False), Question("explain")]


def hooked_catalog(name: str, *, slow_producer: bool) -> Catalog:
    """``policy`` read by the hard check ``policy_active``; a ``score``; ``broken``, which
    always raises; rules ``approve(policy_active, score)`` and ``explain(broken)``.

    With `slow_producer` the score comes from a blocking part that times out (after
    0.05 s) and then a quick one, and ``broken`` is async; else from one async part that
    yields once, and ``broken`` is sync: every driver meets both kinds either way.
    """
    cat = Catalog(name)

    @cat.fn
    def policy(policy_id: str) -> dict[str, bool]:
        return {"active": policy_id != "lapsed"}

    @cat.check(hard=True)
    def policy_active(policy: dict[str, bool]) -> bool:
        return policy["active"]

    if slow_producer:

        @cat.fn(provides="score", timeout=0.05, blocking=True)
        def slow_score(claim: int) -> int:
            time.sleep(0.5)
            return claim

        @cat.fn(provides="score")
        def quick_score(claim: int) -> int:
            return claim // 2

        @cat.fn
        async def broken(claim: int) -> int:
            msg = "no such thing"
            raise LookupError(msg)

    else:

        @cat.fn(provides="score")
        async def history(claim: int) -> int:
            await anyio.sleep(0.001)
            return claim + 1

        @cat.fn
        def broken(claim: int) -> int:
            msg = "no such thing"
            raise LookupError(msg)

    @cat.rule
    def approve(policy_active: bool, score: int) -> bool:
        return score < 100

    @cat.rule
    def explain(broken: int) -> str:
        return "never"

    return cat
