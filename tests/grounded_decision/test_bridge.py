"""The solvi bridge: the progress check and the whole decision as hard checks, replayable."""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision import ChartError, Event, EvidenceError, Limits, Module, Statechart
from grounded_decision.bridge import DecisionParts, decision_check, progress_check
from grounded_decision.examples.common import (
    conflicting_evidence,
    single_source_evidence,
    stale_evidence,
    two_path_module,
    untraced_evidence,
    well_corroborated_evidence,
)
from grounded_decision.examples.incident_response import incident_module
from solvi import Catalog, CatalogError, Question, Response, System

STUCK = (
    Statechart("pager")
    .state("watch", initial=True)
    .state("paging", action="page_oncall", priority=1)
    .on("watch", "alert", "paging")
)


def _claims(module: Module) -> System:
    cat = Catalog("claims")
    assert progress_check(cat, module, reads="claim", name="policy_ok") == "policy_ok"

    @cat.fn
    def amount(claim: dict[str, float]) -> float:
        return claim["amount"]

    @cat.rule
    def approve(amount: float, policy_ok: bool) -> bool:
        return amount < 1000.0 and policy_ok

    return System(cat, [Question("approve", forced=False)])


def _ops(module: Module) -> System:
    """A catalog gated by the module's decision, with the new state as a question of its own."""
    cat = Catalog("ops")
    parts = decision_check(cat, module, event="event", evidence="evidence", state="ticket_state")
    assert parts == DecisionParts(
        check=f"{module.name}_acts", new_state=f"{module.name}_next_state"
    )

    cat.rule(provides="proceed")(_rule_reading(parts.check))
    return System(
        cat, [Question("proceed", forced=False), Question("next", uses=[parts.new_state])]
    )


def _rule_reading(fact: str) -> Any:
    """A rule that answers with the one fact it reads (named after the module, so built here)."""

    def proceed(acts: bool) -> bool:
        return acts

    proceed.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by solvi
        [inspect.Parameter(fact, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    )
    return proceed


def _request(state: object, event: object, evidence: object) -> dict[str, Any]:
    """A request: the entity's state, the event and the evidence, as objects or JSON."""
    return {"ticket_state": state, "event": event, "evidence": evidence}


def _next(res: Response, module: Module) -> str:
    value = res.values[f"{module.name}_next_state"]
    assert isinstance(value, str)
    return value


# -- the progress check ---------------------------------------------------------------------


def test_stuck_chart_forces_the_question_with_the_game_summary() -> None:
    """A chart whose game fails forces the answer, and its reason is the game report's."""
    module = Module(name="pager", chart=STUCK)
    res = _claims(module).ask({"claim": {"amount": 10.0}})
    assert (res["approve"].status, res["approve"].value) == ("forced", False)
    assert res["approve"].reason == f"hard check policy_ok failed: {module.progress.summary}"
    assert res.values["policy_ok"] is False


def test_a_refused_game_is_the_checks_error_not_a_failure() -> None:
    """A cap of Limits refusing the game says nothing about the chart: the question
    abstains naming the cap, rather than being forced as if the chart were stuck."""
    module = Module(name="pager", chart=two_path_module().chart, limits=Limits(max_game_vertices=1))
    assert module.progress.refused
    res = _claims(module).ask({"claim": {"amount": 10.0}})
    assert (res["approve"].status, res["approve"].value) == ("abstained", None)
    assert "raised ProgressRefused" in res["approve"].reason
    assert "limits=Limits(max_game_vertices=N), or None for no cap" in res["approve"].reason
    assert "policy_ok" not in res.values


def test_passing_chart_lets_the_rule_decide() -> None:
    """A chart that can keep going passes the hard check and the rule decides."""
    res = _claims(two_path_module()).ask({"claim": {"amount": 10.0}})
    assert res["approve"].status == "decided"
    assert res["approve"].value is True


def test_default_part_name_uses_the_module_name() -> None:
    """Without name=, the part is called <module>_keeps_going."""
    cat = Catalog("c")
    assert progress_check(cat, two_path_module(), reads="x") == "two_path_keeps_going"
    assert "two_path_keeps_going" in cat


# -- the decision check ---------------------------------------------------------------------


def test_decision_check_acts_or_forces() -> None:
    """The whole decision as a hard check: act passes, abstain forces the question."""
    system = _ops(two_path_module())
    res = system.ask(_request(None, Event("routine", "a"), well_corroborated_evidence()))
    assert (res["proceed"].status, res["proceed"].value) == ("decided", True)
    assert res.values["two_path_acts"] is True
    res = system.ask(_request(None, Event("escalation", "b"), single_source_evidence()))
    assert (res["proceed"].status, res["proceed"].value) == ("forced", False)
    assert res.values["two_path_acts"] is False


def test_names_can_be_chosen() -> None:
    """name= and new_state= name the two parts; both read the three given facts."""
    cat = Catalog("c")
    parts = decision_check(
        cat,
        two_path_module(),
        event="ev",
        evidence="obs",
        state="st",
        name="gate",
        new_state="after",
    )
    assert parts == DecisionParts(check="gate", new_state="after")
    assert cat.part("gate").hard
    assert cat.part("gate").inputs == cat.part("after").inputs == ("st", "ev", "obs")
    assert cat.part("after").kind == "fn"


@pytest.mark.parametrize(
    ("evidence", "reason"),
    [
        (stale_evidence, "oldest supporting observation is 7200 s old (limit 900 s)"),
        (single_source_evidence, "1 independent source supports the event (need 2)"),
    ],
)
def test_the_answer_gives_the_module_reason(evidence: Any, reason: str) -> None:
    """An abstaining decision forces the answer with the module's own reason, word for word."""
    module = two_path_module()
    event = Event("routine", entity="T-1")
    res = _ops(module).ask(_request(None, event, evidence()))
    decided = module.decide_from(None, event, evidence())
    assert decided.reason == reason
    assert res["proceed"].reason == f"hard check two_path_acts failed: {reason}"
    assert (res["proceed"].status, res["proceed"].guard) == ("forced", "two_path_acts")


def test_the_new_state_comes_out_when_the_decision_abstains() -> None:
    """The state question is not governed by the check: an abstaining move still moves."""
    module = two_path_module()
    res = _ops(module).ask(_request(None, Event("routine", "T-1"), stale_evidence()))
    assert res["proceed"].status == "forced"
    assert (res["next"].status, res["next"].value) == ("decided", {"two_path_next_state": "auto"})


def test_asks_leave_the_module_untouched() -> None:
    """However many requests move an entity, the module's own memory stays where it was."""
    module = two_path_module()
    system = _ops(module)
    good = well_corroborated_evidence()
    first = system.ask(_request(None, Event("routine", "T-1"), good))
    system.ask(_request(_next(first, module), Event("hold", "T-1"), good))
    system.ask(_request(None, Event("escalation", "T-2"), stale_evidence()))
    assert (module.state_of("T-1"), module.state_of("T-2")) == ("intake", "intake")


def test_replay_is_the_same_after_the_entity_moved_on() -> None:
    """A stored decision replays as the same though later requests moved the entity."""
    module = two_path_module()
    system = _ops(module)
    good = well_corroborated_evidence()
    first = system.ask(_request(None, Event("routine", "T-1"), good))
    second = system.ask(_request(_next(first, module), Event("hold", "T-1"), good))
    assert (_next(first, module), _next(second, module)) == ("auto", "hold")
    for res in (first, second, first):
        result = system.replay(res.record)
        assert (result.same, result.differences, result.refused) == (True, (), None)
    assert module.state_of("T-1") == "intake"


def test_json_forms_give_the_same_record() -> None:
    """An event and evidence given as JSON (as a record keeps them) decide as the objects do."""
    module = two_path_module()
    system = _ops(module)
    event, evidence = Event("escalation", "T-9"), conflicting_evidence()
    as_objects = system.ask(_request(None, event, evidence))
    as_json = system.ask(
        _request(None, {"name": "escalation", "entity": "T-9"}, evidence.to_dict())
    )
    assert as_json.hash == as_objects.hash
    assert as_json.record["answers"] == as_objects.record["answers"]


def test_a_bare_event_name_is_the_default_entity() -> None:
    """A string event is the event of that name for the default entity."""
    system = _ops(two_path_module())
    res = system.ask(_request("intake", "escalation", untraced_evidence()))
    assert res.values["two_path_next_state"] == "review"
    assert (
        res["proceed"].reason == "hard check two_path_acts failed: no provenance from hallway_chat"
    )


def test_ask_threads_and_aask_give_the_same_records() -> None:
    """ask, ask(workers=4) and aask give records of one hash, for act and for abstain."""
    system = _ops(two_path_module())
    for state in (
        _request(None, Event("routine", "T-1"), well_corroborated_evidence()),
        _request("intake", Event("escalation", "T-2"), stale_evidence()),
        _request("auto", Event("hold", "T-3"), single_source_evidence()),
    ):
        plain = system.ask(state)
        threaded = system.ask(state, workers=4)

        async def main(state: dict[str, Any] = state) -> Response:
            return await system.aask(state)

        awaited = anyio.run(main)
        assert plain.hash == threaded.hash == awaited.hash
        assert plain.record["answers"] == threaded.record["answers"] == awaited.record["answers"]


def test_new_state_follows_decide_for_a_run_of_events() -> None:
    """The new-state fact threaded through requests equals Module.decide's state, event by event."""
    bridged, remembered = incident_module(), incident_module()
    system = _ops(bridged)
    good = well_corroborated_evidence()
    state: str | None = None
    steps = [("alert", good), ("still_bad", stale_evidence()), ("ack", good), ("clear", good)]
    steps += [("bogus", good), ("alert", single_source_evidence())]
    seen = []
    for name, evidence in steps:
        event = Event(name, entity="INC-7")
        res = system.ask(_request(state, event, evidence))
        decision = remembered.decide(event, evidence)
        state = _next(res, bridged)
        assert state == decision.extras["state"] == remembered.state_of("INC-7")
        seen.append(state)
    assert seen == ["mitigating", "paging", "mitigating", "resolved", "resolved", "mitigating"]


# -- the decision from a given state --------------------------------------------------------


def test_decide_from_is_pure() -> None:
    """decide_from gives the state reached without reading or moving the module's memory."""
    module = two_path_module()
    module.decide(Event("routine", "x"), well_corroborated_evidence())
    decision = module.decide_from("intake", Event("escalation", "x"), well_corroborated_evidence())
    assert (decision.from_state, decision.extras["state"]) == ("intake", "review")
    assert module.state_of("x") == "auto"
    assert module.decide_from(None, Event("routine"), stale_evidence()).from_state == "intake"


def test_decide_from_rejects_a_state_the_chart_lacks() -> None:
    """A state name the chart does not have is refused, naming the chart and its states."""
    with pytest.raises(ChartError) as caught:
        two_path_module().decide_from("closed", Event("routine"), well_corroborated_evidence())
    assert str(caught.value) == (
        "module 'two_path': 'closed' is not a state of chart 'two_path', whose states are"
        " intake, auto, review, hold; pass one of them, or None for the initial state 'intake'"
    )
    assert (caught.value.chart, caught.value.name) == ("two_path", "closed")


def test_decide_from_rejects_a_state_that_is_not_a_name() -> None:
    """A state that is not a string says what arrived."""
    with pytest.raises(ChartError, match=r"^module 'two_path': 3 \(int\) is not a state of"):
        two_path_module().decide_from(3, Event("routine"), well_corroborated_evidence())  # type: ignore[arg-type]  # the wrong type is the point


def test_a_bad_state_in_a_request_abstains_with_the_error() -> None:
    """In a catalog, a state the chart lacks is an error safeguard and the answer abstains."""
    system = _ops(two_path_module())
    res = system.ask(_request("closed", Event("routine"), well_corroborated_evidence()))
    assert res["proceed"].status == "abstained"
    messages = {(s.part, s.kind, s.message) for s in res.safeguards}
    expected = (
        "ChartError: module 'two_path': 'closed' is not a state of chart 'two_path', whose"
        " states are intake, auto, review, hold; pass one of them, or None for the initial"
        " state 'intake'"
    )
    assert ("two_path_acts", "error", expected) in messages
    assert ("two_path_next_state", "error", expected) in messages


def test_malformed_facts_are_errors_naming_the_fact() -> None:
    """An event, evidence or state of the wrong kind names the fact and what it must hold."""
    cat = Catalog("c")
    decision_check(cat, two_path_module(), event="ev", evidence="obs", state="st")
    check = cat.part("two_path_acts").func
    good = well_corroborated_evidence()
    with pytest.raises(TypeError, match=r"^fact 'ev' must hold an Event, an event name or"):
        check(None, 7, good)
    with pytest.raises(EvidenceError, match=r"^fact 'obs' must hold an Evidence or its to_dict"):
        check(None, Event("routine"), [1])
    with pytest.raises(TypeError) as caught:
        check(["intake"], Event("routine"), good)
    assert str(caught.value) == (
        "fact 'st' must hold a state name of chart 'two_path' or None, got list: ['intake']"
    )


def test_mistaken_names_leave_the_catalog_unchanged() -> None:
    """A name taken, a repeated fact or two equal part names raise before anything is declared."""
    cat = Catalog("c")
    module = two_path_module()

    @cat.fn
    def two_path_next_state(x: int) -> int:
        return x

    with pytest.raises(CatalogError) as caught:
        decision_check(cat, module, event="e", evidence="v", state="s")
    assert str(caught.value) == (
        "decision_check for module 'two_path': catalog 'c' already has a part"
        " 'two_path_next_state'; pass another new_state="
    )
    with pytest.raises(CatalogError, match=r"must name three different facts$"):
        decision_check(cat, module, event="e", evidence="e", state="s", new_state="n")
    with pytest.raises(CatalogError, match=r"name= and new_state= are both 'n'"):
        decision_check(cat, module, event="e", evidence="v", state="s", name="n", new_state="n")
    with pytest.raises(CatalogError, match=r"name='a-b' is not an identifier"):
        decision_check(cat, module, event="e", evidence="v", state="s", name="a-b")
    assert [p.name for p in cat] == ["two_path_next_state"]


# -- threading the state through requests matches decide in sequence -----------------------

EVIDENCE = [
    well_corroborated_evidence(),
    stale_evidence(),
    single_source_evidence(),
    conflicting_evidence(),
]
INCIDENT = incident_module()
INCIDENT_SYSTEM = _ops(INCIDENT)
INCIDENT_EVENTS = ["alert", "still_bad", "ack", "clear", "noise"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(INCIDENT_EVENTS), st.integers(0, len(EVIDENCE) - 1)),
        max_size=8,
    )
)
def test_threaded_state_matches_decide_in_sequence(steps: list[tuple[str, int]]) -> None:
    """Feeding each new state into the next request gives decide's states and verdicts."""
    remembered = incident_module()
    state: str | None = None
    for name, which in steps:
        event = Event(name, entity="INC-1")
        res = INCIDENT_SYSTEM.ask(_request(state, event, EVIDENCE[which]))
        decision = remembered.decide(event, EVIDENCE[which])
        state = _next(res, INCIDENT)
        assert state == decision.extras["state"]
        acted = decision.verdict.value == "act"
        assert res["proceed"].status == ("decided" if acted else "forced")
        if not acted:
            assert (
                res["proceed"].reason
                == f"hard check incident_response_acts failed: {decision.reason}"
            )
    assert INCIDENT.state_of("INC-1") == "watch"
