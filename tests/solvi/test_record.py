"""Records: JSON-ready, canonical, hashed without timings; values converted or refused."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from solvi import Catalog, RecordError, System
from solvi.record import from_record_value, to_record_value


def _system(value: object, **options: Any) -> System:
    cat = Catalog("values")

    @cat.fn
    def thing(x: int) -> object:
        return value

    @cat.rule
    def answer(thing: object) -> bool:
        return True

    return System(cat, **options)


def test_record_is_json_and_its_hash_ignores_timings(claims: System) -> None:
    """The record round-trips through JSON; timings are there but not hashed."""
    res = claims.ask({"policy_id": "P1", "claim": {"amount": 3}})
    record = res.record
    assert json.loads(res.to_json()) == record
    assert record["hash"] == res.hash
    assert record["answers"]["approve"] == {
        "status": "decided",
        "value": True,
        "reason": "rule approve",
        "guard": None,
    }
    assert {"start_ms", "duration_ms"} <= set(record["steps"][0])
    again = claims.ask({"policy_id": "P1", "claim": {"amount": 3}})
    assert again.hash == res.hash


def test_hash_is_stable_across_processes() -> None:
    """A fresh interpreter computes the same hash for the same input."""
    root = Path(__file__).resolve().parent
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "from flows.claims_small import Calls, claims_catalog;"
        "from solvi import System, Question;"
        "s = System(claims_catalog(Calls()), [Question('approve', forced=False), 'fast_track']);"
        "print(s.ask({'policy_id': 'X1', 'claim': {'amount': 7}}).hash)"
    )
    outs = {
        subprocess.run(
            [sys.executable, "-c", code, str(root)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    from flows.claims_small import Calls, claims_catalog

    from solvi import Question

    here = System(claims_catalog(Calls()), [Question("approve", forced=False), "fast_track"])
    assert outs == {here.ask({"policy_id": "X1", "claim": {"amount": 7}}).hash}


def test_nan_and_infinities_are_recorded_deliberately() -> None:
    """JSON has no NaN: non-finite floats get a tagged form, distinct from strings."""
    res = _system([math.nan, math.inf, -math.inf, 1.5]).ask({"x": 1})
    assert res.record["values"]["thing"] == [
        {"$float": "nan"},
        {"$float": "inf"},
        {"$float": "-inf"},
        1.5,
    ]
    assert "NaN" not in res.to_json()


@dataclasses.dataclass
class Quote:
    """A dataclass value."""

    amount: int
    at: dt.date


def test_documented_conversions() -> None:
    """Tuples, sets, dataclasses, dates convert as documented."""
    value = {"t": (1, 2), "s": {3, 1}, "q": Quote(5, dt.date(2026, 1, 2))}
    assert to_record_value(value, "v") == {
        "t": [1, 2],
        "s": [1, 3],
        "q": {"amount": 5, "at": "2026-01-02"},
    }


def test_a_value_without_json_form_is_a_safeguard_of_its_step() -> None:
    """A part returning an object a record cannot hold fails its step, named, at ask time."""
    res = _system({"handle": object()}).ask({"x": 1})
    assert res["answer"].status == "abstained"
    assert res["answer"].guard == "error"
    (guard,) = res.safeguards
    assert (guard.kind, guard.part, guard.fact) == ("error", "thing", "thing")
    assert guard.message == (
        "returned a value with no JSON form: thing['handle'] is a builtins.object, which a "
        "decision record cannot hold; return JSON data (str, int, float, bool, None, list, "
        "dict), a dataclass or attrs instance, or convert it in the part"
    )
    assert res["answer"].reason == f"thing: thing {guard.message}"
    assert res.record["values"] == {}
    assert len(res.hash) == 64


@pytest.mark.parametrize("store", [False, True])
def test_one_behaviour_with_or_without_a_store(store: bool, tmp_path: Path) -> None:
    """With a store the same request answers the same way and is stored."""
    options = {"store": tmp_path / "s.db"} if store else {}
    system = System(_system({"handle": object()}).catalog, **options)
    res = system.ask({"x": 1})
    assert res["answer"].status == "abstained"
    if store:
        assert system.store is not None
        assert system.store.get_record(res.request_id)["hash"] == res.hash
    system.close()


def test_a_request_value_without_json_form_is_refused_at_ask() -> None:
    """A request bringing an object no record can hold is refused before anything runs."""
    with pytest.raises(RecordError) as info:
        _system(1).ask({"x": object()})
    assert info.value.fact == "x"
    assert str(info.value).startswith("request key 'x' is a builtins.object, which a decision")


def test_non_string_dict_keys_are_refused() -> None:
    """Dict keys must be strings in a record."""
    res = _system({1: "a"}).ask({"x": 1})
    assert "string keys" in res.safeguards[0].message
    with pytest.raises(RecordError, match="string keys"):
        to_record_value({1: "a"}, "thing")


def test_show_prints_answers_steps_and_skips(claims: System) -> None:
    """`show` is a readable view naming answers and skipped parts."""
    text = claims.ask({"policy_id": "X1", "claim": {}}).show()
    assert "approve     forced     false     hard check policy_in_force failed" in text
    assert "points" in text
    assert "skipped" in text


def _contains_itself() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (10**5000, "thing is an integer of 16,610 bits; a record holds integers of up to 4,000"),
        (_contains_itself(), "thing holds lists or dicts nested more than 200 levels deep"),
        (_nested(5_000), "thing holds lists or dicts nested more than 200 levels deep"),
    ],
    ids=["huge int", "contains itself", "nested 5000 deep"],
)
@pytest.mark.parametrize("journal", [False, True])
def test_a_value_too_big_or_deep_for_json_is_a_safeguard_with_or_without_a_journal(
    value: object, problem: str, journal: bool, tmp_path: Path
) -> None:
    """An int Python cannot write as text, and lists nested past any reader's limit (or
    containing themselves), fail their step like any value with no JSON form: the
    request answers, the same way whether a journal records it or not."""
    options = {"journal": tmp_path / "journal"} if journal else {}
    system = _system(value, **options)
    try:
        for res in (system.ask({"x": 1}), anyio.run(system.aask, {"x": 2})):
            assert res["answer"].status == "abstained"
            (guard,) = res.safeguards
            assert guard.message.startswith(f"returned a value with no JSON form: {problem}")
            assert len(res.hash) == 64
        if journal:
            assert system.journal_status() == []
    finally:
        system.close()


def test_a_request_value_too_big_for_json_is_refused_at_ask() -> None:
    system = _system({"handle": 1})
    with pytest.raises(RecordError, match="integer of 16,610 bits"):
        system.ask({"x": 10**5000})


def test_from_record_value_undoes_only_the_tags() -> None:
    """`$float` objects become floats again and wrapped look-alike dicts themselves, at
    any depth; every other value stays as it was recorded."""
    recorded = to_record_value(
        {"a": [math.nan, {"b": -math.inf}], "c": math.inf, "d": (1, "x")}, "fact"
    )
    back = from_record_value(recorded)
    assert math.isnan(back["a"][0])
    assert back["a"][1] == {"b": -math.inf}
    assert back["c"] == math.inf
    assert back["d"] == [1, "x"]
    for kept in ({"$float": "NaN"}, {"$float": "inf", "more": 1}, "nan", [{"$floats": 1.5}]):
        assert from_record_value(to_record_value(kept, "fact")) == kept


@pytest.mark.parametrize(
    "look_alike",
    [
        {"$float": "nan"},
        {"$float": "inf"},
        {"$object": {"$float": "-inf"}},
        {"$object": {"$object": 1}},
        {"$float": ["nan"]},
        {"k": {"$float": "nan"}},
    ],
)
def test_a_dict_that_looks_like_a_tag_keeps_its_own_record(look_alike: dict[str, Any]) -> None:
    """No two values share a record: a dict of the tag's shape is recorded wrapped, not
    as the NaN or the infinity it looks like, and reads back as itself."""
    recorded = to_record_value(look_alike, "fact")
    assert recorded not in (to_record_value(v, "fact") for v in (math.nan, math.inf, -math.inf))
    assert from_record_value(recorded) == look_alike


def test_an_awaitable_returned_by_a_plain_part_says_to_await_it() -> None:
    """A `def` part that returns `fetch(x)` of an `async def fetch` gets a message
    about the missing await, not about JSON types."""

    async def fetch() -> int:
        return 1

    call = fetch()
    try:
        with pytest.raises(RecordError, match="without awaiting it, so that call never ran"):
            to_record_value(call, "fact")
    finally:
        call.close()
