"""Every public error, raised by the code that raises it: its message names the place and
the fix, it keeps the structured field, and a builtin `except` catches it too."""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from flows.claims_small import Calls, claims_catalog

import solvi
from solvi import (
    Catalog,
    CatalogError,
    CheckpointError,
    PlanError,
    RecordError,
    RequestError,
    Route,
    RouteError,
    SolviError,
    System,
)
from solvi.errors import (
    DuplicateRequestError,
    MissingRecordError,
    StoreError,
    _closest,
    _described,
    _finite,
    _message,
)
from solvi.order import read_checkpoint
from solvi.record import to_record_value
from solvi.storage import open_store


def _raised(call: Callable[[], Any], kind: type[Exception]) -> Any:
    with pytest.raises(kind) as caught:
        call()
    return caught.value


def test_every_public_error_is_a_solvi_error() -> None:
    """One base class: `except SolviError` catches each error solvi exports."""
    exported = [getattr(solvi, n) for n in solvi.__all__ if n.endswith(("Error", "Refused"))]
    assert exported
    assert all(issubclass(e, SolviError) for e in exported)


def test_a_catalog_error_names_the_part_and_the_fix() -> None:
    """A generator declared as an extract: raised at the decorator, naming it."""
    cat = Catalog("x")

    def declare() -> None:
        @cat.extract
        def e(text: str) -> Any:
            yield {}

    error = _raised(declare, ValueError)
    assert isinstance(error, CatalogError)
    assert str(error) == (
        "extract 'e' is a generator (it yields); an extract returns one dict of facts, so use "
        "return instead of yield"
    )
    assert error.part == "e"


def test_a_plan_error_names_the_question_and_the_closest_rule() -> None:
    """A question with a typo: raised when the System is built, with the likely name."""
    error = _raised(lambda: System(claims_catalog(Calls()), ["aprove"]), LookupError)
    assert isinstance(error, PlanError)
    assert str(error) == (
        "question 'aprove' has no rule of that name (did you mean 'approve'?); name the rule "
        "(Question('aprove', rule=...)), or pass uses= to report facts"
    )
    assert error.name == "aprove"


def test_a_request_error_names_the_key_and_the_option_that_allows_it() -> None:
    """A request setting a hard check is refused before anything runs."""
    system = System(claims_catalog(Calls()), ["approve"])
    state = {"policy_id": "P", "claim": {}, "policy_in_force": True}
    error = _raised(lambda: system.ask(state), ValueError)
    assert isinstance(error, RequestError)
    assert str(error) == (
        "request key 'policy_in_force' sets the hard check 'policy_in_force', which would "
        "bypass that check; leave it out of the request (solvi computes it), or allow it with "
        "System(..., overrides=['policy_in_force']) where the caller is trusted to set it"
    )
    assert error.key == "policy_in_force"


def test_a_checkpoint_error_names_its_source_and_how_checkpoints_are_written() -> None:
    """Text that is not a checkpoint is refused naming where it came from."""
    error = _raised(lambda: read_checkpoint(b"[1", source="heads.json"), ValueError)
    assert isinstance(error, CheckpointError)
    assert str(error) == (
        "heads.json is not a heads checkpoint: not JSON text (JSONDecodeError: Expecting ',' "
        "delimiter: line 1 column 3 (char 2)); write checkpoints with system.save_heads(path)"
    )
    assert error.source == "heads.json"


def test_a_record_error_names_the_fact_and_the_conversion_to_make() -> None:
    """A value a record cannot hold names the fact and the path inside it."""
    error = _raised(lambda: to_record_value({"a": {1: 2}}, "policy"), TypeError)
    assert isinstance(error, RecordError)
    assert str(error) == (
        "policy['a'] has a dict key 1 of type int; records need string keys, so convert the "
        "keys (e.g. str(key)) in the part"
    )
    assert error.fact == "policy"


def test_store_errors_name_the_request_id_and_what_to_do(tmp_path: Path) -> None:
    """Missing and duplicate ids, each a StoreError and a builtin lookup or value error."""
    store = open_store(tmp_path / "s.db")
    missing = _raised(lambda: store.get_record("nope"), LookupError)
    assert isinstance(missing, MissingRecordError)
    assert str(missing) == (
        "no response is stored under request id 'nope'; list the stored ones with iter_records()"
    )
    record = System(claims_catalog(Calls()), ["approve"]).ask({"policy_id": "P", "claim": {}})
    store.save_response(record.record, request_id="r1")
    duplicate = _raised(lambda: store.save_response(record.record, request_id="r1"), ValueError)
    assert isinstance(duplicate, DuplicateRequestError)
    assert (duplicate.request_id, missing.request_id) == ("r1", "nope")
    assert str(duplicate) == (
        "a response is already stored under request id 'r1'; request ids are unique, so pass a "
        "new one"
    )
    store.close()


def test_a_store_error_names_the_file_and_what_it_holds(tmp_path: Path) -> None:
    """Opening, read only, a database that is not a store says what it is instead."""
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    error = _raised(lambda: open_store(path, read_only=True), StoreError)
    assert str(error).endswith(
        "is a SQLite database without solvi's tables (its tables are t), so it is not a solvi "
        "store; give the store a System wrote (System(store=...))"
    )
    assert str(path) in str(error)


def test_route_errors_name_the_key_the_value_and_the_routes() -> None:
    """A state without the key, or with a value no route has."""
    route = Route("plan", {"a": System(claims_catalog(Calls()), ["approve"])})
    absent = _raised(lambda: route.ask({"x": 1}), LookupError)
    assert isinstance(absent, RouteError)
    assert str(absent) == (
        "Route 'route(plan)' routes on state['plan'], but the state has no 'plan' (keys: x); add it"
    )
    unknown = _raised(lambda: route.ask({"plan": "b"}), RouteError)
    assert str(unknown) == (
        "Route 'route(plan)' has no system for plan='b' (known values: 'a'); add a route for it "
        "or pass default="
    )
    assert (unknown.key, unknown.value, unknown.known) == ("plan", "b", ("a",))


def test_a_solvi_error_names_the_call_and_the_setting_it_needs() -> None:
    """journal_status() on a System without a journal says how to give it one."""
    system = System(claims_catalog(Calls()), ["approve"])
    with pytest.raises(
        SolviError,
        match=re.escape(
            "journal_status() needs a journal: System(..., journal='decisions.journal')"
        ),
    ):
        system.journal_status()


@pytest.mark.parametrize(
    ("name", "known", "hint"),
    [
        ("aprove", ["approve", "fast_track"], " (did you mean 'approve'?)"),
        ("fast", ["fast_track", "fast_lane", "slow"], " (did you mean 'fast_lane'?)"),
        ("zebra", ["approve", "fast_track"], ""),
        ("colour", ["color", "colours"], " (did you mean 'colours' or 'color'?)"),
    ],
)
def test_closest_names_only_likely_matches(name: str, known: list[str], hint: str) -> None:
    """The hint lists up to three names close enough to be a typo, best first."""
    assert _closest(name, known) == hint


@pytest.mark.parametrize(
    ("value", "finite"),
    [
        (0, True),
        (-(10**300), True),
        (1.5e308, True),
        (10**400, False),
        (-(10**400), False),
        (math.nan, False),
        (math.inf, False),
        (True, False),
        ("1", False),
        (None, False),
    ],
)
def test_finite_says_no_where_math_isfinite_raises(value: object, finite: bool) -> None:
    """Integers past float range are not finite numbers, and asking does not overflow."""
    assert _finite(value) is finite


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_a_part_error_whose_message_raises_is_still_recorded(tmp_path: Path) -> None:
    """An exception whose `__str__` raises is recorded like any other, by every way of
    asking, and the journal closes the request."""
    cat = Catalog("odd")

    @cat.extract
    def amounts(text: str) -> dict[str, int]:
        return {"amount": len(text)}

    @cat.fn
    def score(amount: int) -> int:
        raise _Unprintable

    @cat.rule
    def approve(score: int) -> bool:
        return score > 1

    system = System(cat, journal=tmp_path / "journal.db")
    reason = "score raised _Unprintable: <no message: its __str__ raised>"
    for res in (
        system.ask({"amount": 3}),
        anyio.run(system.aask, {"amount": 3}),
        system.ask_text("abc"),
        anyio.run(system.aask_text, "abc"),
    ):
        assert res["approve"].status == "abstained"
        assert reason in res["approve"].reason, res["approve"].reason
    assert system.journal_status() == []
    system.close()


def test_described_and_message_survive_an_unprintable_exception() -> None:
    """The text a Cause or a warning shows, with or without a working `__str__`."""
    assert _described(ValueError("bad amount")) == "ValueError: bad amount"
    assert _message(_Unprintable()) == "<no message: its __str__ raised>"
