"""Catalog mistakes found when a System is built: ungoverning hard checks, typos, types."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solvi import Catalog, PlanError, Question, SolviWarning, System
from solvi.mistakes import key_typos, type_conflicts


def _adult_catalog() -> Catalog:
    cat = Catalog("loans")

    @cat.check(hard=True)
    def adult(applicant):
        return applicant["age"] >= 18

    @cat.rule
    def approve(income):
        return income > 1000

    return cat


def test_a_hard_check_that_gates_nothing_warns_when_the_system_is_built() -> None:
    """The warning names the check and both fixes; the check indeed never runs."""
    with pytest.warns(SolviWarning) as caught:
        system = System(_adult_catalog())
    (warning,) = caught
    assert str(warning.message) == (
        "hard check 'adult' governs no question: no question's flow holds it for any "
        "request, so it never runs and can never fail one; read it in the rules it should "
        "gate (e.g. def approve(adult, ...)), or list it in their "
        "Question(..., requires=['adult'])"
    )
    assert issubclass(SolviWarning, UserWarning)
    res = system.ask({"applicant": {"age": 12}, "income": 5000})
    assert res["approve"].value is True
    assert [s.part for s in res.trace.steps] == ["approve"]


def test_requiring_the_check_makes_it_govern() -> None:
    """Either fix removes the warning and the check forces the answer."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        system = System(_adult_catalog(), [Question("approve", forced=False, requires="adult")])
    res = system.ask({"applicant": {"age": 12}, "income": 5000})
    assert (res["approve"].status, res["approve"].value) == ("forced", False)


def _typo_catalog() -> Catalog:
    cat = Catalog("typo")

    @cat.fn
    def income(payslip):
        return payslip["monthly"] * 12

    @cat.rule
    def approve(income, incom):
        return income > incom

    return cat


def test_declared_inputs_turn_a_typo_into_a_plan_error() -> None:
    """With inputs=, a part reading an unknown name fails at build, naming the closest."""
    with pytest.raises(PlanError) as info:
        System(_typo_catalog(), inputs=["payslip"])
    assert str(info.value) == (
        "part approve reads 'incom', which no part provides and inputs= does not list "
        "(did you mean 'income'?); fix the parameter name, or add 'incom' to inputs="
    )


def test_declared_inputs_that_cover_every_name_build() -> None:
    """A complete inputs= list builds, and the System keeps it."""
    system = System(_typo_catalog(), inputs=["payslip", "incom"])
    assert system.inputs == frozenset({"payslip", "incom"})
    assert System(_typo_catalog()).inputs is None


def test_inputs_may_not_name_a_computed_fact() -> None:
    """inputs= lists request keys only; a computed fact there is refused with the way out."""
    with pytest.raises(PlanError, match=r"inputs= lists 'income', which part income provides"):
        System(_typo_catalog(), inputs=["payslip", "incom", "income"])


def test_a_key_that_looks_like_a_fact_is_reported() -> None:
    """key_typos names the key, who reads it and the look-alike."""
    assert key_typos(_typo_catalog().parts) == [
        "request key 'incom', read by approve, looks like a misspelt name (did you mean "
        "'income'?); fix the parameter name, or declare the request keys with "
        "System(..., inputs=[...]) so a misspelling fails when the System is built"
    ]


def test_a_key_that_names_what_a_part_looks_up_is_no_typo() -> None:
    """`policy_id` read to fetch `policy` is a name with a word added, not a misspelling;
    `claim_amounts` beside `claim_amount` still looks like one."""
    cat = Catalog("lookups")

    @cat.fn
    def policy(policy_id: str) -> dict[str, bool]:
        return {"active": True}

    @cat.fn
    def claim_amount(claim_amounts: list[int]) -> int:
        return sum(claim_amounts)

    @cat.rule
    def approve(policy: dict[str, bool], claim_amount: int) -> bool:
        return policy["active"] and claim_amount < 1_000

    (warning,) = key_typos(cat.parts)
    assert warning.startswith("request key 'claim_amounts', read by claim_amount, looks like")


def test_annotations_that_cannot_match_are_a_plan_error() -> None:
    """A str producer read as an int names both parts and both types."""
    cat = Catalog("types")

    @cat.fn
    def score(x: int) -> str:
        return str(x)

    @cat.rule
    def approve(score: int) -> bool:
        return score > 3

    with pytest.raises(PlanError) as info:
        System(cat)
    assert str(info.value) == (
        "part 'score' returns str (its return annotation) but part 'approve' reads 'score' "
        "as int (its parameter annotation), and the two cannot match; correct one of the "
        "annotations, or convert the value in 'score'"
    )


def _pair(returns: object, reads: object) -> Catalog:
    cat = Catalog("pair")

    def made(x):  # type: ignore[no-untyped-def]
        return x

    made.__annotations__ = {"return": returns}
    cat.fn(provides="v")(made)

    def rule(v):  # type: ignore[no-untyped-def]
        return v

    rule.__annotations__ = {"v": reads}
    cat.rule(provides="r")(rule)
    return cat


@pytest.mark.parametrize(
    ("returns", "reads"),
    [
        (int, float),
        (bool, int),
        (dict[str, int], Mapping[str, int]),
        (int | None, int),
        (object, str),
        ("NoSuchName", int),
        (list[int], list[str]),
    ],
)
def test_annotations_that_may_match_pass(returns: object, reads: object) -> None:
    """Subclasses, the numeric tower, unions, object and unresolvable names are accepted."""
    assert type_conflicts(_pair(returns, reads).parts) == []


@pytest.mark.parametrize(
    ("returns", "reads"), [(str, int), (float, int), (list[int], dict[str, int]), (None, str)]
)
def test_annotations_that_cannot_match_are_found(returns: object, reads: object) -> None:
    """Unrelated classes, float for int, a list for a dict and None for str conflict."""
    (conflict,) = type_conflicts(_pair(returns, reads).parts)
    assert (conflict.producer, conflict.consumer, conflict.fact) == ("made", "rule", "v")


def test_a_check_is_a_bool_whatever_its_annotation() -> None:
    """A check's value is a bool, so a reader annotated str conflicts with it."""
    cat = Catalog("checks")

    @cat.check
    def ok(x: int) -> int:
        return x

    @cat.rule
    def label(ok: str) -> str:
        return ok

    (conflict,) = type_conflicts(cat.parts)
    assert conflict.returns == "bool"


CLASSES = [int, float, bool, str, bytes, list, dict, tuple, set, type(None)]


@given(st.sampled_from(CLASSES), st.sampled_from(CLASSES))
def test_a_conflict_is_exactly_a_pair_no_value_can_satisfy(a: type, b: type) -> None:
    """Against brute force: a conflict exactly when no sample value of `a` is accepted as `b`."""
    samples = {
        int: [0, 3],
        float: [0.5],
        bool: [True],
        str: ["s"],
        bytes: [b"b"],
        list: [[1]],
        dict: [{"k": 1}],
        tuple: [(1,)],
        set: [{1}],
        type(None): [None],
    }
    tower = {float: (int, float), complex: (int, float, complex)}
    values = [v for cls, vs in samples.items() if issubclass(cls, a) for v in vs]
    accepted = any(isinstance(v, tower.get(b, b)) for v in values)
    assert (type_conflicts(_pair(a, b).parts) == []) == accepted
