"""Questions and Fail on their own: names normalised, forced values, and every mistake
`check_questions` finds named with the fix."""

from __future__ import annotations

import pytest

from solvi import Catalog, Fail, PlanError, Question
from solvi.question import UNSET, check_questions


def _catalog() -> Catalog:
    cat = Catalog("q")

    @cat.fn
    def score(x: int) -> int:
        return x

    @cat.check
    def fine(score: int) -> bool:
        return score > 0

    @cat.rule
    def approve(fine: bool) -> bool:
        return fine

    return cat


def test_names_are_kept_as_tuples() -> None:
    """uses= and requires= take one name or many, kept as tuples."""
    q = Question("report", uses="score", requires=["fine", "score"])
    assert (q.uses, q.requires) == (("score",), ("fine", "score"))
    assert Question("approve").uses is None


def test_forced_is_unset_until_given() -> None:
    """has_forced tells a forced False from no forced value."""
    assert Question("a").forced is UNSET
    assert not Question("a").has_forced
    assert Question("a", forced=False).has_forced
    assert repr(UNSET) == "UNSET"
    assert not UNSET


def test_a_fail_is_false_and_keeps_its_reason() -> None:
    """Fail("why") is falsy, frozen, and needs a non-empty reason."""
    fail = Fail("evidence is 40 days old")
    assert not fail
    assert fail.reason == "evidence is 40 days old"
    with pytest.raises(TypeError) as caught:
        Fail("  ")
    assert str(caught.value) == (
        "Fail(reason) takes a non-empty string saying why the check failed, got '  '"
    )


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ((Question("approve"), Question("approve")), "question 'approve' is listed twice"),
        (
            (Question("ok", rule="aprove"),),
            "question 'ok' names rule 'aprove', which catalog 'q' does not have (did you mean "
            "'approve'?); fix the Question's rule=",
        ),
        (
            (Question("ok", rule="fine"),),
            "question 'ok' names 'fine' as its rule, but it is a check part; declare it with "
            "@catalog.rule",
        ),
        (
            (Question("report", uses=["scor"]),),
            "question 'report' uses 'scor', which no part of catalog 'q' provides (did you mean "
            "'score'?); fix the Question's uses=",
        ),
        (
            (Question("approve", requires="audit"),),
            "question 'approve' requires part 'audit', which catalog 'q' does not have; fix the "
            "Question's requires=",
        ),
        (
            (Question("aprove"),),
            "question 'aprove' has no rule of that name (did you mean 'approve'?); name the rule "
            "(Question('aprove', rule=...)), or pass uses= to report facts",
        ),
    ],
)
def test_each_mistake_names_the_question_and_the_fix(
    questions: tuple[Question, ...], message: str
) -> None:
    """check_questions raises a PlanError whose message says what to change."""
    with pytest.raises(PlanError) as caught:
        check_questions(_catalog(), questions)
    assert str(caught.value) == message


def test_a_question_that_is_not_a_question_is_a_type_error() -> None:
    """Only Question objects reach check_questions (System turns names into them)."""
    with pytest.raises(TypeError, match=r"^questions must be Question objects or names, got 3$"):
        check_questions(_catalog(), (3,))  # type: ignore[arg-type]


def test_valid_questions_pass() -> None:
    """A rule by name, a rule= and a fact report are all accepted."""
    check_questions(
        _catalog(),
        (Question("approve"), Question("ok", rule="approve"), Question("report", uses="score")),
    )
