"""Policy automata: the compiler against a direct matcher, and the statecharts it yields."""

from __future__ import annotations

import tracemalloc

import pytest
from gd_strategies import ACTIONS, derive, is_empty, matches, policies, symbols
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from grounded_decision.errors import PolicyCompileError
from grounded_decision.policy import (
    Expr,
    Symbol,
    automata,
    compile_policy,
    cycle_rank,
    dfa_to_statechart,
    parse,
)


@settings(max_examples=200, deadline=None)
@given(policies(), st.lists(st.lists(symbols(), max_size=8), min_size=1, max_size=10))
def test_dfa_matches_direct_matcher_on_random_words(expr: Expr, words: list[list[Symbol]]) -> None:
    """The minimal automaton accepts exactly the words the derivative matcher accepts."""
    dfa = compile_policy(expr)
    for word in words:
        assert dfa.accepts(word) == matches(expr, word)


@settings(max_examples=200, deadline=None)
@given(policies())
def test_walking_closures_afresh_gives_the_same_automaton(expr: Expr) -> None:
    """With no room to keep closure sets, every one is walked again when needed: the
    automaton comes out the same, state for state."""
    kept = compile_policy(expr)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(automata, "_CLOSURE_ROOM", 0)
        walked = compile_policy(expr)
    assert walked == kept


@settings(max_examples=100, deadline=None)
@given(policies())
def test_dfa_is_minimal_and_has_no_dead_state(expr: Expr) -> None:
    """No two automaton states accept the same continuations, and every state can accept."""
    dfa = compile_policy(expr)
    for state in range(len(dfa)):
        reach = {state}
        stack = [state]
        while stack:
            for nxt in dfa.delta[stack.pop()].values():
                if nxt not in reach:
                    reach.add(nxt)
                    stack.append(nxt)
        assert reach & dfa.accepting
    # Moore's invariant: refining once more splits nothing.
    block = {s: s in dfa.accepting for s in range(len(dfa))}
    keys = {
        (block[s], tuple(sorted((sym, block[t]) for sym, t in dfa.delta[s].items())))
        for s in range(len(dfa))
    }
    assert len(dfa) <= 2 or len(keys) >= 2


def _reference_run(expr: Expr, events: list[str]) -> list[tuple[bool, str | None]]:
    """Run the chart semantics on the expression itself: (handled, proposed action) per event."""
    r: object = expr

    def proposal(term: object) -> str | None:
        acts = [a for a in ACTIONS if not is_empty(derive(term, ("act", a)))]
        return acts[0] if acts else None

    out: list[tuple[bool, str | None]] = []
    for event in events:
        action = proposal(r)
        moved = None
        if action is not None:
            after = derive(derive(r, ("act", action)), ("test", event))
            moved = None if is_empty(after) else after
        if moved is None:
            direct = derive(r, ("test", event))
            moved = None if is_empty(direct) else direct
        if moved is not None:
            r = moved
        out.append((moved is not None, proposal(r)))
    return out


@settings(max_examples=200, deadline=None)
@given(policies(guarded_acts=True), st.lists(st.sampled_from(("a", "b", "c", "zz")), max_size=10))
def test_policy_chart_runs_like_the_expression(expr: Expr, events: list[str]) -> None:
    """Stepping the compiled chart proposes what the expression itself says, event by event."""
    try:
        chart = dfa_to_statechart(compile_policy(expr), "p")
    except PolicyCompileError:
        assume(False)
        raise
    state = chart.initial
    seen: list[tuple[bool, str | None]] = []
    for event in events:
        handled = chart.transition(state, event) is not None
        state = chart.step(state, event)
        seen.append((handled, chart.action_of(state)))
    assert seen == _reference_run(expr, events)


def test_text_policy_priorities() -> None:
    """States that propose or are final get priority 2; waiting states get 1; payoffs are 0."""
    chart = dfa_to_statechart(compile_policy(parse("(test(ping))* ; test(alert) ; act(page)")), "p")
    assert chart.states() == ("s0", "s1")
    assert [chart.priority_of(s) for s in chart.states()] == [1, 2]
    assert chart.action_of("s1") == "page"
    assert chart.step("s0", "ping") == "s0"
    assert all(chart.payoff_of(s) == 0.0 for s in chart.states())


def test_repeat_cycle_returns_to_the_request_state() -> None:
    """After proposing grant, the next request continues the cycle."""
    text = "(test(request) ; test(approved) ; act(grant))*"
    chart = dfa_to_statechart(compile_policy(parse(text)), "p")
    assert chart.step("s2", "request") == "s1"
    assert chart.transition("s0", "approved") is None


def test_after_proposing_an_event_continues_past_the_action() -> None:
    """An event both before and after act(x) continues from after the action."""
    text = "test(a) ; act(x) ; test(b) ; act(y) | test(a) ; test(b) ; test(c) ; act(z)"
    chart = dfa_to_statechart(compile_policy(parse(text)), "p")
    state = chart.step(chart.initial, "a")
    assert chart.action_of(state) == "x"
    state = chart.step(state, "b")
    assert chart.action_of(state) == "y"
    assert chart.transition(state, "c") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("test(a) ; (act(x) | act(y))", r"one state can propose both 'x' and 'y'"),
        ("test(a) ; act(x) ; act(y)", r"an act\(\.\.\.\) directly follows act\(x\)"),
        ("act(page)", r"act\(page\) can be the first step.*an act must follow a test"),
        ("act(page) ; test(ack)", r"act\(page\) can be the first step"),
        ("test(a) | act(x) ; test(b)", r"act\(x\) can be the first step"),
        ("(act(x) ; test(b))*", r"act\(x\) can be the first step"),
    ],
)
def test_ambiguous_policies_are_rejected(text: str, message: str) -> None:
    """A policy that would propose two actions at once cannot become a chart."""
    with pytest.raises(PolicyCompileError, match=message):
        dfa_to_statechart(compile_policy(parse(text)), "p")


@pytest.mark.parametrize(
    ("graph", "rank"),
    [
        ({"a": ["b"], "b": []}, 0),
        ({"a": ["a"]}, 1),
        ({"a": ["b"], "b": ["a"]}, 1),
        ({"a": ["b", "c"], "b": ["a", "c"], "c": ["a", "b"]}, 2),
        ({"a": ["a", "b"], "b": ["b"]}, 1),
    ],
)
def test_cycle_rank_of_small_graphs(graph: dict[str, list[str]], rank: int) -> None:
    """Cycle rank is 0 when acyclic, 1 for a simple loop, 2 for a complete triangle."""
    assert cycle_rank(graph) == rank


def test_cycle_rank_gives_up_beyond_its_budget() -> None:
    """A dense graph with a tiny budget reports None instead of running long."""
    names = [f"v{i}" for i in range(8)]
    dense = {v: [w for w in names if w != v] for v in names}
    assert cycle_rank(dense, budget=5) is None
    assert cycle_rank(dense) == 7


def test_cycle_rank_of_a_deep_graph_gives_up_instead_of_overflowing() -> None:
    """A search as deep as a thousand-vertex graph reports None or its rank, never a crash."""
    n = 1000
    ring = {f"v{i}": [f"v{(i + 1) % n}"] for i in range(n)}
    both_ways = {f"v{i}": [f"v{(i + 1) % n}", f"v{(i - 1) % n}"] for i in range(n)}
    assert cycle_rank(ring) == 1
    assert cycle_rank(both_ways) is None
    assert cycle_rank(both_ways, budget=10**9, max_work=10**5) is None


def test_cycle_rank_budget_of_zero_ranks_nothing() -> None:
    """The budget counts every vertex set ranked, the whole graph included."""
    assert cycle_rank({"a": ["a"]}, budget=0) is None
    assert cycle_rank({"a": ["a"]}, budget=1) is None  # the empty graph left is a second
    assert cycle_rank({"a": ["a"]}, budget=2) == 1


def test_a_long_policy_compiles_in_linear_steps() -> None:
    """Three thousand steps of one event: once seconds of Moore rounds and chart copies."""
    text = " ; ".join(["test(a)"] * 3000) + " ; act(x)"
    chart = dfa_to_statechart(compile_policy(parse(text)), "long")
    assert len(chart.states()) == 3001
    assert len(chart.transitions) == 3000
    assert chart.action_of("s3000") == "x"


def test_a_chain_of_stars_compiles_in_memory_near_its_own_size() -> None:
    """Each star's closure holds every later star: kept for all of them, 4,000 stars
    once took about 700 MB; the room for kept sets bounds it near the automaton's size."""
    text = " ; ".join(["test(a)*"] * 4000) + " ; test(b) ; act(x)"
    expr = parse(text)
    tracemalloc.start()
    try:
        dfa = compile_policy(expr)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(dfa) == 3
    assert dfa.accepts([("test", "a")] * 9 + [("test", "b"), ("act", "x")])
    assert peak < 60 * 2**20


def test_a_policy_whose_automaton_blows_up_is_refused() -> None:
    """(a|b)* ; a ; then 18 more steps needs 2**19 states; the cap refuses it, naming itself."""
    ab = "(test(a) | test(b))"
    text = f"{ab}* ; test(a) ; " + " ; ".join([ab] * 18) + " ; act(x)"
    with pytest.raises(PolicyCompileError, match=r"more than 10000 automaton states.*max_states="):
        compile_policy(parse(text))
    small = f"{ab}* ; test(a) ; " + " ; ".join([ab] * 4) + " ; act(x)"
    assert len(compile_policy(parse(small), max_states=None)) == 2**5 + 1
    with pytest.raises(PolicyCompileError, match=r"more than 8 automaton states"):
        compile_policy(parse(small), max_states=8)


def _starred_alternatives(n: int) -> str:
    return "(" + " | ".join(f"test(e{i}) ; test(f{i}) ; act(a{i})" for i in range(n)) + ")*"


def test_many_starred_alternatives_compile_to_an_automaton_of_their_own_size() -> None:
    """After each act the automaton is back at one state, not one per alternative."""
    dfa = compile_policy(parse(_starred_alternatives(2000)))
    assert len(dfa) == 2 * 2000 + 1  # the start, then each alternative's two tests


def test_a_chart_whose_transitions_multiply_is_refused_naming_the_cap() -> None:
    """Each action state takes the loop's n moves: n * n transitions, refused past the cap
    before they are built; a cap of None, or a larger one, builds the chart."""
    dfa = compile_policy(parse(_starred_alternatives(600)))
    with pytest.raises(
        PolicyCompileError,
        match=r"more than 250000 transitions \(limit MAX_POLICY_TRANSITIONS = 250000\).*"
        r"max_transitions=N",
    ):
        dfa_to_statechart(dfa, "p")
    small = compile_policy(parse(_starred_alternatives(30)))
    with pytest.raises(PolicyCompileError, match=r"limit max_transitions = 100\)"):
        dfa_to_statechart(small, "p", max_transitions=100)
    chart = dfa_to_statechart(small, "p", max_transitions=None)
    assert len(chart.transitions) == 30 * 30 + 2 * 30


def test_a_cap_passed_by_the_caller_is_the_one_named() -> None:
    ab = "(test(a) | test(b))"
    text = f"{ab}* ; test(a) ; " + " ; ".join([ab] * 6) + " ; act(x)"
    with pytest.raises(PolicyCompileError, match=r"\(limit max_states = 20\)"):
        compile_policy(parse(text), max_states=20)
