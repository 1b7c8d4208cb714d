"""The policy caps hold before the work they bound: while reading, or inside the loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from gd_strategies import policies
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded_decision import Module, Statechart, cli, module
from grounded_decision.errors import ChartError, PolicyCompileError, PolicySyntaxError
from grounded_decision.policy import (
    MAX_POLICY_STATES,
    Expr,
    automata,
    compile_policy,
    dfa_to_statechart,
    parse,
)
from grounded_decision.statechart import chart as chart_module


def _chain(steps: int) -> str:
    """``test(e0) ; act(a1) ; test(e2) ; ...``: one automaton state per step, plus the start."""
    return " ; ".join(f"test(e{i})" if i % 2 == 0 else f"act(a{i})" for i in range(steps))


def _refusal(text: str, max_states: int | None = MAX_POLICY_STATES) -> str:
    """What compile_policy says of the whole policy, parsed without a cap."""
    with pytest.raises(PolicyCompileError) as refused:
        compile_policy(parse(text), max_states=max_states)
    return str(refused.value)


def test_a_policy_past_the_state_cap_is_refused_while_it_is_read() -> None:
    """The refusal is compile_policy's, word for word, and comes before the text ends:
    a syntax error at the end of the file is never reached."""
    text = _chain(3 * MAX_POLICY_STATES)
    broken = text + " ; )"
    with pytest.raises(PolicySyntaxError):
        parse(broken)  # without a cap the whole text is read
    with pytest.raises(PolicyCompileError) as refused:
        parse(broken, max_states=MAX_POLICY_STATES)
    assert str(refused.value) == _refusal(text)
    assert "(limit MAX_POLICY_STATES = 10000)" in str(refused.value)


def test_a_cap_given_to_parse_is_the_one_named() -> None:
    """A cap of 20 reads as compile_policy's own refusal for max_states = 20."""
    text = _chain(60)
    with pytest.raises(PolicyCompileError) as refused:
        parse(text, max_states=20)
    assert str(refused.value) == _refusal(text, 20)
    assert "(limit max_states = 20)" in str(refused.value)


def test_a_chain_at_the_state_cap_is_read_whole_and_compiles() -> None:
    """A chain of MAX_POLICY_STATES - 1 steps needs exactly the cap's states: parse and
    compile both take it; one step more is refused by compile_policy, which counts exactly."""
    text = _chain(MAX_POLICY_STATES - 1)
    dfa = compile_policy(parse(text, max_states=MAX_POLICY_STATES))
    assert len(dfa) == MAX_POLICY_STATES
    longer = _chain(MAX_POLICY_STATES)
    expr = parse(longer, max_states=MAX_POLICY_STATES)
    with pytest.raises(PolicyCompileError, match="more than 10000 automaton states"):
        compile_policy(expr)


def test_a_cap_of_zero_still_takes_a_one_state_policy() -> None:
    """compile_policy never refuses its first state, and parse refuses no more than it."""
    assert len(compile_policy(parse("test(a)*", max_states=0), max_states=0)) == 1
    with pytest.raises(PolicyCompileError, match="limit max_states = 0"):
        parse("test(a) ; test(b)", max_states=0)


@settings(max_examples=300, deadline=None)
@given(policies(max_leaves=10), st.integers(min_value=0, max_value=6))
def test_parse_refuses_only_what_compile_policy_refuses(expr: Expr, cap: int) -> None:
    """The count while reading is a lower bound: a policy parse refuses, compile_policy
    refuses with the same words, and parse takes every policy within the cap."""
    text = str(expr)
    early: PolicyCompileError | None = None
    try:
        parse(text, max_states=cap)
    except PolicyCompileError as refused:
        early = refused
    if early is not None:
        assert str(early) == _refusal(text, cap)


def test_check_refuses_a_huge_policy_before_compiling_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """grounded-decision check stops while reading: the compiler is never called."""

    def never(*_: object, **__: object) -> None:
        pytest.fail("compile_policy ran on a policy parse should have refused")

    path = tmp_path / "huge.txt"
    path.write_text(_chain(3 * MAX_POLICY_STATES), encoding="utf-8")
    expected = _refusal(_chain(3 * MAX_POLICY_STATES))
    monkeypatch.setattr(module, "compile_policy", never)
    assert cli.main(["check", str(path)]) == 1
    assert capsys.readouterr().err == f"grounded-decision: {expected}\n"


def test_the_transition_cap_is_reached_before_any_transition_is_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Knowable only from the automaton, the cap is counted in dfa_to_statechart's loop,
    before a single state or transition of the chart exists."""
    text = "(" + " | ".join(f"test(e{i}) ; act(a{i})" for i in range(600)) + ")*"
    dfa = compile_policy(parse(text, max_states=MAX_POLICY_STATES))

    def never(*_: object, **__: object) -> None:
        pytest.fail("the chart was built past the transition cap")

    monkeypatch.setattr(automata, "State", never)
    monkeypatch.setattr(automata, "Transition", never)
    with pytest.raises(PolicyCompileError) as refused:
        dfa_to_statechart(dfa, "p")
    assert "more than 250000 transitions (limit MAX_POLICY_TRANSITIONS = 250000)" in str(
        refused.value
    )


def _events(count: int) -> str:
    """``test(e0) | test(e1) | ...``: two automaton states, one transition per event."""
    return " | ".join(f"test(e{i})" for i in range(count))


def test_a_policy_testing_more_events_than_the_transition_cap_is_refused_while_read() -> None:
    """Each event is a transition at least: past the cap, parse stops before the text
    ends (a syntax error at its end is never reached), naming the limit; at the cap the
    policy is read whole and its chart has exactly that many transitions."""
    broken = _events(60) + " | )"
    with pytest.raises(PolicyCompileError) as refused:
        parse(broken, max_transitions=50)
    assert str(refused.value) == (
        "policy needs a chart of more than 50 transitions (limit max_transitions = 50): it "
        "tests more than 50 different events, each a transition at least; split the policy, "
        "or build the chart with dfa_to_statechart(dfa, name, max_transitions=N) and pass "
        "it to Module(name, chart, expr=expr)"
    )
    chart = dfa_to_statechart(
        compile_policy(parse(_events(50), max_transitions=50)), "p", max_transitions=50
    )
    assert len(chart.transitions) == 50
    with pytest.raises(PolicyCompileError, match="limit MAX_POLICY_TRANSITIONS = 250000"):
        parse(_events(250_001), max_transitions=automata.MAX_POLICY_TRANSITIONS)


@settings(max_examples=300, deadline=None)
@given(policies(max_leaves=10), st.integers(min_value=0, max_value=6))
def test_parse_refuses_for_transitions_only_charts_past_the_cap(expr: Expr, cap: int) -> None:
    """The count of events is a lower bound: a policy parse refuses has more than `cap`
    test moves in its automaton, each of which the chart keeps as a transition."""
    text = str(expr)
    try:
        parse(text, max_transitions=cap)
    except PolicyCompileError:
        dfa = compile_policy(parse(text), max_states=None)
        moves = sum(1 for row in dfa.delta for kind, _ in row if kind == "test")
        assert moves > cap


def test_check_refuses_a_policy_of_too_many_events_before_compiling_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """grounded-decision check stops while reading a flat choice past the transition cap."""

    def never(*_: object, **__: object) -> None:
        pytest.fail("compile_policy ran on a policy parse should have refused")

    path = tmp_path / "events.txt"
    path.write_text(_events(automata.MAX_POLICY_TRANSITIONS + 1), encoding="utf-8")
    monkeypatch.setattr(module, "compile_policy", never)
    assert cli.main(["check", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("grounded-decision: policy needs a chart of more than 250000 transitions")


def test_equal_closures_are_one_object() -> None:
    """In (test(e0) | ... | test(e9))* the start and every move reach the same states; the
    closures share one set, so the subset step finds it by identity, not by comparing
    thousands of elements once per alternative."""
    expr = parse("(" + " | ".join(f"test(e{i})" for i in range(10)) + ")*")
    nfa = automata._Nfa()
    entry, exit_ = nfa.build(expr)
    closures = automata._Closures(nfa, exit_)
    first = closures.of((entry,))
    after = [closures.of((move[1],)) for move in nfa.moves if move is not None]
    assert all(closed == first for closed in after)
    assert all(closed is first for closed in after)


def test_a_chart_is_checked_once_however_often_it_is_validated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The builder, the module and the game compiler each validate a policy's chart; a
    chart of a quarter of a million transitions is walked once, not three times, and an
    invalid chart is refused every time."""
    checked: list[object] = []
    check_payoff = chart_module._check_payoff

    def counting(chart: str, what: str, payoff: object) -> None:
        checked.append(what)
        check_payoff(chart, what, payoff)

    monkeypatch.setattr(chart_module, "_check_payoff", counting)
    built = Module.from_expr("p", parse("(test(a) ; act(x) | test(b) ; act(y))*"))
    assert len(checked) == len(built.chart.states()) + len(built.chart.transitions)
    built.chart.validate()
    assert len(checked) == len(built.chart.states()) + len(built.chart.transitions)
    broken = Statechart("k").state("a", initial=True).on("a", "go", "b")
    for _ in range(2):
        with pytest.raises(ChartError, match="unknown state 'b'"):
            broken.validate()


def _starred_chain(stars: int) -> str:
    """``test(e0)* ; test(e1)* ; ...``: a state per star, each holding every later step."""
    return " ; ".join(f"test(e{i})*" for i in range(stars))


def test_a_long_chain_of_stars_is_refused_before_its_states_fill_memory() -> None:
    """Its states hold n + (n - 1) + ... positions: the room for them is spent, and the
    policy refused, long before the state cap is reached (with a cap of 100, after about
    25 of the 2,001 states); None still caps nothing."""
    built: list[int] = []
    original = automata._Closures.of

    def counted(self: automata._Closures, states: object) -> frozenset[int]:
        built.append(1)
        return original(self, states)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(automata._Closures, "of", counted)
        with pytest.raises(PolicyCompileError) as refused:
            compile_policy(parse(_starred_chain(2_000)), max_states=100)
    assert str(refused.value) == (
        "policy's automaton states would hold more than 50,000 positions of it in all "
        "(limit POSITIONS_PER_STATE = 500 per state of max_states = 100), as a long chain "
        "of starred steps does; shorten it, or compile it with "
        "compile_policy(expr, max_states=None), which caps nothing"
    )
    assert len(built) < 100
    assert len(compile_policy(parse(_starred_chain(300)))) == 300
    assert len(compile_policy(parse(_starred_chain(150)), max_states=None)) == 150
