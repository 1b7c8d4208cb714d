"""Recovery on its own: the two forms a settled value is journaled in, the input's form,
and what `resume` refuses (with a journal, no crash needed)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog

from solvi import Catalog, Question, Response, ResumeRefused, System
from solvi.recovery import NO_EXACT, state_json, value_forms


@dataclasses.dataclass
class _Point:
    x: int


@pytest.mark.parametrize(
    ("value", "forms"),
    [
        (3, ("3", None)),
        ('a"b', ('"a\\"b"', None)),
        (None, ("null", None)),
        (True, ("true", None)),
        (1.5, ("1.5", None)),
        ({"a": 2, "b": 1}, ('{"a":2,"b":1}', None)),
        ((1, 2), ("[1,2]", '{"$tuple":[1,2]}')),
        ({"b": 1, "a": 2}, ('{"a":2,"b":1}', '{"b":1,"a":2}')),  # key order is kept exactly
        (dt.date(2024, 1, 2), ('"2024-01-02"', '{"$date":"2024-01-02"}')),
        (_Point(4), ('{"x":4}', NO_EXACT)),
    ],
)
def test_a_settled_value_has_a_record_form_and_an_exact_form(
    value: Any, forms: tuple[str, str | None]
) -> None:
    """Canonical JSON for the record; the exact form only where it differs (NO_EXACT when
    there is none, so the step is not resumable)."""
    assert value_forms(value, "p") == forms


def test_the_input_is_kept_exactly_when_it_can_be() -> None:
    """Plain inputs are canonical JSON; a tuple keeps its tag."""
    assert state_json({"b": 1, "a": "x"}) == '{"a":"x","b":1}'
    assert state_json({"t": (1, 2)}) == '{"t":{"$tuple":[1,2]}}'
    assert state_json({"p": _Point(1)}) == '{"p":{"x":1}}'


@pytest.fixture
def journaled(tmp_path: Path) -> Iterator[System]:
    """The claims System with a SQLite journal."""
    system = System(claims_catalog(Calls()), ["approve"], journal=tmp_path / "j.db")
    yield system
    system.close()


def test_a_finished_request_is_not_resumed(journaled: System) -> None:
    """resume of a closed request says there is nothing to resume; nothing is listed."""
    journaled.ask({"policy_id": "P", "claim": {}}, request_id="done1")
    with pytest.raises(
        ResumeRefused,
        match=r"^request 'done1' is already closed; there is "
        r"nothing to resume$",
    ):
        journaled.resume("done1")
    assert journaled.journal_status() == []
    assert journaled.recover() == []


def test_an_unknown_request_names_the_journal(journaled: System, tmp_path: Path) -> None:
    """resume of an id the journal never saw names the journal it looked in."""
    with pytest.raises(ResumeRefused) as caught:
        journaled.resume("nope")
    assert (
        str(caught.value)
        == f"the journal SQLiteJournal('{tmp_path / 'j.db'}') has no request 'nope': it "
        f"never opened here, or prune() forgot it once it was closed"
    )
    assert isinstance(caught.value, ValueError)


class _Crash(BaseException):
    """The process dies (a BaseException, so that no part's error handling takes it)."""


def _crash_then_resume(
    cat: Catalog, questions: list[Any], state: dict[str, Any], crash: dict[str, bool], tmp: Path
) -> Response:
    """Ask with a journal while `crash["on"]` makes a part die, then resume the request
    from a second System on the same journal."""
    first = System(cat, questions, journal=tmp / "j.db")
    crash["on"] = True
    with pytest.raises(_Crash):
        first.ask(state, request_id="r-1")
    crash["on"] = False
    assert first.journal is not None
    first.journal.close()
    second = System(cat, questions, journal=tmp / "j.db")
    try:
        return second.resume("r-1")
    finally:
        second.close()


@pytest.mark.parametrize(
    "value",
    [math.nan, math.inf, -math.inf, {"a": math.nan}, [1.0, -math.inf], (math.nan,)],
    ids=repr,
)
def test_a_resume_hands_on_a_nan_or_an_infinity_as_it_was(tmp_path: Path, value: Any) -> None:
    """Such a value's record form (tagged) is its exact form too: read back exactly, it
    reaches the later step as the float, and the resumed record equals the first."""
    crash = {"on": False}
    cat = Catalog("floats")

    @cat.fn(idempotent=True)
    def score(applicant: int) -> Any:
        return value

    @cat.fn(idempotent=True)
    def limit(applicant: int) -> float:
        if crash["on"]:
            raise _Crash
        return 0.5

    @cat.rule
    def review(score: Any, limit: float) -> str:
        return repr(score)

    uninterrupted = System(cat, ["review"]).ask({"applicant": 7})
    resumed = _crash_then_resume(cat, ["review"], {"applicant": 7}, crash, tmp_path)
    assert resumed["review"].value == repr(value)
    assert resumed.hash == uninterrupted.hash


def _speculating_catalog(crash: dict[str, bool], *, idempotent: bool) -> Catalog:
    """A hard check that fails, read by `account`, which the crash cuts short; beside it
    `bureau` (settled fast) and `bureau_detail` (slow), needed only if the check passes."""
    cat = Catalog("speculating")

    @cat.fn(idempotent=True)
    async def account(customer: str) -> dict[str, bool]:
        await anyio.sleep(0.05)
        if crash["on"]:
            raise _Crash
        return {"ok": False}

    @cat.check(hard=True)
    def active(account: dict[str, bool]) -> bool:
        return account["ok"]

    @cat.fn(idempotent=True)
    async def bureau(customer: str) -> int:
        return 700

    @cat.fn(idempotent=idempotent)
    async def bureau_detail(bureau: int) -> int:
        await anyio.sleep(0.2)
        return bureau

    @cat.rule
    def approve(active: bool, bureau_detail: int) -> bool:
        return bureau_detail > 650

    return cat


@pytest.mark.parametrize("idempotent", [True, False])
def test_a_resumed_speculative_request_forgets_what_its_failed_check_made_unneeded(
    tmp_path: Path, idempotent: bool
) -> None:
    """Speculation journaled `bureau` and began `bureau_detail` before the crash; the
    hard check then fails on resume, so the resumed record drops both, as the speculative
    run would have, and equals an uninterrupted one. No note says a step was re-run that
    was not."""
    crash = {"on": False}
    cat = _speculating_catalog(crash, idempotent=idempotent)
    questions = [Question("approve", forced=False)]
    uninterrupted = System(cat, questions).ask({"customer": "c"})
    first = System(cat, questions, journal=tmp_path / "j.db")
    crash["on"] = True
    with pytest.raises(_Crash):
        anyio.run(
            functools.partial(first.aask, speculate=True, request_id="r-1"), {"customer": "c"}
        )
    crash["on"] = False
    assert first.journal is not None
    first.journal.close()
    second = System(cat, questions, journal=tmp_path / "j.db")
    resumed = second.resume("r-1")
    second.close()
    assert [s.part for s in resumed.trace.steps] == ["account", "active"]
    assert "bureau" not in resumed.values
    assert resumed.hash == uninterrupted.hash
    (note,) = (n for n in resumed.notes if n.startswith("bureau_detail"))
    if idempotent:
        expected = "not re-run (not needed: hard check active failed)"
    else:
        expected = "not re-run (declare idempotent=True to allow it)"
    assert note == f"bureau_detail was interrupted during execution; {expected}"


def test_a_step_settled_before_the_crash_shows_how_long_it_took(tmp_path: Path) -> None:
    """The journal's clock times it (from its start entry to its settled one), at the
    resume's start, where it was shown taking no time at all."""
    crash = {"on": False}
    cat = Catalog("timed")

    @cat.fn(idempotent=True)
    def slow(x: int) -> int:
        time.sleep(0.05)
        return x

    @cat.fn(idempotent=True)
    def after(slow: int) -> int:
        if crash["on"]:
            raise _Crash
        return slow

    @cat.rule
    def answer(after: int) -> int:
        return after

    resumed = _crash_then_resume(cat, ["answer"], {"x": 1}, crash, tmp_path)
    step = resumed.trace.steps[0]
    assert (step.part, step.start_ms) == ("slow", 0.0)
    assert step.duration_ms >= 45


def test_recover_leaves_a_request_of_another_catalog_version_to_that_version(
    tmp_path: Path,
) -> None:
    """A request of version A whose owner died: a System of version B claims nothing
    (it could only refuse to resume it) and lists it; one of version A claims it."""

    def catalog(*, extra: bool) -> Catalog:
        cat = Catalog("versions")

        @cat.fn(idempotent=True)
        def score(age: int) -> int:
            if crash["on"]:
                raise _Crash
            return age * 2

        @cat.rule
        def approve(score: int) -> bool:
            return score > 40

        if extra:

            @cat.fn
            def note(age: int) -> str:
                return "new"

        return cat

    crash = {"on": True}
    old = System(catalog(extra=False), ["approve"], journal=tmp_path / "j.db")
    with pytest.raises(_Crash):
        old.ask({"age": 30}, request_id="r-1")
    assert old.journal is not None
    old.journal.close()
    crash["on"] = False
    new = System(catalog(extra=True), ["approve"], journal=tmp_path / "j.db")
    assert new.version != old.version
    assert new.recover() == []
    assert [r.request_id for r in new.journal_status()] == ["r-1"]
    again = System(catalog(extra=False), ["approve"], journal=tmp_path / "j.db")
    assert [r.request_id for r in again.recover()] == ["r-1"]
    assert again.resume("r-1")["approve"].value is True
    new.close()
    again.close()
