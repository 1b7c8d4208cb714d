"""A Response on its own: answers by question, the trace in flow order, the record's shape,
its two hashes, and the text view."""

from __future__ import annotations

import json

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog
from flows.echo import HOSTILE, HOSTILE_SHOWN, echo_system

from solvi import Answer, Question, Response, System
from solvi.response import RECORD_FORMAT, render

LAPSED = {"policy_id": "X1", "claim": {"amount": 100}}


@pytest.fixture
def lapsed() -> Response:
    """The claims response whose approve a lapsed policy forced to False."""
    system = System(claims_catalog(Calls()), [Question("approve", forced=False), "fast_track"])
    return system.ask(LAPSED)


def test_answers_come_in_question_order_and_by_name(lapsed: Response) -> None:
    """Iteration, indexing and repr follow the System's questions."""
    assert list(lapsed) == ["approve", "fast_track"]
    assert lapsed["approve"] == Answer(
        "forced", False, "hard check policy_in_force failed", "policy_in_force"
    )
    assert lapsed["fast_track"].decided
    assert not lapsed["approve"].decided
    assert repr(lapsed) == "<Response claims: approve=forced, fast_track=decided>"


def test_an_unknown_question_is_a_key_error_listing_the_questions(lapsed: Response) -> None:
    """response["nope"] names the questions there are."""
    with pytest.raises(KeyError) as caught:
        lapsed["nope"]
    assert (
        caught.value.args[0]
        == "no question 'nope' in this response (questions: approve, fast_track)"
    )


def test_answer_facts_are_left_out_of_equality() -> None:
    """Early exit computes fewer facts without changing the answer."""
    assert Answer("decided", True, "rule r", facts={"a": 1}) == Answer("decided", True, "rule r")


def test_the_trace_lists_calls_in_flow_order_and_what_was_skipped(lapsed: Response) -> None:
    """Steps name part, fact and outcome; skips give their reasons."""
    assert [(s.part, s.outcome) for s in lapsed.trace.steps] == [
        ("policy", "ok"),
        ("policy_in_force", "ok"),
        ("not_sanctioned", "ok"),
        ("fraud_model", "ok"),
        ("fraud_ok", "ok"),
        ("points", "ok"),
        ("fast_track", "ok"),
    ]
    assert lapsed.trace.skipped == (
        ("fraud_rules", "not needed: fraud_score came from fraud_model"),
        ("approve", "not needed: hard check policy_in_force failed"),
    )
    assert lapsed.trace.early_exit is True
    assert lapsed.values["points"] == 2
    assert "approve" not in lapsed.values


def test_the_record_has_its_fields_in_order_and_is_canonical_json(lapsed: Response) -> None:
    """record lists every field; to_json() is its canonical text and parses back to it."""
    record = lapsed.record
    assert list(record) == [
        "format", "catalog", "catalog_version", "input", "early_exit", "flow", "answers",
        "values", "steps", "skipped", "safeguards", "plan", "order", "request_id", "notes",
        "hash", "decision_hash",
    ]  # fmt: skip
    assert record["format"] == RECORD_FORMAT == "solvi.record/1"
    assert record["input"] == LAPSED
    assert json.loads(lapsed.to_json()) == record
    assert lapsed.to_json() == json.dumps(record, sort_keys=True, separators=(",", ":"))


def test_the_hash_covers_the_steps_the_decision_hash_only_the_answers() -> None:
    """Without early exit more steps run: a new hash, the same decision hash."""
    system = System(claims_catalog(Calls()), [Question("approve", forced=False), "fast_track"])
    early, whole = system.ask(LAPSED), system.ask(LAPSED, early_exit=False)
    assert early.answers == whole.answers
    assert early.hash != whole.hash
    assert early.decision_hash == whole.decision_hash
    assert early.hash == system.ask(LAPSED).hash


def test_show_without_timings_is_the_same_text_on_every_run(lapsed: Response) -> None:
    """The text view: answers, steps and skips, with the hash's first 12 digits."""
    assert lapsed.show(timings=False) == render(lapsed.record, timings=False)
    assert lapsed.show(timings=False) == (
        f"claims  hash {lapsed.hash[:12]}\n"
        "  approve     forced     false     hard check policy_in_force failed\n"
        "  fast_track  decided    true      rule fast_track\n"
        "steps\n"
        "  policy           ok\n"
        "  policy_in_force  ok\n"
        "  not_sanctioned   ok\n"
        "  fraud_model      ok\n"
        "  fraud_ok         ok\n"
        "  points           ok\n"
        "  fast_track       ok\n"
        "skipped\n"
        "  fraud_rules  not needed: fraud_score came from fraud_model\n"
        "  approve      not needed: hard check policy_in_force failed"
    )


def test_show_escapes_what_a_caller_wrote_and_the_record_keeps_it_exact() -> None:
    """Escape sequences, a carriage return, a bidi override and a line break in a
    request's text are shown escaped, each where the record holds them; the record, its
    JSON and its hash hold the text exact."""
    res = echo_system().ask({"text": HOSTILE})
    record = res.record | {"request_id": "r-" + HOSTILE}
    s = HOSTILE_SHOWN
    assert render(record, timings=False) == (
        f"echo  request r-{s}  hash {res.hash[:12]}\n"
        f"  said  decided    {s}  rule said\n"
        f"  mood  abstained  -         checked: checked raised ValueError: {s}\n"
        "steps\n"
        "  echoed   ok\n"
        f"  checked  error    ValueError: {s}\n"
        "  said     ok\n"
        "skipped\n"
        f"  mood  inputs missing: checked (checked raised ValueError: {s})"
    )
    stored = json.loads(res.to_json())
    assert stored["input"]["text"] == stored["answers"]["said"]["value"] == HOSTILE
    assert stored["steps"][1]["message"] == f"ValueError: {HOSTILE}"
    assert stored["hash"] == res.hash


def test_show_cuts_a_very_long_value_and_says_how_much() -> None:
    """A ten-megabyte error message shows as its first 1,000 characters and a count of
    the rest, not as ten megabytes of terminal."""
    res = echo_system().ask({"text": "A" * 10_000_000})
    steps = res.show(timings=False).splitlines()[4:6]
    assert steps == [
        "  echoed   ok",
        "  checked  error    ValueError: " + "A" * 988 + "... (9,999,012 more characters)",
    ]


@pytest.mark.parametrize("driver", ["ask", "aask"])
def test_the_record_keeps_the_input_as_asked_when_the_caller_reuses_its_dict(
    driver: str,
) -> None:
    """A caller that changes its dict for the next request, at the top or deep inside,
    changes neither the input nor the record of the request it already asked."""
    system = System(claims_catalog(Calls()), [Question("approve", forced=False), "fast_track"])
    state = {"policy_id": "X1", "claim": {"amount": 100, "items": [1, 2]}}
    if driver == "ask":
        response = system.ask(state)
    else:
        response = anyio.run(system.aask, state)
    asked = response.hash
    state["policy_id"] = "P9"
    state["claim"]["amount"] = 5  # type: ignore[index]
    state["claim"]["items"].append(3)  # type: ignore[index,union-attr]
    state["extra"] = True
    assert response.input["policy_id"] == "X1"
    assert "extra" not in response.input
    assert response.record["input"] == {
        "policy_id": "X1",
        "claim": {"amount": 100, "items": [1, 2]},
    }
    assert (
        response.hash
        == asked
        == system.ask(LAPSED | {"claim": {"amount": 100, "items": [1, 2]}}).hash
    )
