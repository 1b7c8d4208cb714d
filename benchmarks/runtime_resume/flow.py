"""The flow every crash-resume scenario runs, and the hooks that let a child stop at an exact point.

A hard check, a fan-out of five parts (some idempotent, one failing on purpose),
a fan-in and two rules. Every part appends its name to a side-effect log when it
is entered, so a call cut short by SIGKILL is still counted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from solvi import Catalog, Question, System
from solvi.journal import Journal

#: The request every process asks: the hard check passes, `broken` fails.
INPUT: dict[str, Any] = {
    "case": {"id": "C-17", "amount": 1200, "items": ["form", "photo", "receipt"], "region": "eu"}
}
REQUEST_ID = "req-crash"
QUESTIONS = (Question("decide", forced=False), Question("review"))
#: The same catalog asked fewer questions: its plan differs, its catalog version does not.
CHANGED_QUESTIONS = (Question("decide", forced=False),)

T = TypeVar("T")

#: Called at fixed points: ("enter", part), ("return", part, value), ("raise", part, message).
Hook = Callable[..., None]


def _quiet(*_: Any) -> None:
    return None


def side_effect(part: str) -> None:
    """Append one line per call to the log named by SOLVI_BENCH_CALL_LOG (if set)."""
    path = os.environ.get("SOLVI_BENCH_CALL_LOG")
    if path:
        with Path(path).open("a") as f:
            f.write(part + "\n")


def build_catalog(hook: Hook = _quiet, *, extra_part: bool = False) -> Catalog:
    """The catalog; `hook` sees each call enter and leave; `extra_part` changes its version."""
    cat = Catalog("resume_bench")

    def enter(part: str) -> None:
        side_effect(part)
        hook("enter", part)

    def leave(part: str, value: T) -> T:
        hook("return", part, value)
        return value

    @cat.fn(idempotent=True)
    def profile(case: dict[str, Any]) -> dict[str, Any]:
        enter("profile")
        return leave("profile", {"id": case["id"], "region": case["region"], "tier": "gold"})

    @cat.check(hard=True, idempotent=True)
    def eligible(profile: dict[str, Any]) -> bool:
        enter("eligible")
        return bool(leave("eligible", profile["region"] in ("eu", "uk")))

    @cat.fn(idempotent=True)
    def price(profile: dict[str, Any], case: dict[str, Any]) -> int:
        enter("price")
        return int(leave("price", case["amount"] * (2 if profile["tier"] == "gold" else 3)))

    @cat.fn
    def broken(profile: dict[str, Any]) -> int:
        enter("broken")
        message = f"ledger for {profile['id']} is unreachable"
        hook("raise", "broken", f"ValueError: {message}")
        raise ValueError(message)

    @cat.fn(idempotent=True)
    def history(profile: dict[str, Any]) -> list[int]:
        enter("history")
        return list(leave("history", [3, 1, 4, 1, 5]))

    @cat.fn
    def risk(profile: dict[str, Any], case: dict[str, Any]) -> float:
        # Not idempotent: stands for a call that charges or notifies someone.
        enter("risk")
        return float(leave("risk", 0.25 if case["amount"] < 5000 else 0.75))

    @cat.fn(idempotent=True)
    def docs(case: dict[str, Any]) -> list[str]:
        enter("docs")
        return list(leave("docs", sorted(case["items"])))

    @cat.fn
    def score(price: int, history: list[int], risk: float, docs: list[str]) -> int:
        # Not idempotent: the fan-in records the score it hands out.
        enter("score")
        return int(leave("score", price // 100 + sum(history) - int(risk * 10) + len(docs)))

    @cat.rule
    def decide(eligible: bool, score: int) -> bool:
        enter("decide")
        return bool(leave("decide", score >= 20))

    @cat.rule
    def review(eligible: bool, broken: int, docs: list[str]) -> str:
        enter("review")
        return str(leave("review", f"{broken}:{len(docs)}"))

    if extra_part:

        @cat.fn(idempotent=True)
        def audit_trail(case: dict[str, Any]) -> str:
            enter("audit_trail")
            return str(leave("audit_trail", case["id"]))

    return cat


def build_system(
    journal: str | os.PathLike[str] | Journal,
    *,
    hook: Hook = _quiet,
    workers: int = 1,
    questions: tuple[Question, ...] = QUESTIONS,
    extra_part: bool = False,
) -> System:
    """A System over the bench catalog, journaling to `journal`."""
    return System(
        build_catalog(hook, extra_part=extra_part), questions, workers=workers, journal=journal
    )


def idempotent_parts() -> frozenset[str]:
    """The parts declared safe to run again after a crash cut them short."""
    return frozenset(p.name for p in build_catalog().parts if p.idempotent)


def needs(
    catalog: Catalog | None = None, questions: Iterable[Question] = QUESTIONS
) -> dict[str, frozenset[str]]:
    """Each question's rule and every part it reads, transitively (default: the bench flow's)."""
    parts = {p.provides: p for p in (build_catalog() if catalog is None else catalog).parts}
    out: dict[str, frozenset[str]] = {}
    for q in questions:
        seen: set[str] = set()
        todo = [q.name]
        while todo:
            fact = todo.pop()
            part = parts.get(fact)
            if part is None or part.name in seen:
                continue
            seen.add(part.name)
            todo.extend(part.inputs)
        out[q.name] = frozenset(seen)
    return out
