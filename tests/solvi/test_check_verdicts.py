"""A check's value is read as a verdict (True, False or a `Fail`) as soon as it
returns: the record, the journal and a resume then hold the same thing, whichever
way the request ran, and a value that is neither true nor false is the check's error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from solvi import Catalog, Question, System


class Approval:
    """A truthy result object with no JSON form (a client library's, say)."""


class Ambiguous:
    """A value that refuses to be read as true or false."""

    def __bool__(self) -> bool:
        msg = "the truth value is ambiguous"
        raise ValueError(msg)


def _system(value: object, tmp_path: Path | None, *, store: bool = False) -> System:
    cat = Catalog("verdicts")

    @cat.check(hard=True)
    def known(customer: str) -> Any:
        return value

    @cat.rule
    def approve(known: bool) -> bool:
        return known

    questions = [Question("approve", forced=False)]
    if tmp_path is None:
        return System(cat, questions)
    if store:
        return System(cat, questions, store=tmp_path / "s.db", journal=True)
    return System(cat, questions, journal=tmp_path / "j.journal")


STATE = {"customer": "c-1"}


def _every_way(value: object, tmp_path: Path) -> dict[str, Any]:
    """The response of every way of running the request, by name."""
    out = {"ask": _system(value, None).ask(STATE)}
    out["ask, journal"] = _system(value, tmp_path / "a").ask(STATE)
    out["ask, store"] = _system(value, tmp_path / "b", store=True).ask(STATE)
    out["aask, journal"] = anyio.run(_system(value, tmp_path / "c").aask, STATE)
    out["aask, trio"] = anyio.run(_system(value, None).aask, STATE, backend="trio")
    return out


@pytest.fixture(autouse=True)
def _dirs(tmp_path: Path) -> None:
    for name in "abc":
        (tmp_path / name).mkdir()


def test_a_truthy_object_passes_the_check_with_a_journal_as_without(tmp_path: Path) -> None:
    responses = _every_way(Approval(), tmp_path)
    for name, response in responses.items():
        assert response["approve"].status == "decided", name
        assert response["approve"].value is True, name
        assert response.values["known"] is True, name
    assert len({r.hash for r in responses.values()}) == 1


def test_a_falsy_object_fails_the_check_the_same_everywhere(tmp_path: Path) -> None:
    responses = _every_way([], tmp_path)
    for name, response in responses.items():
        assert response["approve"].status == "forced", name
        assert response.values["known"] is False, name
    assert len({r.hash for r in responses.values()}) == 1


def test_a_value_that_is_neither_true_nor_false_is_the_checks_error(tmp_path: Path) -> None:
    responses = _every_way(Ambiguous(), tmp_path)
    for name, response in responses.items():
        (guard,) = response.safeguards
        assert (guard.part, guard.kind) == ("known", "error"), name
        assert guard.message == (
            "returned a value that is neither true nor false: "
            "ValueError: the truth value is ambiguous"
        )
        # The reason says what the check did, never that it raised.
        assert "known returned a value that is neither" in response["approve"].reason, name
        assert "raised" not in response["approve"].reason, name
    assert len({r.hash for r in responses.values()}) == 1


def test_a_check_that_returns_none_is_its_error_not_a_failed_check(tmp_path: Path) -> None:
    """A check without a `return` gives None; read as false it would force every
    request, so it is the check's error, the same every way, saying what to fix."""
    responses = _every_way(None, tmp_path)
    for name, response in responses.items():
        (guard,) = response.safeguards
        assert (guard.part, guard.kind) == ("known", "error"), name
        assert guard.message == (
            "returned a value that is neither true nor false: None; return True or False "
            "(did the check forget its return?)"
        )
        assert response["approve"].status == "abstained", name
    assert len({r.hash for r in responses.values()}) == 1


def test_a_resumed_check_keeps_its_verdict(tmp_path: Path) -> None:
    """The journal holds the verdict, so a resume reads back True, not the object."""
    system = _system(Approval(), tmp_path / "a")
    first = system.ask(STATE)
    assert system.journal is not None
    entries = system.journal.load(first.request_id).entries
    (step,) = (e for e in entries if e.kind == "settled" and e.part == "known")
    assert step.value is True
