"""Composition: Cascade, Vote and Route, and batches with ask_many and aask_many."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from solvi import (
    Cascade,
    Catalog,
    Composite,
    Failed,
    Question,
    Route,
    RouteError,
    System,
    Vote,
    aask_many,
    ask_many,
)
from solvi.compose import Askable
from solvi.record import record_hash
from solvi.response import Response


def _system(
    name: str,
    value: Any,
    *,
    abstain_for: frozenset[str] = frozenset(),
    calls: list[str] | None = None,
    forced: Any = None,
    question: str = "approve",
) -> System:
    """A System whose one question is `value` (or `value(customer)`), or abstains.

    A hard check fails for the customers in `abstain_for`; the question then
    abstains, or takes `forced` when one is given.
    """
    cat = Catalog(name)

    @cat.check(hard=True)
    def covered(customer: str) -> bool:
        if calls is not None:
            calls.append(name)
        return customer not in abstain_for

    def rule(covered: bool, customer: str) -> Any:
        return value(customer) if callable(value) else value

    rule.__name__ = question
    cat.rule(rule)
    q = Question(question) if forced is None else Question(question, forced=forced)
    return System(cat, [q])


def _async_system(name: str, value: Any, counter: dict[str, int], *, delay: float) -> System:
    """A System with one async part that counts how many requests are in flight."""
    cat = Catalog(name)
    lock = threading.Lock()

    @cat.fn
    async def lookup(customer: str) -> str:
        with lock:
            counter["now"] += 1
            counter["max"] = max(counter["max"], counter["now"])
        try:
            await anyio.sleep(delay)
        finally:
            with lock:
                counter["now"] -= 1
        return customer

    @cat.rule
    def approve(lookup: str) -> Any:
        return value(lookup) if callable(value) else value

    return System(cat)


def _blocking_system(counter: dict[str, int], delays: dict[str, float]) -> System:
    """A System whose one sync part sleeps per customer and counts the requests in flight."""
    cat = Catalog("blocking")
    lock = threading.Lock()

    @cat.fn
    def lookup(customer: str) -> str:
        with lock:
            counter["now"] += 1
            counter["max"] = max(counter["max"], counter["now"])
        time.sleep(delays.get(customer, 0.0))
        with lock:
            counter["now"] -= 1
        return customer

    @cat.rule
    def approve(lookup: str) -> str:
        return lookup.upper()

    return System(cat)


# -- Cascade --------------------------------------------------------------------


def test_cascade_keeps_the_first_answer_and_asks_no_further() -> None:
    """When the first system answers everything, the next one is never asked."""
    calls: list[str] = []
    cascade = Cascade(
        [
            _system("primary", True, abstain_for=frozenset({"c-2"}), calls=calls),
            _system("fallback", "manual", calls=calls),
        ]
    )
    res = cascade.ask({"customer": "c-1"})
    assert res["approve"].value is True
    assert res["approve"].reason == "primary: rule approve"
    assert [name for name, _ in res.responses] == ["primary"]
    assert calls == ["primary"]


def test_cascade_falls_back_on_abstain() -> None:
    """A question the first system abstains on is answered by the next."""
    cascade = Cascade(
        [
            _system("primary", True, abstain_for=frozenset({"c-2"})),
            _system("fallback", "manual"),
        ]
    )
    res = cascade.ask({"customer": "c-2"})
    assert res["approve"].status == "decided"
    assert res["approve"].value == "manual"
    assert res["approve"].reason == "fallback: rule approve"
    assert [name for name, _ in res.responses] == ["primary", "fallback"]
    assert res.responses[0][1].answers["approve"].status == "abstained"


def test_cascade_skips_a_system_without_the_open_question() -> None:
    """A later system is asked only if it has a question still abstained on."""
    calls: list[str] = []
    cascade = Cascade(
        [
            _system("primary", True, abstain_for=frozenset({"c-2"}), calls=calls),
            _system("other", 1, calls=calls, question="limit"),
            _system("fallback", "manual", calls=calls),
        ]
    )
    res = cascade.ask({"customer": "c-2"})
    assert calls == ["primary", "fallback"]
    assert list(res.answers) == ["approve"]
    assert res["approve"].value == "manual"


def test_cascade_abstains_with_every_reason_when_all_abstain() -> None:
    """A question every system abstains on lists each system's reason in turn."""
    cascade = Cascade(
        [
            _system("primary", True, abstain_for=frozenset({"c-2"})),
            _system("fallback", "manual", abstain_for=frozenset({"c-2"})),
        ]
    )
    answer = cascade.ask({"customer": "c-2"})["approve"]
    assert answer.status == "abstained"
    assert answer.guard == "covered"
    assert answer.reason == (
        "primary: hard check covered failed; the question has no forced value; "
        "fallback: hard check covered failed; the question has no forced value"
    )


def test_cascade_does_not_fall_back_on_a_forced_answer() -> None:
    """A forced answer is an answer: only abstentions go to the next system."""
    calls: list[str] = []
    cascade = Cascade(
        [
            _system("primary", True, abstain_for=frozenset({"c-2"}), forced=False, calls=calls),
            _system("fallback", "manual", calls=calls),
        ]
    )
    answer = cascade.ask({"customer": "c-2"})["approve"]
    assert (answer.status, answer.value) == ("forced", False)
    assert calls == ["primary"]


def test_cascade_rejects_an_empty_list_and_non_systems() -> None:
    """An empty list, a mapping, or a member without the System interface is refused."""
    with pytest.raises(ValueError, match=r"at least one system.*Cascade\(\[a, b\]\)"):
        Cascade([])
    with pytest.raises(TypeError, match="takes a list of systems"):
        Cascade({"a": _system("a", 1)})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"member 1 is a str, which lacks name, questions"):
        Cascade([_system("a", 1), "b"])  # type: ignore[list-item]


def test_composite_rejects_a_state_that_is_not_a_mapping() -> None:
    """A non-mapping state raises TypeError, as System.ask does."""
    with pytest.raises(TypeError, match="must be a mapping"):
        Cascade([_system("a", 1)]).ask(["customer"])  # type: ignore[arg-type]


# -- Vote -----------------------------------------------------------------------


def test_vote_majority_wins_by_default() -> None:
    """Two of three votes for a value reach the default quorum of a majority."""
    vote = Vote([_system("a", True), _system("b", True), _system("c", False)])
    assert vote.quorum == 2
    answer = vote.ask({"customer": "c-1"})["approve"]
    assert (answer.status, answer.value) == ("decided", True)
    assert answer.reason == "vote 2 of 3 for True (quorum 2): a, b"


def test_vote_below_quorum_abstains_naming_the_split() -> None:
    """With no value at the quorum the question abstains, guard "vote", the split in the reason."""
    vote = Vote(
        [_system("a", True), _system("b", True), _system("c", False)],
        quorum=3,
    )
    answer = vote.ask({"customer": "c-1"})["approve"]
    assert (answer.status, answer.guard) == ("abstained", "vote")
    assert answer.reason == "no value reached quorum 3 (True from a, b; False from c)"


def test_vote_tie_has_no_winner() -> None:
    """Two values with as many votes, both at the quorum, leave no winner."""
    vote = Vote([_system("a", "yes"), _system("b", "no")], quorum=1)
    answer = vote.ask({"customer": "c-1"})["approve"]
    assert answer.status == "abstained"
    assert answer.reason == "tie at 1 votes ('yes' from a; 'no' from b)"


def test_vote_ignores_abstentions_and_compares_values_by_equality() -> None:
    """Abstaining members cast no vote; equal unhashable values count together."""
    vote = Vote(
        [
            _system("a", {"limit": 5}),
            _system("b", {"limit": 5}),
            _system("c", True, abstain_for=frozenset({"c-1"})),
        ],
        quorum=2,
    )
    answer = vote.ask({"customer": "c-1"})["approve"]
    assert answer.value == {"limit": 5}
    assert answer.reason == "vote 2 of 3 for {'limit': 5} (quorum 2): a, b"
    lone = Vote([_system("a", 1), _system("c", 2, abstain_for=frozenset({"c-1"}))], quorum=2)
    assert lone.ask({"customer": "c-1"})["approve"].reason == (
        "no value reached quorum 2 (1 from a; abstained: c)"
    )


def test_vote_of_forced_answers_is_forced() -> None:
    """A winner no voter decided (all forced) keeps status forced and the check as guard."""
    vote = Vote(
        [
            _system("a", True, abstain_for=frozenset({"c-1"}), forced=False),
            _system("b", True, abstain_for=frozenset({"c-1"}), forced=False),
        ]
    )
    answer = vote.ask({"customer": "c-1"})["approve"]
    assert (answer.status, answer.value, answer.guard) == ("forced", False, "covered")


@pytest.mark.parametrize("quorum", [0, 4, True, 1.5, "2"])
def test_vote_rejects_a_quorum_out_of_range(quorum: Any) -> None:
    """A quorum that is not a whole number from 1 to the number of systems is refused."""
    systems = [_system("a", 1), _system("b", 1), _system("c", 1)]
    with pytest.raises(ValueError, match=r"whole number from 1 to 3.*majority \(2 of 3\)"):
        Vote(systems, quorum=quorum)


def test_vote_rejects_a_system_listed_twice() -> None:
    """One system listed twice would vote twice, so it is refused."""
    a = _system("a", 1)
    with pytest.raises(ValueError, match="lists system 'a' twice"):
        Vote([a, a])


def test_members_with_one_name_get_distinct_labels() -> None:
    """Distinct members that share a name are told apart as name#1, name#2."""
    vote = Vote([_system("rules", True), _system("rules", True)], quorum=2)
    assert vote.name == "vote(rules#1, rules#2)"
    assert vote.ask({"customer": "c-1"})["approve"].reason == (
        "vote 2 of 2 for True (quorum 2): rules#1, rules#2"
    )


def test_a_label_made_for_a_shared_name_is_never_another_members_name() -> None:
    """Members named a, a and a#1: the two a's become a#2 and a#3, not a#1 twice."""
    vote = Vote([_system("a", True), _system("a", True), _system("a#1", True)])
    assert vote.name == "vote(a#2, a#3, a#1)"


# -- Route ----------------------------------------------------------------------


def _route(default: Askable | None = None) -> Route:
    """A Route on "region": eu and us systems that answer with their region."""
    return Route("region", {"eu": _system("eu", "EU"), "us": _system("us", "US")}, default)


def test_route_picks_the_system_by_key() -> None:
    """The value of state[key] picks the system, and the reason says which and why."""
    res = _route().ask({"customer": "c-1", "region": "us"})
    assert res["approve"].value == "US"
    assert res["approve"].reason == "us (by region='us'): rule approve"
    assert [name for name, _ in res.responses] == ["us"]
    assert res.detail == {"key": "region", "value": "us", "default": False}


def test_route_unknown_value_without_default_raises_naming_key_value_and_known() -> None:
    """An unknown value without a default raises RouteError naming key, value and known values."""
    with pytest.raises(RouteError) as caught:
        _route().ask({"customer": "c-1", "region": "apac"})
    assert str(caught.value) == (
        "Route 'route(region)' has no system for region='apac' (known values: 'eu', 'us'); "
        "add a route for it or pass default="
    )
    assert (caught.value.key, caught.value.value, caught.value.known) == (
        "region",
        "apac",
        ("eu", "us"),
    )
    assert isinstance(caught.value, LookupError)


def test_route_unknown_value_goes_to_the_default() -> None:
    """An unknown value (even an unhashable one) goes to the default system."""
    route = _route(default=_system("manual", "review"))
    res = route.ask({"customer": "c-1", "region": "apac"})
    assert res["approve"].reason == "manual (by default for region='apac'): rule approve"
    assert res.detail["default"] is True
    assert route.ask({"customer": "c-1", "region": ["eu"]})["approve"].value == "review"


def test_a_route_matches_numbers_of_its_own_kind_only() -> None:
    """True and 1.0 equal 1 to a dict, but a request saying True means no route 1: it
    goes to the default."""
    route = Route(
        "tier", {1: _system("one", "ONE"), 2.5: _system("half", "HALF")}, _system("other", "X")
    )
    assert route.ask({"customer": "c", "tier": 1})["approve"].value == "ONE"
    assert route.ask({"customer": "c", "tier": True})["approve"].value == "X"
    assert route.ask({"customer": "c", "tier": 1.0})["approve"].value == "X"
    assert route.ask({"customer": "c", "tier": 2.5})["approve"].value == "HALF"


def test_route_without_the_key_raises() -> None:
    """A state without the routing key raises RouteError, default or not."""
    with pytest.raises(RouteError, match=r"has no 'region' \(keys: customer\); add it"):
        _route(default=_system("manual", "review")).ask({"customer": "c-1"})


def test_route_rejects_bad_tables() -> None:
    """Routes that are not a mapping, empty routes or a bad key are refused with the fix."""
    with pytest.raises(TypeError, match=r"mapping of values of state\['region'\] to systems"):
        Route("region", [_system("eu", 1)])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has no routes; give at least one"):
        Route("region", {})
    with pytest.raises(TypeError, match="non-empty string"):
        Route("", {"eu": _system("eu", 1)})
    with pytest.raises(TypeError, match="Route 'region' default is a int"):
        Route("region", {"eu": _system("eu", 1)}, default=3)  # type: ignore[arg-type]


# -- composition ----------------------------------------------------------------


def _cascade_of_routes(calls: list[str] | None = None) -> Cascade:
    """Per region a strict system, falling back per region to a lenient one."""
    strict = Route(
        "region",
        {
            "eu": _system("eu-strict", "EU", abstain_for=frozenset({"c-2"}), calls=calls),
            "us": _system("us-strict", "US", abstain_for=frozenset({"c-2"}), calls=calls),
        },
        name="strict",
    )
    lenient = Route(
        "region",
        {"eu": _system("eu-lenient", "eu?", calls=calls)},
        default=_system("anywhere", "?", calls=calls),
        name="lenient",
    )
    return Cascade([strict, lenient])


def test_cascade_of_routes_composes() -> None:
    """A Cascade of Routes routes each level and falls back only on abstain."""
    cascade = _cascade_of_routes()
    assert cascade.name == "cascade(strict, lenient)"
    assert [q.name for q in cascade.questions] == ["approve"]
    first = cascade.ask({"customer": "c-1", "region": "eu"})
    assert first["approve"].reason == "strict: eu-strict (by region='eu'): rule approve"
    fallback = cascade.ask({"customer": "c-2", "region": "us"})
    assert fallback["approve"].value == "?"
    assert fallback["approve"].reason == (
        "lenient: anywhere (by default for region='us'): rule approve"
    )
    inner = fallback.responses[1][1]
    assert isinstance(inner, Composite)
    assert inner.kind == "route"
    assert [m["system"] for m in fallback.record["members"]] == ["strict", "lenient"]


def test_composite_record_and_hash_are_canonical() -> None:
    """The hash covers answers and member hashes only, and is the same on every run."""
    cascade = _cascade_of_routes()
    state = {"customer": "c-2", "region": "eu"}
    res = cascade.ask(state)
    record = res.record
    assert record["format"] == "solvi.composite/1"
    assert record["hash"] == res.hash == cascade.ask(state).hash
    body = {k: v for k, v in record.items() if k != "hash"}
    body["members"] = [{k: v for k, v in m.items() if k != "record"} for m in record["members"]]
    assert record_hash(body) == res.hash
    assert [m["hash"] for m in record["members"]] == [r.hash for _, r in res.responses]
    assert res.to_json().startswith('{"answers":')
    assert res.hash != cascade.ask({"customer": "c-1", "region": "eu"}).hash


def test_composite_reports_an_unknown_question() -> None:
    """Asking a result for a question it lacks names the questions it has."""
    res = Cascade([_system("a", 1)]).ask({"customer": "c-1"})
    assert list(res) == ["approve"]
    with pytest.raises(KeyError, match=r"no question 'refund'.*questions: approve"):
        res["refund"]


BUILDERS: dict[str, Callable[[], Askable]] = {
    "cascade": lambda: Cascade(
        [_system("primary", True, abstain_for=frozenset({"c-2"})), _system("fallback", "m")]
    ),
    "vote": lambda: Vote([_system("a", True), _system("b", True), _system("c", False)]),
    "route": _route,
    "cascade of routes": _cascade_of_routes,
}


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", list(BUILDERS))
async def test_ask_and_aask_give_equal_answers_and_hashes(kind: str) -> None:
    """ask and aask on a composite give the same answers and the same hash."""
    system = BUILDERS[kind]()
    for state in ({"customer": "c-1", "region": "eu"}, {"customer": "c-2", "region": "us"}):
        plain = system.ask(state)
        awaited = await system.aask(state)
        assert awaited.answers == plain.answers
        assert awaited.hash == plain.hash


def test_vote_aask_runs_on_trio_too() -> None:
    """Vote.aask uses only anyio, so it runs on trio with the same hash."""
    vote = BUILDERS["vote"]()
    state = {"customer": "c-1"}

    async def main() -> str:
        return (await vote.aask(state)).hash

    assert anyio.run(main, backend="trio") == vote.ask(state).hash


@pytest.mark.asyncio
async def test_vote_aask_asks_members_concurrently() -> None:
    """Under aask every member of a Vote is in flight at once."""
    counter = {"now": 0, "max": 0}
    vote = Vote([_async_system(n, True, counter, delay=0.05) for n in ("a", "b", "c")])
    res = await vote.aask({"customer": "c-1"})
    assert res["approve"].value is True
    assert counter["max"] == 3


@pytest.mark.asyncio
async def test_vote_aask_raises_a_member_error_itself() -> None:
    """A member's error under aask is raised as itself, as under ask, not as a group."""
    vote = Vote([_route(), _system("a", "EU")])
    with pytest.raises(RouteError, match="region='apac'"):
        await vote.aask({"customer": "c-1", "region": "apac"})


# -- batches --------------------------------------------------------------------


def test_ask_many_keeps_input_order() -> None:
    """Results come back in input order although later items finish first."""
    counter = {"now": 0, "max": 0}
    delays = {"a": 0.06, "b": 0.03, "c": 0.0}
    system = _blocking_system(counter, delays)
    results = ask_many(system, [{"customer": c} for c in "abc"], workers=3)
    assert [r.answers["approve"].value for r in results if not isinstance(r, Failed)] == [
        "A",
        "B",
        "C",
    ]


def test_ask_many_bounds_the_threads_in_flight() -> None:
    """At most `workers` requests run at once."""
    counter = {"now": 0, "max": 0}
    system = _blocking_system(counter, {str(i): 0.02 for i in range(8)})
    results = ask_many(system, [{"customer": str(i)} for i in range(8)], workers=2)
    assert len(results) == 8
    assert counter["max"] == 2


@pytest.mark.asyncio
async def test_aask_many_keeps_input_order_and_bounds_concurrency() -> None:
    """aask_many returns results in input order with at most `limit` requests in flight."""
    counter = {"now": 0, "max": 0}
    system = _async_system("slow", str.upper, counter, delay=0.02)
    states = [{"customer": f"c{i}"} for i in range(10)]
    results = await aask_many(system, states, limit=3)
    assert counter["max"] == 3
    assert [r.answers["approve"].value for r in results if not isinstance(r, Failed)] == [
        f"C{i}" for i in range(10)
    ]


@pytest.mark.asyncio
async def test_batches_record_a_failing_item_and_go_on() -> None:
    """A state that raises becomes a Failed item at its index; the others are answered."""
    route = _route()
    states: list[Any] = [
        {"customer": "c-1", "region": "eu"},
        "not a state",
        {"customer": "c-1", "region": "apac"},
        {"customer": "c-1", "region": "us"},
    ]
    for results in (ask_many(route, states, workers=2), await aask_many(route, states)):
        assert [type(r).__name__ for r in results] == ["Composite", "Failed", "Failed", "Composite"]
        bad, unknown = results[1], results[2]
        assert isinstance(bad, Failed)
        assert isinstance(unknown, Failed)
        assert (bad.index, bad.kind) == (1, "TypeError")
        assert (unknown.index, unknown.kind) == (2, "RouteError")
        assert "region='apac'" in unknown.message
        assert isinstance(unknown.error, RouteError)


def test_ask_many_on_a_system_gives_its_responses() -> None:
    """ask_many on a plain System returns its Responses, equal to ask's."""
    system = _system("a", True)
    results = ask_many(system, [{"customer": "c-1"}], workers=1)
    assert isinstance(results[0], Response)
    assert results[0].hash == system.ask({"customer": "c-1"}).hash


def test_ask_many_reports_progress_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """progress=True writes a done/total line to stderr, rewritten in place."""
    ask_many(_system("a", True), [{"customer": c} for c in ("c-1", "c-2", "c-3")], progress=True)
    captured = capsys.readouterr()
    assert captured.err == "\r0/3\r1/3\r2/3\r3/3\n"
    assert captured.out == ""


@pytest.mark.asyncio
async def test_aask_many_reports_progress_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    """aask_many's progress line counts finished requests up to the total."""
    await aask_many(_system("a", True), [{"customer": "c-1"}] * 2, progress=True)
    assert capsys.readouterr().err == "\r0/2\r1/2\r2/2\n"
    await aask_many(_system("a", True), [{"customer": "c-1"}])
    assert capsys.readouterr().err == ""


@pytest.mark.asyncio
async def test_batches_reject_bad_limits_and_a_single_state() -> None:
    """A non-positive workers or limit, or one mapping for the batch, is refused with the fix."""
    system = _system("a", True)
    with pytest.raises(ValueError, match="workers must be a positive whole number"):
        ask_many(system, [], workers=0)
    with pytest.raises(ValueError, match="limit must be a positive whole number"):
        await aask_many(system, [], limit=0)
    with pytest.raises(TypeError, match=r"iterable of states.*call system.ask\(state\)"):
        ask_many(system, {"customer": "c-1"})  # type: ignore[dict-item]
    assert ask_many(system, []) == []
    assert await aask_many(system, iter([])) == []


class _Raising:
    """A member that raises its own error, after `delay` seconds under aask."""

    questions: tuple[Any, ...] = ()

    def __init__(self, name: str, delay: float) -> None:
        self.name = name
        self.delay = delay

    def ask(self, state: Any) -> Response:
        raise LookupError(self.name)

    async def aask(self, state: Any) -> Response:
        await anyio.sleep(self.delay)
        raise LookupError(self.name)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_vote_aask_raises_what_ask_raises_whichever_fails_first(backend: str) -> None:
    """Two members raise, the second sooner: aask raises the first member's error, as
    ask does, never an exception group or the one that came first in time."""
    vote = Vote([_Raising("first", 0.05), _Raising("second", 0.0)])
    with pytest.raises(LookupError, match="first"):
        vote.ask({"customer": "c"})

    async def main() -> None:
        await vote.aask({"customer": "c"})

    with pytest.raises(LookupError, match="first"):
        anyio.run(main, backend=backend)
