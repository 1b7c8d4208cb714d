"""How the deterministic strategist plans a flow."""

from __future__ import annotations

import keyword
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import solvi.flow as flow_module
from solvi import Catalog, PlanError, Question, SolviWarning, System

KEYS = {"policy_id", "claim"}


def test_steps_put_hard_checks_and_their_inputs_first_and_rules_last(claims: System) -> None:
    """Hard checks and what they read come first, rules last, producers in declared order."""
    flow = claims.plan(KEYS)
    assert flow.steps == (
        "policy",
        "policy_in_force",
        "not_sanctioned",
        "fraud_model",
        "fraud_rules",
        "fraud_ok",
        "points",
        "approve",
        "fast_track",
    )
    assert dict(flow.skipped) == {}


def test_targets_of_a_rule_are_its_arguments_and_hard_checks_govern_only_their_flow(
    claims: System,
) -> None:
    """`fast_track` reads points only, so no hard check governs it."""
    flow = claims.plan(KEYS)
    approve, fast_track = flow.questions
    assert approve.targets == ("policy_in_force", "not_sanctioned", "fraud_ok", "points")
    assert approve.governing == ("policy_in_force", "not_sanctioned")
    assert fast_track.targets == ("points",)
    assert fast_track.governing == ()
    assert set(fast_track.facts) == {"fast_track", "points", "fraud_score", "fraud_ok"}
    assert dict(flow.narrowed) == {"approve": True, "fast_track": True}


def test_check_of_what_was_computed_joins_a_flow_that_computed_its_input(claims: System) -> None:
    """`fraud_ok` reads the computed fraud_score, so it joins fast_track's flow too."""
    assert "fraud_ok" in claims.plan(KEYS).question("fast_track").facts


def test_a_check_that_reads_only_request_keys_is_not_added() -> None:
    """A check of inputs alone is no check of what was computed."""
    cat = Catalog("c")

    @cat.check(hard=True)
    def adult(age: int) -> bool:
        return age >= 18

    @cat.fn
    def score(age: int) -> int:
        return age

    @cat.rule
    def ok(score: int) -> bool:
        return score > 0

    with pytest.warns(SolviWarning, match="hard check 'adult' governs no question"):
        system = System(cat)
    flow = system.plan({"age"})
    assert flow.steps == ("score", "ok")
    assert flow.skipped == {"adult": "not needed"}


def test_three_kinds_of_skip_reason() -> None:
    """Parts are skipped as not needed, for missing inputs, or for being on a cycle."""
    cat = Catalog("c")

    @cat.fn
    def a(b: int) -> int:
        return b

    @cat.fn
    def b(a: int) -> int:
        return a

    @cat.fn
    def lonely(k: int) -> int:
        return k

    @cat.fn
    def needs_x(x: int) -> int:
        return x

    @cat.fn
    def base(k: int) -> int:
        return k

    @cat.rule
    def answer(base: int) -> int:
        return base

    flow = System(cat).plan({"k"})
    assert flow.steps == ("base", "answer")
    assert dict(flow.skipped) == {
        "a": "on a cycle: a -> b -> a",
        "b": "on a cycle: b -> a -> b",
        "lonely": "not needed",
        "needs_x": "inputs missing: x",
    }


def test_question_needing_a_fact_on_a_cycle_abstains_naming_the_cycle() -> None:
    """A fact on a cycle is never computed; the question that needs it says why."""
    cat = Catalog("c")

    @cat.fn
    def a(b: int, k: int) -> int:
        return b + k

    @cat.fn
    def b(a: int) -> int:
        return a

    @cat.rule
    def answer(a: int) -> int:
        return a

    system = System(cat)
    res = system.ask({"k": 1})
    assert res["answer"].status == "abstained"
    assert res["answer"].guard == "cycle"
    assert res["answer"].reason == "cannot compute a: on a cycle: a -> b -> a"
    assert res.trace.steps == ()


def test_a_given_key_breaks_a_cycle() -> None:
    """When the request brings a fact on a cycle, nothing needs computing around it."""
    cat = Catalog("c")

    @cat.fn
    def a(b: int) -> int:
        return b + 1

    @cat.fn
    def b(a: int) -> int:
        return a * 2

    @cat.rule
    def answer(a: int) -> int:
        return a

    res = System(cat).ask({"b": 3})
    assert res["answer"].value == 4
    assert res.flow.skipped == {"b": "not needed"}


def test_missing_input_blocks_the_question_with_the_missing_key() -> None:
    """A question whose rule cannot get its inputs abstains and names them."""
    cat = Catalog("c")

    @cat.fn
    def score(income: int) -> int:
        return income

    @cat.rule
    def approve(score: int) -> bool:
        return score > 1

    res = System(cat).ask({"name": "x"})
    answer = res["approve"]
    assert (answer.status, answer.guard) == ("abstained", "inputs")
    assert answer.reason == "cannot compute score: inputs missing: income"


def test_deterministic_strategist_needs_inputs_of_every_producer() -> None:
    """With one producer's inputs missing, the fact is not computable at all."""
    cat = Catalog("c")

    @cat.fn(provides="score")
    def from_bureau(ssn: str) -> int:
        return 1

    @cat.fn(provides="score")
    def from_history(history: list[int]) -> int:
        return 2

    @cat.rule
    def approve(score: int) -> bool:
        return score > 0

    flow = System(cat).plan({"history"})
    assert flow.steps == ()
    assert flow.skipped["from_bureau"] == "inputs missing: ssn"
    assert flow.skipped["from_history"] == "inputs missing: ssn"
    assert flow.question("approve").blocked == "cannot compute score: inputs missing: ssn"


def test_requires_adds_parts_and_uses_reports_facts() -> None:
    """`requires` pulls parts into a question's flow; `uses` makes a ruleless question."""
    cat = Catalog("c")

    @cat.fn
    def audit_note(claim: str) -> str:
        return "noted " + claim

    @cat.fn
    def amount(claim: str) -> int:
        return len(claim)

    @cat.rule
    def approve(amount: int) -> bool:
        return amount < 10

    system = System(
        cat,
        [Question("approve", requires=["audit_note"]), Question("summary", uses=["amount"])],
    )
    res = system.ask({"claim": "abc"})
    assert res.flow.steps == ("audit_note", "amount", "approve")
    assert res.values["audit_note"] == "noted abc"
    assert res["summary"].value == {"amount": 3}
    assert res["summary"].status == "decided"


def test_question_without_rule_or_uses_reports_everything_and_is_not_narrowed() -> None:
    """Without a rule or `uses`, a question reports every computable fact."""
    cat = Catalog("c")

    @cat.fn
    def double(x: int) -> int:
        return 2 * x

    @cat.fn
    def needs_y(y: int) -> int:
        return y

    @cat.check
    def positive(double: int) -> bool:
        return double > 0

    res = System(cat, ["everything"]).ask({"x": 2})
    assert res.flow.narrowed == {"everything": False}
    assert res["everything"].value == {"double": 4, "positive": True}


@pytest.mark.parametrize(
    ("question", "message"),
    [
        (Question("q", rule="aprove"), r"rule 'aprove'.*did you mean 'approve'"),
        (Question("q", uses=["fraud_scor"]), r"uses 'fraud_scor'.*did you mean 'fraud_score'"),
        (Question("q", requires=["pointz"]), r"requires part 'pointz'.*did you mean 'points'"),
        (Question("q", rule="points"), r"it is a fn part; declare it with @catalog.rule"),
    ],
)
def test_unknown_names_raise_plan_error_with_closest_names(
    claims: System, question: Question, message: str
) -> None:
    """Mistakes in questions are found when the System is built."""
    with pytest.raises(PlanError, match=message):
        System(claims.catalog, [question])


def test_flows_are_cached_per_key_set(claims: System) -> None:
    """A request never re-plans: the same key set gives the same flow object."""
    first = claims.ask({"policy_id": "P1", "claim": {}}).flow
    again = claims.ask({"claim": {"amount": 1}, "policy_id": "P2"}).flow
    assert first is again
    assert claims.plan(["claim", "policy_id"]) is first
    assert claims.plan(["claim"]) is not first


def test_plan_is_topological_and_mermaid_shows_every_step(claims: System) -> None:
    """Each step comes after the producers of what it reads; Mermaid draws all steps."""
    flow = claims.plan(KEYS)
    seen: set[str] = set(KEYS)
    for node in flow.nodes:
        assert all(i in seen for i in node.inputs)
        seen.add(node.fact)
    text = flow.to_mermaid()
    assert text.startswith("flowchart LR")
    assert 'part_policy_in_force{{"policy_in_force"}}' in text
    assert 'part_fraud_model -->|"fraud_score"| part_fraud_ok' in text
    for step in flow.steps:
        assert f"    part_{step}" in text


def test_a_misspelled_bare_question_name_is_caught() -> None:
    """A question named like a rule but not exactly is a PlanError, not a silent report."""
    cat = Catalog("c")

    @cat.rule
    def approve(amount: int) -> bool:
        return amount < 100

    with pytest.raises(
        PlanError, match=r"'aprove' has no rule of that name.*did you mean 'approve'"
    ):
        System(cat, ["aprove"])
    assert System(cat, ["summary"]).ask({"amount": 5})["summary"].status == "decided"


NODE = re.compile(r'^    (key|part)_(\w+)(\[/"\w+"/\]|\{\{"\w+"\}\}|\(\["\w+"\]\)|\["\w+"\])$')
EDGE = re.compile(r'^    (key|part)_\w+ --> part_\w+$|^    part_\w+ -->\|"\w+"\| part_\w+$')


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(
        st.sampled_from(["end", "graph", "subgraph", "style", "click", "class", "x", "flowchart"])
        | st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True),
        min_size=2,
        max_size=5,
        unique=True,
    )
)
def test_every_mermaid_line_is_one_node_or_one_edge(names: list[str]) -> None:
    """Whatever the names (Mermaid keywords too), each line is one prefixed node or edge."""
    names = [n for n in names if n.isidentifier() and not keyword.iskeyword(n)]
    if len(names) < 2:
        return
    *facts, last = names
    source = ["cat = Catalog('m')"]
    for fact in facts:
        source += ["@cat.fn", f"def {fact}(key_in):", "    return 1"]
    source += ["@cat.rule", f"def {last}({', '.join(facts)}):", "    return 1"]
    namespace: dict[str, object] = {"Catalog": Catalog}
    exec("\n".join(source), namespace)  # names are checked identifiers
    cat = namespace["cat"]
    assert isinstance(cat, Catalog)
    text = System(cat).plan({"key_in"}).to_mermaid()
    lines = text.splitlines()
    assert lines[0] == "flowchart LR"
    nodes = [line for line in lines[1:] if NODE.match(line)]
    edges = [line for line in lines[1:] if EDGE.match(line)]
    assert len(nodes) + len(edges) == len(lines) - 1
    assert len(nodes) == len(names) + 1


@given(st.text())
def test_a_mermaid_label_never_holds_a_quote(text: str) -> None:
    """Escaped, any text stays inside its quoted label."""
    label = flow_module._label(text)
    assert '"' not in label
    assert "\n" not in label
