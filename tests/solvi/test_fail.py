"""A check that returns `Fail(reason)`: it fails, and the answers it settles say why."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from solvi import Catalog, Fail, Question, System
from solvi._db.exact import ExactFormError, decode, encode


def _catalog() -> Catalog:
    cat = Catalog("fresh")

    @cat.fn
    def evidence(case):
        return {"age_days": case["age_days"]}

    @cat.check(hard=True)
    def fresh(evidence):
        if evidence["age_days"] > 30:
            return Fail(f"evidence is {evidence['age_days']} days old, more than 30")
        return True

    @cat.check
    def small(case):
        return Fail("too large") if case["amount"] > 100 else True

    @cat.rule
    def approve(fresh, small):
        return small is True

    return cat


def _system(forced: object = False) -> System:
    if forced is None:
        return System(_catalog(), [Question("approve")])
    return System(_catalog(), [Question("approve", forced=forced)])


STALE = {"case": {"age_days": 40, "amount": 5}}


def test_a_failed_hard_check_forces_with_its_own_reason() -> None:
    """The forced answer's reason carries what the check said; its value is False."""
    res = _system().ask(STALE)
    answer = res["approve"]
    assert (answer.status, answer.value, answer.guard) == ("forced", False, "fresh")
    assert answer.reason == "hard check fresh failed: evidence is 40 days old, more than 30"
    assert res.record["values"]["fresh"] is False


def test_an_abstention_names_the_reason_and_the_missing_forced_value() -> None:
    """Without a forced value the answer abstains and says both things."""
    answer = _system(None).ask(STALE)["approve"]
    assert answer.status == "abstained"
    assert answer.reason == (
        "hard check fresh failed: evidence is 40 days old, more than 30; "
        "the question has no forced value"
    )


def test_a_plain_false_keeps_the_plain_reason() -> None:
    """A check that returns False reads as before."""
    cat = Catalog("plain")

    @cat.check(hard=True)
    def ok(x):
        return False

    @cat.rule
    def approve(ok):
        return True

    answer = System(cat, [Question("approve")]).ask({"x": 1})["approve"]
    assert answer.reason == "hard check ok failed; the question has no forced value"


def test_a_soft_check_hands_false_to_its_rule() -> None:
    """A rule reading a check gets a bool, never the Fail object."""
    res = _system().ask({"case": {"age_days": 1, "amount": 500}})
    assert res["approve"].status == "decided"
    assert res["approve"].value is False
    assert res.values["small"] is False


def test_every_driver_writes_the_same_record() -> None:
    """ask, ask(workers=4) and aask give the same reason and hash."""
    system = _system()
    one = system.ask(STALE)
    threaded = system.ask(STALE, workers=4)

    async def main() -> str:
        return (await system.aask(STALE)).hash

    assert one.hash == threaded.hash == anyio.run(main)
    assert one["approve"].reason == threaded["approve"].reason


@pytest.mark.parametrize("reason", ["", "   ", None, 3])
def test_a_fail_needs_a_reason(reason: object) -> None:
    """Fail without a non-empty string reason is refused, saying what it takes."""
    with pytest.raises(TypeError, match=r"Fail\(reason\) takes a non-empty string"):
        Fail(reason)  # type: ignore[arg-type]


def test_a_fail_is_falsy() -> None:
    """Fail reads as False wherever a check's value is tested."""
    assert not Fail("no")


def test_a_journaled_fail_keeps_its_reason(tmp_path: Path) -> None:
    """The journal holds a Fail exactly, so a resumed request can give the same reason."""
    system = System(_catalog(), [Question("approve", forced=False)], journal=tmp_path / "j.db")
    try:
        res = system.ask(STALE, request_id="stale-1")
        assert system.journal is not None
        entry = next(
            e
            for e in system.journal.load("stale-1").entries
            if e.kind == "settled" and e.part == "fresh"
        )
        assert entry.resumable
        assert entry.value == Fail("evidence is 40 days old, more than 30")
        assert res["approve"].reason.endswith("evidence is 40 days old, more than 30")
    finally:
        system.close()


@pytest.mark.parametrize("reason", ["stale", 'with "quotes" and $dollars'])
def test_a_fail_has_an_exact_form(reason: str) -> None:
    """encode/decode give back an equal Fail; a damaged one is refused, not built."""
    assert decode(encode(Fail(reason)) or "") == Fail(reason)
    with pytest.raises(ExactFormError):
        decode('{"$fail": ""}')
    with pytest.raises(ExactFormError):
        decode('{"$fail": 3}')
