"""Catalog mistakes found when a System is built: ungoverning hard checks, typos, types."""

from __future__ import annotations

import difflib
import random
import string
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvi.mistakes as mistakes
from solvi import Catalog, PlanError, Question, SolviWarning, System
from solvi.catalog import Part
from solvi.errors import _closest
from solvi.mistakes import _compound, _LookAlikes, key_typos, request_keys, type_conflicts


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


# -- key typos against the comparison of every pair ----------------------------------


def _typos_by_comparing_every_pair(parts: Sequence[Part]) -> list[str]:
    """`key_typos` as it was: each key against every fact and every other key."""
    flow_parts = [p for p in parts if p.kind != "extract"]
    produced = sorted({p.provides for p in flow_parts})
    keys = request_keys(flow_parts)
    found = []
    for key in keys:
        others = [n for n in [*produced, *keys] if n != key and not _compound(key, n)]
        hint = _closest(key, others, cutoff=0.8)
        if hint:
            readers = ", ".join(p.name for p in flow_parts if key in p.inputs)
            found.append(
                f"request key {key!r}, read by {readers}, looks like a misspelt name{hint}; "
                f"fix the parameter name, or declare the request keys with "
                f"System(..., inputs=[...]) so a misspelling fails when the System is built"
            )
    return found


#: two letters, so that generated names often look alike, and `_` for compound names
NAMES = st.text("ab_", min_size=1, max_size=9)


@st.composite
def _parts(draw: st.DrawFn) -> list[Part]:
    """Random parts: unique names, each reading a few generated names."""
    facts = draw(st.lists(NAMES, min_size=1, max_size=12, unique=True))
    return [
        Part(
            name=fact,
            kind=draw(st.sampled_from(["fn", "check", "rule", "extract"])),
            func=len,
            provides=fact,
            inputs=tuple(draw(st.lists(NAMES, max_size=4, unique=True))),
            index=index,
        )
        for index, fact in enumerate(facts)
    ]


@settings(max_examples=400, deadline=None)
@given(_parts())
def test_key_typos_say_what_comparing_every_pair_says(parts: list[Part]) -> None:
    """Against brute force: the same messages, hints and order of hints on random catalogs."""
    assert key_typos(parts) == _typos_by_comparing_every_pair(parts)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.text("ab_x", max_size=40), max_size=25),
    st.text("ab_x", max_size=40),
    st.sampled_from([0.0, 0.6, 0.75, 0.8, 0.9, 1.0]),
)
def test_look_alikes_hold_every_name_that_reaches_the_cutoff(
    names: list[str], name: str, cutoff: float
) -> None:
    """Every name whose difflib ratio with `name` reaches the cutoff is near it."""
    near = set(_LookAlikes.of(names, cutoff).near(name))
    for other in names:
        # get_close_matches compares each possibility (seq1) with the word (seq2)
        if difflib.SequenceMatcher(None, other, name).ratio() >= cutoff:
            assert other in near


def test_look_alikes_hold_long_names_difflib_matches_with_junk() -> None:
    """Names of 200 letters and more (difflib then ignores its popular letters) still
    come back when they reach the cutoff."""
    rng = random.Random(7)
    base = "".join(rng.choice("ab_") for _ in range(240))
    names = [base[:i] + base[i + 3 :] for i in range(0, 240, 9)] + [base[::-1]]
    near = set(_LookAlikes.of(names, 0.8).near(base))
    wanted = {n for n in names if difflib.SequenceMatcher(None, n, base).ratio() >= 0.8}
    assert len(wanted) >= 3
    assert wanted <= near


def test_key_typos_compare_each_key_with_its_possible_look_alikes_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Keys that look like nothing are not compared with every other name (5,000 keys
    took 50 s that way): difflib sees under a tenth of the pairs of 300 unlike keys."""
    compared = 0

    class Counting(difflib.SequenceMatcher[str]):
        def set_seq1(self, a: Any) -> None:
            nonlocal compared
            compared += 1
            super().set_seq1(a)

    rng = random.Random(3)
    keys = list(
        dict.fromkeys(
            "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 24)))
            for _ in range(300)
        )
    )
    parts = [
        Part(name=f"uses_{i}", kind="rule", func=len, provides=f"uses_{i}", inputs=(k,), index=i)
        for i, k in enumerate(keys)
    ]
    monkeypatch.setattr(difflib, "SequenceMatcher", Counting)
    assert key_typos(parts) == []
    assert compared < len(keys) * len(keys) / 10


def test_ungoverning_checks_go_through_the_parts_a_few_times_for_all_questions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """100 questions cost a few passes over the parts, not one each (3,000 rules over
    9,000 parts took 9 s to build a System that way); the finding is unchanged."""
    passes = 0

    class Counted(list[Part]):
        def __iter__(self) -> Iterator[Part]:
            nonlocal passes
            passes += 1
            return super().__iter__()

    flow_parts = mistakes._flow_parts
    monkeypatch.setattr(mistakes, "_flow_parts", lambda parts: Counted(flow_parts(parts)))
    cat = _adult_catalog()
    for i in range(100):
        ns: dict[str, Any] = {}
        exec(f"def r{i}(income):\n    return income > {i}", ns)
        cat.rule(ns[f"r{i}"])
    questions = [Question(p.name) for p in cat.parts if p.kind == "rule"]
    (message,) = mistakes.ungoverning_checks(cat.parts, questions)
    assert message.startswith("hard check 'adult' governs no question")
    assert passes < 10
