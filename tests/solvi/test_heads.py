"""Heads: facts_for, fit, narrowed flows, the store, checkpoints, budgets, the loans example."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest
from benchmark_modules import load_benchmark
from file_modules import import_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solvi import Catalog, PlanError, Question, SolviError, SolviWarning, System
from solvi.heads import HEADS_BLOB, FactsTable
from solvi.order import CheckpointError, Head, features_of, read_checkpoint
from solvi.storage import open_store
from solvi.strategy import DeterministicStrategist, HeadPlan, ModelStrategist

ROOT = Path(__file__).resolve().parents[2]
LOANS = ROOT / "examples" / "loans.py"


class Calls:
    """Which parts ran, safe under worker threads."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._lock = threading.Lock()

    def add(self, name: str) -> None:
        """Note one call."""
        with self._lock:
            self.names.append(name)


def lending(calls: Calls, *, report_cost: float = 200.0, ratio_cost: float = 1.0) -> Catalog:
    """A costly credit report, a cheap ratio, a hard check, and the old rule."""
    cat = Catalog("lending")

    @cat.check(hard=True, cost=0.1)
    def known(customer: dict[str, Any]) -> bool:
        calls.add("known")
        return bool(customer["known"])

    @cat.fn(cost=report_cost)
    def report(customer: dict[str, Any]) -> dict[str, int]:
        calls.add("report")
        return {"score": int(customer["score"])}

    @cat.fn(cost=ratio_cost)
    def ratio(customer: dict[str, Any]) -> float:
        calls.add("ratio")
        return float(customer["debt"] / customer["income"])

    @cat.check(cost=0.1)
    def report_ok(report: dict[str, int]) -> bool:
        return report["score"] > 500

    @cat.rule
    def approve(known: bool, report_ok: bool, ratio: float) -> bool:
        return report_ok and ratio < 0.5

    return cat


QUESTIONS = [Question("decision", requires=["known"], forced=False)]


def customers(n: int, seed: int) -> list[dict[str, Any]]:
    """`n` requests drawn with `seed`."""
    rng = random.Random(seed)
    return [
        {
            "customer": {
                "known": rng.random() < 0.9,
                "score": rng.randint(300, 800),
                "debt": rng.randint(0, 90) * 1000,
                "income": rng.randint(20, 120) * 1000,
                "segment": rng.choice(["retail", "business"]),
            }
        }
        for _ in range(n)
    ]


def repaid(states: list[dict[str, Any]]) -> list[bool]:
    """The truth: a known customer with little debt for the income repays."""
    return [
        bool(s["customer"]["known"]) and s["customer"]["debt"] / s["customer"]["income"] < 0.4
        for s in states
    ]


def band(states: list[dict[str, Any]]) -> list[str]:
    """Three classes by debt ratio."""
    out = []
    for s in states:
        r = s["customer"]["debt"] / s["customer"]["income"]
        out.append("low" if r < 0.3 else "mid" if r < 0.9 else "high")
    return out


@pytest.fixture
def calls() -> Calls:
    """A fresh call log."""
    return Calls()


@pytest.fixture
def system(calls: Calls) -> System:
    """The lending System with the ruleless question `decision`."""
    return System(lending(calls), QUESTIONS)


TRAIN = customers(80, seed=1)
TEST = customers(30, seed=2)


# -- facts_for -------------------------------------------------------------------------


def test_facts_for_rows_equal_the_facts_of_whole_flow_runs(system: System) -> None:
    """Each row holds the state and every computed fact of ask(early_exit=False), flattened."""
    table = system.facts_for(TEST)
    assert isinstance(table, FactsTable)
    assert len(table) == len(TEST)
    assert any(not s["customer"]["known"] for s in TEST)  # a hard check fails on some
    for i, state in enumerate(TEST):
        res = system.ask(state, early_exit=False)
        values = {**state, **res.values}
        assert dict(table.values[i]) == values
        assert dict(table.rows[i]) == features_of(values, values)
        assert set(table.ms[i]) == set(res.values)
        assert all(ms >= 0.0 for ms in table.ms[i].values())
    assert table.facts == ("customer", "known", "report", "ratio", "report_ok")
    assert set(table.mean_ms) == {"known", "report", "ratio", "report_ok"}


def test_facts_for_runs_every_part_even_where_a_hard_check_fails(
    system: System, calls: Calls
) -> None:
    """An unknown customer still gets its report and ratio: training sees the whole flow."""
    stranger = {"customer": {**TEST[0]["customer"], "known": False}}
    table = system.facts_for([stranger])
    assert calls.names == ["known", "report", "ratio"]
    assert table.values[0]["known"] is False
    assert "report" in table.values[0]


# -- fit: the narrowed flow and the head's answers -------------------------------------


def test_a_fitted_head_narrows_the_flow_and_answers(system: System, calls: Calls) -> None:
    """After fit the costly report is not run; the head answers with its probability."""
    known = next(s for s in TEST if s["customer"]["known"])
    before = system.ask(known)
    assert before["decision"].reason == "reported facts"
    assert "report" in before.flow.steps
    old_version = system.version
    head = system.fit("decision", TRAIN, repaid(TRAIN))
    assert "report" not in head.facts
    assert head.classes == (False, True)
    assert head.rows == len(TRAIN)
    assert system.heads == {"decision": head}
    assert system.version == f"{system.catalog.version}+{system.version.split('+')[1]}"
    assert system.version != old_version
    assert isinstance(system.strategist, ModelStrategist)
    calls.names.clear()
    res = system.ask(known)
    assert "report" not in calls.names
    assert res.flow.skipped["report"] == "not needed"
    assert isinstance(res.flow.question("decision"), HeadPlan)
    assert res.flow.question("decision").targets == head.facts
    answer = res["decision"]
    value, p = head.decide({**known, **res.values})
    assert answer.status == "decided"
    assert answer.value == value
    assert answer.probability == p
    on = ", ".join(head.facts)
    assert answer.reason == f"head decision@{head.digest[:8]} on {on}: P({value}) {p:.3f}"
    assert res.record["answers"]["decision"]["probability"] == p
    assert res.record["catalog_version"] == system.version


def test_a_head_is_accurate_on_held_out_requests(system: System) -> None:
    """The head learns the debt-ratio rule well enough on 80 examples."""
    system.fit("decision", TRAIN, repaid(TRAIN))
    truth = repaid(TEST)
    right = sum(system.ask(s)["decision"].value == t for s, t in zip(TEST, truth, strict=True))
    assert right / len(TEST) >= 0.85


def test_a_failed_hard_check_still_forces_a_headed_question(system: System) -> None:
    """The question's required hard check governs it: an unknown customer is forced False."""
    system.fit("decision", TRAIN, repaid(TRAIN))
    stranger = {"customer": {**TEST[0]["customer"], "known": False}}
    answer = system.ask(stranger)["decision"]
    assert (answer.status, answer.value, answer.guard) == ("forced", False, "known")
    assert answer.probability is None


def test_fit_is_deterministic(calls: Calls) -> None:
    """The same examples and labels give the same head, digest included."""
    a = System(lending(calls), QUESTIONS).fit("decision", TRAIN, repaid(TRAIN))
    b = System(lending(calls), QUESTIONS).fit("decision", TRAIN, repaid(TRAIN))
    assert a == b
    assert a.digest == b.digest


def test_fit_takes_a_facts_table_and_features(system: System, calls: Calls) -> None:
    """features= trains on exactly those facts; a FactsTable is not run again."""
    table = system.facts_for(TRAIN)
    calls.names.clear()
    head = system.fit("decision", table, repaid(TRAIN), features=["ratio", "report"])
    assert calls.names == []
    assert head.facts == ("ratio", "report")
    assert system.plan(["customer"]).steps == ("known", "report", "ratio", "report_ok")


def test_fit_refuses_what_it_cannot_train(calls: Calls, system: System) -> None:
    """A rule's question, an unknown one, bad labels and unknown features are refused."""
    ruled = System(lending(calls), [Question("approve", forced=False)])
    with pytest.raises(PlanError) as info:
        ruled.fit("approve", TRAIN, repaid(TRAIN))
    assert str(info.value) == (
        "fit: question 'approve' is answered by its rule 'approve', and a rule's arguments "
        "come before a head's facts in planning; fit a question without a rule instead, "
        "e.g. Question('approve_head', uses=[...]) (the head's facts take the place of its uses)"
    )
    with pytest.raises(PlanError, match=r"no question 'decisoin' \(did you mean 'decision'\?\)"):
        system.fit("decisoin", TRAIN, repaid(TRAIN))
    with pytest.raises(ValueError, match="80 states but 3 labels; give one label per state"):
        system.fit("decision", TRAIN, [True, False, True])
    with pytest.raises(ValueError, match="at least 10 labelled states, got 4"):
        system.fit("decision", TRAIN[:4], repaid(TRAIN[:4]))
    with pytest.raises(ValueError, match="every label is True; a head needs examples of two"):
        system.fit("decision", TRAIN, [True] * len(TRAIN))
    with pytest.raises(TypeError, match="the labels mix bool and str; use labels of one kind"):
        system.fit("decision", TRAIN, [True] * 40 + ["no"] * 40)
    with pytest.raises(TypeError, match=r"label 0 is 0\.5 \(float\)"):
        system.fit("decision", TRAIN, [0.5] * 80)
    with pytest.raises(TypeError, match=r"label 1 is an integer of 16,610 bits .* 64 bits"):
        system.fit("decision", TRAIN, [1, 10**5000] * 40)
    with pytest.raises(PlanError, match=r"feature 'ratoi' .* \(did you mean 'ratio'\?\)"):
        system.fit("decision", TRAIN, repaid(TRAIN), features=["ratoi"])
    assert system.heads == {}


def test_multi_class_labels_grow_one_model_per_class(system: System) -> None:
    """Three classes: one-vs-rest models, probabilities summing to one, every class used."""
    train = customers(150, seed=5)
    head = system.fit("decision", train, band(train), features=["ratio"])
    assert head.classes == ("high", "low", "mid")
    assert len(head.models) == 3
    truth = band(TEST)
    answers = [system.ask(s)["decision"] for s in TEST if s["customer"]["known"]]
    known_truth = [t for s, t in zip(TEST, truth, strict=True) if s["customer"]["known"]]
    right = sum(a.value == t for a, t in zip(answers, known_truth, strict=True))
    assert right / len(answers) >= 0.7
    assert {a.value for a in answers} <= set(head.classes)
    for ratio in (0.1, 0.5, 2.0):
        assert math.isclose(sum(head.probabilities({"ratio": ratio})), 1.0)
    assert [head.decide({"ratio": r})[0] for r in (0.05, 0.6, 2.5)] == ["low", "mid", "high"]


# -- budgets --------------------------------------------------------------------------


def test_budget_leaves_out_facts_that_cost_too_much(system: System) -> None:
    """Under 0.5 ms per decision neither the report nor the ratio may run."""
    head = system.fit("decision", TRAIN, repaid(TRAIN), budget_ms=0.5)
    assert set(head.facts) <= {"customer", "known"}
    assert head.cost_ms <= 0.5
    assert head.budget_ms == 0.5
    assert system.plan(["customer"]).steps == ("known",)


def test_budget_below_what_the_question_always_costs_is_refused(system: System) -> None:
    """The required hard check alone costs 0.1 ms: a budget of 0.05 fits nothing."""
    with pytest.raises(ValueError, match=r"fits budget_ms=0\.05") as info:
        system.fit("decision", TRAIN, repaid(TRAIN), budget_ms=0.05)
    assert str(info.value) == (
        "fit: no head of question 'decision' fits budget_ms=0.05: with no facts at all its "
        "flow costs 0.1 ms per decision (its requires and the checks the planner adds); "
        "raise the budget"
    )
    with pytest.raises(ValueError, match=r"the features report cost 200\.2 ms per decision"):
        system.fit("decision", TRAIN, repaid(TRAIN), features=["report"], budget_ms=10)
    with pytest.raises(ValueError, match="budget_ms must be a number of milliseconds"):
        system.fit("decision", TRAIN, repaid(TRAIN), budget_ms=-1)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    report_cost=st.floats(0.0, 300.0),
    ratio_cost=st.floats(0.0, 300.0),
    budget=st.floats(0.1, 400.0),
    seed=st.integers(0, 1000),
)
def test_a_head_never_costs_more_than_its_budget(
    report_cost: float, ratio_cost: float, budget: float, seed: int
) -> None:
    """The head's cost is its narrowed flow's declared cost, and stays within the budget."""
    cat = lending(Calls(), report_cost=report_cost, ratio_cost=ratio_cost)
    system = System(cat, QUESTIONS)
    train = customers(40, seed=seed)
    head = system.fit("decision", train, repaid(train), budget_ms=budget)
    assert head.cost_ms <= budget
    flow = system.plan(["customer"])
    assert math.isclose(
        head.cost_ms, sum(cat.part(p).cost or 0.0 for p in flow.steps), abs_tol=1e-6
    )


# -- the same head however it runs, after a restart, in a replay ------------------------


def test_answers_are_identical_under_ask_threads_and_aask(system: System) -> None:
    """ask, ask(workers=4) and aask give the same answers and hashes under a head."""
    system.fit("decision", TRAIN, repaid(TRAIN))

    async def aask_all() -> list[Any]:
        return [await system.aask(s) for s in TEST]

    plain = [system.ask(s) for s in TEST]
    threaded = [system.ask(s, workers=4) for s in TEST]
    awaited = anyio.run(aask_all)
    for a, b, c in zip(plain, threaded, awaited, strict=True):
        assert a.answers == b.answers == c.answers
        assert a.hash == b.hash == c.hash
    system.close()


def test_heads_survive_a_restart_from_the_store(tmp_path: Path, calls: Calls) -> None:
    """A restarted System plans and answers with the stored head; replay finds no change."""
    path = tmp_path / "decisions.db"
    first = System(lending(calls), QUESTIONS, store=path)
    head = first.fit("decision", TRAIN, repaid(TRAIN))
    before = [first.ask(s) for s in TEST]
    version = first.version
    first.close()

    again = System(lending(calls), QUESTIONS, store=path)
    assert again.heads == {"decision": head}
    assert again.version == version
    after = [again.ask(s) for s in TEST]
    assert [r.answers for r in after] == [r.answers for r in before]
    assert [r.hash for r in after] == [r.hash for r in before]
    for res in before:
        assert res.request_id is not None
        result = again.replay(res.request_id)
        assert result.same, result.differences
    again.close()


def test_replay_of_a_head_decision_needs_the_same_head(system: System, calls: Calls) -> None:
    """A record replays the same with its head; a System without it refuses the record."""
    system.fit("decision", TRAIN, repaid(TRAIN))
    res = system.ask(TEST[1])
    assert system.replay(res.record).same
    bare = System(lending(calls), QUESTIONS)
    refused = bare.replay(res.record)
    assert not refused.same
    assert refused.refused == (
        f"the record is from catalog version {system.version}, this System runs version "
        f"{bare.version}; replay it with the catalog as it was then"
    )


def test_stored_heads_of_another_catalog_version_are_left_out(tmp_path: Path) -> None:
    """A head fitted before the catalog changed is not used, with a SolviWarning."""
    path = tmp_path / "decisions.db"
    System(lending(Calls()), QUESTIONS, store=path).fit("decision", TRAIN, repaid(TRAIN))
    changed = lending(Calls())

    @changed.fn
    def extra(customer: dict[str, Any]) -> int:
        return 1

    with pytest.warns(SolviWarning, match="stored head not used: head 'decision' was fitted"):
        system = System(changed, QUESTIONS, store=path)
    assert system.heads == {}
    assert system.version == changed.version


def test_fit_keeps_the_stored_heads_of_questions_it_does_not_ask(tmp_path: Path) -> None:
    """Two Systems of one catalog share the store's heads blob without losing each other's."""
    path = tmp_path / "decisions.db"
    other = [Question("other", requires=["known"], forced=False)]
    System(lending(Calls()), other, store=path).fit("other", TRAIN, repaid(TRAIN))
    System(lending(Calls()), QUESTIONS, store=path).fit("decision", TRAIN, repaid(TRAIN))
    store = open_store(path)
    blob = store.load_blob("lending", HEADS_BLOB)
    store.close()
    assert blob is not None
    assert [h.question for h in read_checkpoint(blob).heads] == ["decision", "other"]


# -- checkpoints -------------------------------------------------------------------------


def _load_loans() -> ModuleType:
    return import_file(LOANS, "loans_under_test")


@pytest.fixture(scope="module")
def loans() -> Iterator[ModuleType]:
    """examples/loans.py, loaded from its file."""
    yield _load_loans()
    sys.modules.pop("loans_under_test", None)


FRESH = """
import importlib.util, json, sys
from solvi import Question, System
from solvi.strategy import ModelStrategist
spec = importlib.util.spec_from_file_location("loans", sys.argv[1])
loans = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loans)
strategist = ModelStrategist.load(sys.argv[2])
system = System(loans.catalog, [Question("decision", requires=["of_age"], forced=False)],
                strategist=strategist)
test, _ = loans.applications(20, seed=4)
out = [system.ask(s) for s in test]
print(json.dumps({"version": system.version, "hashes": [r.hash for r in out],
                  "steps": list(system.plan(["application"]).steps)}))
"""


def test_a_checkpoint_plans_and_answers_in_a_fresh_process(
    loans: ModuleType, tmp_path: Path
) -> None:
    """save_heads, then ModelStrategist.load in another process: same version, same records."""
    system = loans.head_system()
    train, labels = loans.applications(120, seed=3)
    system.fit("decision", train, labels)
    path = tmp_path / "heads.json"
    system.save_heads(path)
    test, _ = loans.applications(20, seed=4)
    expected = [system.ask(s).hash for s in test]
    done = subprocess.run(
        [sys.executable, "-c", FRESH, str(LOANS), str(path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    seen = json.loads(done.stdout)
    assert seen["version"] == system.version
    assert seen["hashes"] == expected
    assert seen["steps"] == list(system.plan(["application"]).steps)
    assert ModelStrategist.load(path).heads == system.heads


def test_save_heads_needs_a_head(system: System, tmp_path: Path) -> None:
    """Nothing fitted, nothing to save."""
    with pytest.raises(SolviError, match="this System has no heads to save; train one first"):
        system.save_heads(tmp_path / "heads.json")


def _checkpoint(system: System, tmp_path: Path) -> dict[str, Any]:
    system.fit("decision", TRAIN, repaid(TRAIN))
    path = tmp_path / "heads.json"
    system.save_heads(path)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _edit(data: dict[str, Any], how: str) -> bytes:
    head = data["heads"][0]
    if how == "extra field":
        data["run"] = "__import__('os').system('touch pwned')"
    elif how == "wrong format":
        data["format"] = "pickle"
    elif how == "classes of two kinds":
        head["classes"] = [False, "yes"]
    elif how == "one class":
        head["classes"] = [True]
    elif how == "too many models":
        head["models"] = head["models"] * 2
    elif how == "weight not a number":
        head["models"][0]["bias"] = "0.1"
    elif how == "unsorted coef":
        head["models"][0]["coef"] = list(reversed(head["models"][0]["coef"]))
    elif how == "other version":
        head["catalog_version"] = "0" * 16
    elif how == "missing field":
        del head["facts"]
    elif how == "two heads for one question":
        data["heads"] = [head, head]
    elif how == "negative cost":
        head["cost_ms"] = -5
    elif how == "negative budget":
        head["budget_ms"] = -5
    elif how == "accuracy past 1":
        head["accuracy"] = 7
    elif how == "no rows":
        head["rows"] = 0
    elif how == "a fact twice":
        head["facts"] = [head["facts"][0], head["facts"][0]]
    elif how == "a column of no fact":
        head["models"][0]["coef"] = [*head["models"][0]["coef"], ["zzz", 1.0]]
    elif how == "a huge label":
        head["classes"] = [1, 10**30]
    text = json.dumps(data)
    if how == "NaN":
        text = text.replace('"accuracy": ', '"accuracy": NaN, "x": ', 1)
    if how == "field twice":
        text = text.replace('"rows": ', '"rows": 1, "rows": ', 1)
    return text.encode()


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("extra field", "must have exactly the fields format, catalog, catalog_version, heads"),
        ("wrong format", "format must be 'solvi.heads/1', got 'pickle'"),
        ("classes of two kinds", "classes must all be of one kind"),
        ("one class", "classes must be two or more different labels, sorted"),
        ("too many models", "must hold one model for two classes, else one per class"),
        ("weight not a number", "bias must be a finite number, got '0.1'"),
        ("unsorted coef", "coef must be sorted by column, each column once"),
        ("other version", "head 'decision' was fitted on catalog version 0000000000000000"),
        ("missing field", "missing fields facts"),
        ("two heads for one question", "each question may have one head"),
        ("negative cost", "cost_ms must be a number of milliseconds, 0 or more, got -5"),
        ("negative budget", "budget_ms must be a number of milliseconds, 0 or more, got -5"),
        ("accuracy past 1", "accuracy must be from 0 to 1, got 7.0"),
        ("no rows", "rows must be a whole number, 1 or more, got 0"),
        ("a fact twice", "facts must name each fact once"),
        ("a column of no fact", "model column 'zzz' is no feature of its facts"),
        ("a huge label", "must be a string, a whole number of at most 64 bits or a boolean"),
        ("NaN", "not JSON text (ValueError: NaN is not a JSON number)"),
        ("field twice", "not JSON text (ValueError: field 'rows' appears twice)"),
    ],
)
def test_a_hostile_checkpoint_is_refused(
    system: System, tmp_path: Path, how: str, message: str
) -> None:
    """Every field is checked: a changed checkpoint is refused with a message that says where."""
    path = tmp_path / "hostile.json"
    path.write_bytes(_edit(_checkpoint(system, tmp_path), how))
    with pytest.raises(CheckpointError) as info:
        ModelStrategist.load(path)
    assert message in str(info.value)
    assert str(info.value).endswith("write checkpoints with system.save_heads(path)")
    assert info.value.source == str(path)


def test_a_pickle_is_never_unpickled(tmp_path: Path) -> None:
    """A pickle whose loading would run a command is refused as not JSON; nothing runs."""
    marker = tmp_path / "pwned"
    # protocol 0 pickle of os.system("touch <marker>"), written by hand: never loaded here
    payload = f"cos\nsystem\n(V touch {marker}\ntR.".encode()
    path = tmp_path / "heads.pkl"
    path.write_bytes(payload)
    with pytest.raises(CheckpointError, match="is not a heads checkpoint: not JSON text"):
        ModelStrategist.load(path)
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (16_000_001))
    with pytest.raises(CheckpointError, match="a heads checkpoint must be at most 16000000 bytes"):
        ModelStrategist.load(big)
    assert not marker.exists()


def test_a_checkpoint_of_another_catalog_or_question_is_refused(
    system: System, tmp_path: Path, calls: Calls
) -> None:
    """Heads only serve the catalog version and the ruleless questions they were fitted for."""
    system.fit("decision", TRAIN, repaid(TRAIN))
    path = tmp_path / "heads.json"
    system.save_heads(path)
    strategist = ModelStrategist.load(path)
    with pytest.raises(PlanError, match="answers a question this System does not ask"):
        System(lending(calls), ["approve"], strategist=strategist)
    changed = lending(calls)

    @changed.fn
    def extra(customer: dict[str, Any]) -> int:
        return 1

    with pytest.raises(PlanError, match=r"fitted on catalog version \w+, this catalog"):
        System(changed, QUESTIONS, strategist=strategist)
    other = Catalog("other")

    @other.fn
    def customer_id(customer: dict[str, Any]) -> int:
        return 1

    with pytest.raises(PlanError, match="fitted on catalog 'lending', not 'other'"):
        System(other, ["decision"], strategist=strategist)


def test_model_strategist_plans_on_its_base() -> None:
    """It refuses a base that cannot plan heads, and names itself after its base."""
    strategist = ModelStrategist(base=DeterministicStrategist())
    assert strategist.name == "deterministic+heads"
    assert strategist.heads == {}
    assert repr(strategist) == "<ModelStrategist deterministic+heads: no heads>"

    class Mine:
        name = "mine"

        def plan(self, *args: Any) -> Any:
            return None  # never called: the wrong kind is refused before any plan

    with pytest.raises(TypeError, match="got Mine; pass one of those as base="):
        ModelStrategist(base=Mine())  # type: ignore[arg-type]  # the wrong kind, on purpose


def test_a_head_round_trips_through_its_dict(system: System) -> None:
    """from_dict(to_dict()) is the same head, digest included."""
    head = system.fit("decision", TRAIN, repaid(TRAIN))
    again = Head.from_dict(json.loads(json.dumps(head.to_dict())))
    assert again == head
    assert again.digest == head.digest


# -- the loans example and its benchmark ------------------------------------------------


def test_the_loans_example_runs_and_stops_calling_the_bureau() -> None:
    """python examples/loans.py: the fitted head's flow skips the bureau and beats the rule."""
    done = subprocess.run(
        [sys.executable, str(LOANS)], capture_output=True, text=True, check=True, timeout=120
    )
    lines = done.stdout.splitlines()

    def line(start: str) -> str:
        return next(text for text in lines if text.startswith(start))

    def accuracy_of(start: str) -> float:
        return float(line(start).split("accuracy ")[1].split(",")[0])

    assert line("before fit, decision runs:").endswith(
        "of_age, history, bureau, debt_ratio, loan_to_income, bureau_clean"
    )
    assert "bureau" not in line("  its flow runs:")
    assert "  skipped bureau: not needed" in lines
    assert line("fitted head   ").endswith(", 0 bureau calls")
    assert accuracy_of("fitted head   ") > accuracy_of("hand-written rule")
    assert line("the fitted head saves").startswith("the fitted head saves 98% ")


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    """benchmarks/heads.py, imported by path."""
    yield from load_benchmark("heads.py")


def test_the_benchmark_compares_the_heads_side_by_side(bench: ModuleType) -> None:
    """A small run: every model scored; the head on every fact calls the bureau, the
    head within 1 ms never does."""
    result = bench.run(120, 80, seed=3)
    assert [r.model for r in result.rows] == ["rule", "all facts", "fitted", "budget 1 ms"]
    assert result.row("all facts").bureau_calls == result.row("rule").bureau_calls > 0
    assert result.row("budget 1 ms").bureau_calls == 0
    assert result.row("budget 1 ms").declared_ms <= 1.0
    assert (
        result.cost_ratio == result.row("fitted").declared_ms / result.row("all facts").declared_ms
    )
    text = bench.report(result)
    assert text.splitlines()[2].startswith("| model | facts | accuracy |")


def test_a_head_that_cannot_score_a_request_abstains(tmp_path: Path) -> None:
    """Values so far from the training rows that the model's terms overflow to
    infinities of both signs give no probability: the question abstains with guard
    "head", and the record (stored, hashed) stays JSON."""
    cat = Catalog("far")

    @cat.fn(cost=1.0)
    def f(x: float) -> float:
        return x

    @cat.fn(cost=1.0)
    def g(y: float) -> float:
        return y

    system = System(cat, [Question("d", forced=False)], store=tmp_path / "s.db")
    states = [{"x": i * 1e-3, "y": -i * 1e-3} for i in range(40)]
    system.fit("d", states, [i < 20 for i in range(40)], features=["f", "g"])
    far = system.ask({"x": 1e308, "y": 1e308})
    assert (far["d"].status, far["d"].guard, far["d"].probability) == ("abstained", "head", None)
    assert "cannot score this request" in far["d"].reason
    assert len(far.hash) == 64
    near = system.ask({"x": 0.001, "y": -0.001})
    assert near["d"].status == "decided"
    system.close()
