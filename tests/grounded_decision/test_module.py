"""Module.decide: the authors' tables, limits, verdict rules, records and evidence checks."""

from __future__ import annotations

import json
import math
import re
import threading
from typing import Any

import pytest

from grounded_decision import (
    CHECK_NAMES,
    REFS,
    ChartError,
    Decision,
    Event,
    Evidence,
    EvidenceError,
    EvidenceRules,
    Limits,
    Module,
    Observation,
    RecordError,
    Statechart,
    Verdict,
    parse,
)
from grounded_decision.examples.common import (
    conflicting_evidence,
    single_source_evidence,
    stale_evidence,
    two_path_module,
    untraced_evidence,
    well_corroborated_evidence,
)
from grounded_decision.statechart.chart import State, Transition

AUTHOR_CHARTS: list[tuple[str, str, Statechart, str, str]] = [
    (
        "odd_paging_reachable",
        "alert",
        Statechart("pager")
        .state("watch", initial=True)
        .state("paging", action="page_oncall", priority=1)
        .on("watch", "alert", "paging"),
        "abstain",
        "parity_win=False nonnegative_mean=True",
    ),
    (
        "every_state_costly",
        "fail",
        Statechart("retries")
        .state("queued", initial=True, payoff=-1.0)
        .state("retrying", action="retry", payoff=-2.0)
        .on("queued", "fail", "retrying")
        .on("retrying", "fail", "queued"),
        "abstain",
        "parity_win=True nonnegative_mean=False",
    ),
    (
        "retry_forever",
        "fail",
        Statechart("retries")
        .state("submitted", initial=True)
        .state("retrying", action="retry", priority=1)
        .state("closed", action="close")
        .on("submitted", "fail", "retrying")
        .on("retrying", "fail", "retrying"),
        "abstain",
        "parity_win=False nonnegative_mean=True",
    ),
    (
        "retry_or_close",
        "fail",
        Statechart("retries")
        .state("submitted", initial=True)
        .state("retrying", action="retry", priority=1)
        .state("closed", action="close")
        .on("submitted", "fail", "retrying")
        .on("retrying", "fail", "retrying")
        .on("retrying", "give_up", "closed"),
        "act",
        "parity_win=True nonnegative_mean=True",
    ),
    (
        "retry_customer_decides",
        "fail",
        Statechart("retries")
        .state("submitted", initial=True)
        .state("retrying", action="retry", priority=1, environment=True)
        .state("closed", action="close")
        .on("submitted", "fail", "retrying")
        .on("retrying", "fail", "retrying")
        .on("retrying", "give_up", "closed"),
        "abstain",
        "parity_win=False nonnegative_mean=True",
    ),
]


@pytest.mark.parametrize(
    ("label", "event", "chart", "verdict", "summary"),
    AUTHOR_CHARTS,
    ids=[row[0] for row in AUTHOR_CHARTS],
)
def test_authors_chart_table(
    label: str, event: str, chart: Statechart, verdict: str, summary: str
) -> None:
    """Each of the five charts gives the documented verdict and game summary."""
    module = Module(name=label, chart=chart.validate())
    record = module.decide(Event(event), well_corroborated_evidence())
    game = record.channel("game")
    assert (record.verdict.value, game.summary) == (verdict, summary)
    assert game.passed is (verdict == "act")


TEXT_POLICIES = [
    ("ping_forever", "(test(ping))*", False, "parity_win=False nonnegative_mean=True"),
    (
        "ping_then_page",
        "(test(ping))* ; test(alert) ; act(page)",
        True,
        "parity_win=True nonnegative_mean=True",
    ),
    ("one_shot", "test(suspicious) ; act(block)", True, "parity_win=True nonnegative_mean=True"),
    (
        "repeat_cycle",
        "(test(request) ; test(approved) ; act(grant))*",
        True,
        "parity_win=True nonnegative_mean=True",
    ),
]


@pytest.mark.parametrize(
    ("label", "text", "passed", "summary"), TEXT_POLICIES, ids=[row[0] for row in TEXT_POLICIES]
)
def test_authors_text_policy_table(label: str, text: str, passed: bool, summary: str) -> None:
    """Each of the four text policies gives the documented game result and summary."""
    module = Module.from_expr(label, parse(text))
    game = module.policy_channels[1]
    assert (game.name, game.passed, game.summary) == ("game", passed, summary)


def _two_state(limits: Limits) -> Module:
    chart = Statechart("k").state("a", initial=True).state("b", action="notify").on("a", "go", "b")
    return Module(name="k", chart=chart, limits=limits)


def test_game_vertex_limit_abstains_with_the_solver_message() -> None:
    """A chart above max_game_vertices still steps, records the proposal and abstains."""
    record = _two_state(Limits(max_game_vertices=1)).decide(
        Event("go"), well_corroborated_evidence()
    )
    assert record.verdict is Verdict.ABSTAIN
    assert record.reason == "2 vertices exceed limit 1"
    assert record.extras == {"state": "b"}
    assert record.proposed_action == "notify"
    assert record.channel("game").metrics["refused"] is True
    assert record.channel("game").metrics["limit"] == "max_game_vertices"


def test_mean_payoff_limit_abstains_with_the_solver_message() -> None:
    """A chart above max_karp_vertices abstains with the mean-payoff message."""
    record = _two_state(Limits(max_karp_vertices=1)).decide(
        Event("go"), well_corroborated_evidence()
    )
    assert record.reason == "2 vertices exceed the mean-payoff limit 1"
    assert record.extras == {"state": "b"}
    game = record.channel("game")
    assert (game.metrics["parity_win"], game.metrics["nonnegative_mean"]) == (False, False)
    assert game.metrics["limit"] == "max_karp_vertices"


def test_parity_depth_limit_abstains() -> None:
    """A recursion deeper than max_parity_depth makes every decision abstain."""
    chart = (
        Statechart("d")
        .state("a", initial=True)
        .state("b", action="x", priority=1)
        .on("a", "go", "b")
        .on("a", "wait", "a")
        .on("b", "back", "a")
    )
    record = Module(name="d", chart=chart, limits=Limits(max_parity_depth=1)).decide(
        Event("go"), well_corroborated_evidence()
    )
    assert record.reason == (
        "parity recursion deeper than limit 1 (Limits.max_parity_depth);"
        " raise max_parity_depth, or pass None for no cap"
    )
    assert record.channel("game").metrics["limit"] == "max_parity_depth"
    passed = Module(name="d", chart=chart).decide(Event("go"), well_corroborated_evidence())
    assert passed.channel("game").metrics["limit"] is None


def test_game_is_solved_once_not_per_event() -> None:
    """The progress result stays the one computed from the initial state as the chart moves."""
    module = two_path_module()
    first = module.decide(Event("routine"), well_corroborated_evidence()).channel("game")
    later = module.decide(Event("hold"), well_corroborated_evidence()).channel("game")
    assert first == later
    assert module.progress.best_mean == 0.0


def test_unhandled_event_leaves_the_entity_and_proposes_nothing() -> None:
    """An event the state does not handle keeps the state and abstains with the reason."""
    module = Module.from_expr(
        "access", parse("(test(request) ; test(manager_approved) ; act(grant))*")
    )
    record = module.decide(Event("manager_approved", entity="bob"), well_corroborated_evidence())
    assert record.verdict is Verdict.ABSTAIN
    assert (
        record.reason == "event 'manager_approved' is not handled in state 's0'; nothing proposed"
    )
    assert record.extras == {"state": "s0"}
    assert record.proposed_action is None


def test_entities_have_independent_states() -> None:
    """Events for one entity do not move another."""
    module = two_path_module()
    module.decide(Event("routine", entity="x"), well_corroborated_evidence())
    assert module.state_of("x") == "auto"
    assert module.state_of("y") == "intake"
    module.reset("x")
    assert module.state_of("x") == "intake"


def test_state_without_action_abstains() -> None:
    """Reaching a state that proposes nothing abstains even when every check passes."""
    module = two_path_module()
    module.decide(Event("routine"), well_corroborated_evidence())
    record = module.decide(Event("hold"), well_corroborated_evidence())
    assert record.verdict is Verdict.ABSTAIN
    assert record.reason == "state 'hold' proposes no action"
    assert all(channel.passed for channel in record.channels)


def test_act_needs_all_six_checks_and_a_proposal() -> None:
    """With healthy evidence on a passing chart the verdict is act, with six passing channels."""
    record = two_path_module().decide(Event("routine"), well_corroborated_evidence())
    assert record.verdict is Verdict.ACT
    assert record.proposed_action == "auto_approve"
    assert tuple(channel.name for channel in record.channels) == CHECK_NAMES
    assert record.reason == "all six checks passed; propose 'auto_approve'"


@pytest.mark.parametrize(
    ("evidence", "failing", "summary"),
    [
        (single_source_evidence(), "sources", "1 independent source supports the event (need 2)"),
        (
            stale_evidence(),
            "freshness",
            "oldest supporting observation is 7200 s old (limit 900 s)",
        ),
        (conflicting_evidence(), "agreement", "2 of 4 observations support the event (need 75%)"),
        (untraced_evidence(), "provenance", "no provenance from hallway_chat"),
    ],
)
def test_each_evidence_check_fails_on_its_own_flaw(
    evidence: Evidence, failing: str, summary: str
) -> None:
    """Each flawed evidence set fails exactly its check, and the reason is that summary."""
    record = two_path_module().decide(Event("routine"), evidence)
    failed = [channel.name for channel in record.channels if not channel.passed]
    assert failed == [failing]
    assert record.reason == summary
    assert record.verdict is Verdict.ABSTAIN


def test_empty_evidence_fails_all_four_evidence_checks() -> None:
    """No observations at all fails every evidence check."""
    record = two_path_module().decide(Event("routine"), Evidence(()))
    assert [c.name for c in record.channels if not c.passed] == list(CHECK_NAMES[:4])


def test_known_sources_rule() -> None:
    """With known_sources set, a source outside it fails provenance."""
    module = Module(
        name="t",
        chart=two_path_module().chart,
        rules=EvidenceRules(known_sources=frozenset({"monitoring", "service_logs"})),
    )
    record = module.decide(Event("routine"), well_corroborated_evidence())
    assert record.channel("provenance").summary == "unknown sources: on_call_note"


def test_trust_and_refs_are_honest() -> None:
    """Game passes cite the published algorithms and the absent elimination step."""
    record = two_path_module().decide(Event("routine"), well_corroborated_evidence())
    game, shape = record.channel("game"), record.channel("shape")
    assert game.trust == "algorithm"
    assert game.refs == ("zielonka-1998", "karp-1978", "no-tropical-elimination")
    assert "no-tropical-elimination" in shape.refs
    assert all(ref in REFS for channel in record.channels for ref in channel.refs)
    assert "counterexample" in REFS["no-tropical-elimination"].note
    assert {c.trust for c in record.channels[:4]} == {"operational"}
    failing = Module(name="f", chart=AUTHOR_CHARTS[0][2]).policy_channels[1]
    assert failing.trust == "operational"


def test_shape_reports_unreachable_states_and_star_height() -> None:
    """The shape check names unreachable states; text policies report star height."""
    module = Module(name="r", chart=AUTHOR_CHARTS[2][2])
    shape = module.policy_channels[0]
    assert (shape.passed, shape.summary) == (False, "unreachable from 'submitted': 'closed'")
    text = Module.from_expr("p", parse("(test(ping))* ; test(alert) ; act(page)"))
    metrics = text.policy_channels[0].metrics
    assert (metrics["star_height"], metrics["cycle_rank"]) == (1, 1)


def test_record_round_trips_through_json_exactly() -> None:
    """Decision.from_json(to_json()) equals the record, and the JSON is stable."""
    record = two_path_module().decide(Event("escalation", entity="c"), stale_evidence())
    again = Decision.from_json(record.to_json())
    assert again == record
    assert again.to_json() == record.to_json()
    assert json.loads(record.to_json())["extras"] == {"state": "review"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", "must be a JSON object"),
        ("{", "not valid JSON"),
        ('{"module": "m"}', "missing field 'channels'"),
    ],
)
def test_malformed_records_raise_record_error(text: str, message: str) -> None:
    """Reading a broken record names what is wrong."""
    with pytest.raises(RecordError, match=message):
        Decision.from_json(text)


def test_decide_rejects_non_evidence() -> None:
    """Passing something other than Evidence raises EvidenceError with the fix."""
    with pytest.raises(EvidenceError, match=r"decide needs an Evidence, got dict"):
        two_path_module().decide(Event("routine"), {})  # type: ignore[arg-type]  # the wrong type is the point


def test_observation_validates_its_fields() -> None:
    """Negative ages and empty sources are refused at construction."""
    with pytest.raises(EvidenceError, match="age_s must be a finite number of seconds >= 0"):
        Observation("m", age_s=-1.0)
    with pytest.raises(EvidenceError, match="source must be a non-empty string"):
        Observation("")


def test_evidence_dict_round_trip() -> None:
    """Evidence survives to_dict / from_dict."""
    evidence = well_corroborated_evidence()
    assert Evidence.from_dict(json.loads(json.dumps(evidence.to_dict()))) == evidence
    with pytest.raises(EvidenceError, match="needs an 'observations' list"):
        Evidence.from_dict({})


def _chain_chart(length: int) -> Statechart:
    chart = Statechart("chain").state("s0", initial=True)
    for i in range(1, length + 1):
        chart = chart.state(f"s{i}").on(f"s{i - 1}", "next", f"s{i}")
    return chart.on(f"s{length}", "next", "s0")


def test_threads_sharing_a_module_lose_no_step() -> None:
    """decide reads, steps and stores an entity's state as one: 8 threads of 500 events
    each move the entity 4,000 steps round a ring of 401 states."""
    module = Module(name="chain", chart=_chain_chart(400), limits=Limits(None, None, None))
    evidence = well_corroborated_evidence()
    seen: list[str] = []
    lock = threading.Lock()

    def send() -> None:
        for _ in range(500):
            decision = module.decide(Event("next", entity="E"), evidence)
            with lock:
                seen.append(decision.from_state)

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert module.state_of("E") == f"s{4000 % 401}"
    assert len(seen) == 4000


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: EvidenceRules(known_sources="monitoring"), EvidenceError, "got the string"),
        (lambda: EvidenceRules(known_sources=[1]), EvidenceError, "hold source names"),
        (lambda: EvidenceRules(max_age_s=float("nan")), EvidenceError, "max_age_s must be"),
        (lambda: EvidenceRules(max_age_s=float("inf")), EvidenceError, "max_age_s must be"),
        # an int past a float's range (JSON allows one), echoed short
        (lambda: EvidenceRules(max_age_s=10**400), EvidenceError, "got 100000000000000000...000"),
        (lambda: Observation("a", age_s=10**400), EvidenceError, "age_s must be a finite"),
        (
            lambda: Evidence.from_dict({"observations": [{"source": "a", "age_s": 10**400}]}),
            EvidenceError,
            "age_s must be a finite",
        ),
        (lambda: EvidenceRules(min_sources=-1), EvidenceError, "min_sources must be"),
        (lambda: EvidenceRules(min_sources="2"), EvidenceError, "min_sources must be"),
        (lambda: EvidenceRules(min_agreement=-1), EvidenceError, "min_agreement must be"),
        (lambda: Observation("a", provenance=" "), EvidenceError, "provenance must be"),
        (lambda: Observation("a", provenance=123), EvidenceError, "provenance must be"),
        (lambda: Evidence.from_dict([]), EvidenceError, "'observations' list"),
        (lambda: Evidence.from_dict({"observations": [1]}), EvidenceError, "malformed"),
        (lambda: Event("x", entity=["x"]), TypeError, "Event entity must be a string"),
        (lambda: Module("x", "notachart"), TypeError, "chart must be a Statechart"),
        (lambda: Module("x", _chain_chart(2), {}), TypeError, "limits must be a Limits"),
        (lambda: Module.from_expr("p", "test(a);act(b)"), TypeError, "parse(text)"),
        (
            lambda: two_path_module().decide("go", well_corroborated_evidence()),
            TypeError,
            "event must be an Event",
        ),
    ],
)
def test_wrong_arguments_are_refused_saying_what_to_pass(
    build: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        build()


def test_known_sources_take_any_iterable_of_names() -> None:
    assert EvidenceRules(known_sources=["a", "b"]).known_sources == frozenset({"a", "b"})


def _record_with(**changes: Any) -> str:
    data = json.loads(two_path_module().decide(Event("routine"), stale_evidence()).to_json())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_record_with(verdict="act", channels=[]), "decision record's checks are ()"),
        (_record_with(verdict="act"), "says act, but a check failed"),
        (_record_with(reason=None), "field 'reason' must be a string"),
        (_record_with(module=["x"]), "field 'module' must be a string"),
        (_record_with(extras={"state": 1}), "'extras' must map names to strings"),
    ],
)
def test_forged_or_mistyped_records_are_refused(text: str, message: str) -> None:
    """A record that contradicts itself or has a field of the wrong type does not load."""
    with pytest.raises(RecordError, match=re.escape(message)):
        Decision.from_json(text)


def test_a_summary_names_ten_sources_and_counts_the_rest() -> None:
    """100,000 untraced sources give a short reason, not a megabyte copied into records."""
    evidence = Evidence([Observation(f"s{i:06d}") for i in range(100_000)])
    record = two_path_module().decide(Event("routine"), evidence)
    summary = record.channel("provenance").summary
    assert summary.startswith("no provenance from s000000, s000001,")
    assert summary.endswith("s000009 and 99990 more")
    assert len(record.reason) < 1_000


def _ring(length: int) -> Statechart:
    """A ring built from tuples, its initial state last (so a scan for it reads all)."""

    states = tuple(State(f"s{i}", initial=i == length - 1) for i in range(length))
    moves = tuple(Transition(f"s{i}", "next", f"s{(i + 1) % length}") for i in range(length))
    return Statechart("ring", states, moves)


def test_deciding_reads_no_list_of_every_state(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decision looks its states up: it never lists the chart's states, so its work is
    the same on a chart of 20,000 states as on one of 20."""
    module = Module(name="ring", chart=_ring(20_000), limits=Limits(None, None, None))
    evidence = well_corroborated_evidence()

    def listing(self: Statechart) -> tuple[str, ...]:
        raise AssertionError("a decision listed every state")

    monkeypatch.setattr(Statechart, "states", listing)
    assert module.decide(Event("next", entity="E"), evidence).from_state == "s19999"
    assert module.decide_from(None, Event("next"), evidence).from_state == "s19999"
    assert module.decide_from("s5", Event("next"), evidence).from_state == "s5"
    assert module.state_of("E") == "s0"


def test_an_unknown_state_names_ten_states_and_counts_the_rest() -> None:
    module = Module(name="ring", chart=_ring(20_000), limits=Limits(None, None, None))
    with pytest.raises(ChartError) as caught:
        module.decide_from("nope", Event("next"), well_corroborated_evidence())
    message = str(caught.value)
    assert "whose states are s0, s1, s2, s3, s4, s5, s6, s7, s8, s9 and 19990 more;" in message
    assert len(message) < 300
    with pytest.raises(ChartError, match=r"known states: s0, s1, .*, s9 and 19990 more$"):
        module.chart.get("nope")


def _record_dict() -> dict[str, Any]:
    record = two_path_module().decide(Event("routine"), stale_evidence())
    data: dict[str, Any] = json.loads(record.to_json())
    return data


def _with_check(**changes: Any) -> str:
    """A real record whose first check report has ``changes``."""
    data = _record_dict()
    data["channels"][0].update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nests too deep to read"),
        ('{"module": ' + "9" * 5000 + "}", "an integer of 5000 digits"),
        (b'{"module": "caf\xe9"}', "not UTF-8 text: invalid continuation byte at byte 15"),
        (None, "a decision record is JSON text, got NoneType"),
        (_with_check(metrics={"x": 1}).replace('"x": 1', '"x": NaN'), "holds NaN"),
        (_with_check(metrics={"x": 1}).replace('"x": 1', '"x": -Infinity'), "holds -Infinity"),
        (_with_check(metrics={"x": 1}).replace('"x": 1', '"x": 1e999'), "the number 1e999"),
        (_with_check(metrics={"x": [1]}), "metric 'x' (str) is [1] (list)"),
        (_with_check(metrics={"x": {"y": 1}}), "metric 'x' (str) is {'y': 1} (dict)"),
        (_with_check(metrics=[1]), "'metrics' must be an object of named numbers"),
        (_with_check(summary=5), "'sources' check: 'summary' must be a string, got 5 (int)"),
        (_with_check(trust=None), "'trust' must be a string, got None (NoneType)"),
        (_with_check(refs="abc"), "'refs' must be a list of reference keys (strings)"),
        (_with_check(refs=[1]), "'refs' must be a list of reference keys (strings)"),
        (_with_check(passed="yes"), "'passed' must be true or false, got 'yes' (str)"),
        (json.dumps({**_record_dict(), "extras": {}}), "'extras' must name the state reached"),
        (
            json.dumps({**_record_dict(), "reason": 10**400}),
            "field 'reason' must be a string, got 100000000000000000...0000000000000000000 (int)",
        ),
    ],
)
def test_a_record_is_refused_with_a_record_error_naming_the_flaw(
    text: str | bytes | None, message: str
) -> None:
    """Nesting, huge ints, bad bytes, NaN, infinities and mistyped check fields are each a
    RecordError naming what is wrong, never a raw exception or a record that breaks later."""
    with pytest.raises(RecordError, match=re.escape(message)):
        Decision.from_json(text)  # type: ignore[arg-type]  # None is one of the cases


def test_a_check_report_missing_a_field_is_named() -> None:
    data = _record_dict()
    del data["channels"][2]["summary"]
    with pytest.raises(RecordError, match=r"'agreement' check is missing field 'summary'$"):
        Decision.from_json(json.dumps(data))


def test_a_python_dict_with_nan_or_a_key_that_is_not_text_is_refused() -> None:
    """from_dict applies the same checks: what it accepts, to_json writes as valid JSON."""
    for metrics in ({"x": float("nan")}, {"x": float("inf")}, {1: 2}):
        data = _record_dict()
        data["channels"][0]["metrics"] = metrics
        with pytest.raises(RecordError, match="a metric is a string name with a finite number"):
            Decision.from_dict(data)


def test_utf8_bytes_of_a_record_read_like_its_text() -> None:
    record = two_path_module().decide(Event("routine"), stale_evidence())
    assert Decision.from_json(record.to_json().encode()) == record


@pytest.mark.parametrize("items", [None, 5, "obs", {"source": "a"}])
def test_evidence_of_no_list_is_an_evidence_error(items: object) -> None:
    """Evidence(None) and the like name what to pass instead of raising a raw TypeError."""
    with pytest.raises(EvidenceError, match=r"pass Evidence\(\[Observation\(...\), ...\]\)"):
        Evidence(items)  # type: ignore[arg-type]  # the wrong type is the point


def test_the_shape_summary_names_ten_unreachable_states_and_counts_the_rest() -> None:
    """50,000 orphan states give a short summary, not a reason of 800,000 characters."""
    orphans = (State(f"orphan_{i}") for i in range(50_000))
    states = (State("start", initial=True), State("go", action="x"), *orphans)
    chart = Statechart("c", states, (Transition("start", "e", "go"),))
    module = Module("m", chart, Limits(None, None, None))
    summary = module.policy_channels[0].summary
    assert summary.startswith("unreachable from 'start': 'orphan_0', 'orphan_1',")
    assert summary.endswith("'orphan_9' and 49990 more")
    assert module.policy_channels[0].metrics["unreachable"] == 50_000
    assert len(module.decide(Event("e"), well_corroborated_evidence()).reason) < 300


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1], {"a": 1}])
def test_a_check_report_refuses_a_metric_no_record_can_write(value: object) -> None:
    """A NaN or an infinity would have `to_json` write bare NaN, which is no JSON: a
    report built with one is refused when built, naming the metric."""
    from grounded_decision.checks import Channel

    with pytest.raises(ValueError, match="check metric 'ratio' is"):
        Channel("sources", True, "fine", {"ratio": value}, "operational")  # type: ignore[dict-item]
    assert Channel("sources", True, "fine", {"ratio": 0.5}, "operational").metrics["ratio"] == 0.5
