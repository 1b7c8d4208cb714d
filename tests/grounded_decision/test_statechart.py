"""Statechart building, validation, stepping, Mermaid export and game compilation."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest

from grounded_decision.errors import ChartError, GroundedDecisionError
from grounded_decision.statechart import (
    FINAL_EVENT,
    GameGraph,
    GameGraphError,
    GameTooLarge,
    Limits,
    State,
    Statechart,
    Transition,
    compile_game,
    max_mean_payoff,
    mean_payoff_value,
)


def _two_state() -> Statechart:
    return (
        Statechart("k")
        .state("a", initial=True)
        .state("b")
        .on("a", "go", "b", payoff=2.0)
        .on("b", "back", "a", payoff=4.0)
    )


def test_builder_returns_new_charts_and_keeps_the_old_one() -> None:
    """Each builder call returns a new chart and leaves the previous value unchanged."""
    base = Statechart("c").state("a", initial=True)
    grown = base.state("b")
    assert base.states() == ("a",)
    assert grown.states() == ("a", "b")


def test_accessors_report_declared_fields() -> None:
    """initial, priority_of, payoff_of and action_of read what state() declared."""
    chart = (
        Statechart("c").state("a", initial=True).state("p", action="page", priority=3, payoff=-0.5)
    )
    assert chart.initial == "a"
    assert chart.priority_of("p") == 3
    assert chart.payoff_of("p") == -0.5
    assert chart.action_of("p") == "page"
    assert chart.action_of("a") is None


def test_step_follows_transitions_and_ignores_unhandled_events() -> None:
    """step moves along a handled event and leaves the state unchanged otherwise."""
    chart = _two_state().validate()
    assert chart.step("a", "go") == "b"
    assert chart.step("b", "back") == "a"
    assert chart.step("a", "back") == "a"
    assert chart.transition("a", "back") is None


def test_step_from_unknown_state_names_known_states() -> None:
    """Stepping from a state the chart lacks raises ChartError listing the known states."""
    with pytest.raises(ChartError, match=r"no state 'zz'; known states: a, b"):
        _two_state().step("zz", "go")


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (Statechart("c").state("a"), r"chart 'c' has no initial state; mark one with initial=True"),
        (
            Statechart("c").state("a", initial=True).state("b", initial=True),
            r"2 initial states \(a, b\)",
        ),
        (
            Statechart("c").state("a", initial=True).on("a", "go", "zz"),
            r"transition a --go--> zz names unknown state 'zz'; declare it with \.state\('zz'\)",
        ),
        (
            Statechart("c").state("a", initial=True).state("b").on("a", "e", "b").on("a", "e", "a"),
            r"state 'a' has two transitions on event 'e'",
        ),
        (
            Statechart("c").state("a", initial=True, priority=1.5),  # type: ignore[arg-type]  # the wrong type is the point
            r"state 'a' has priority 1\.5 \(float\); use a whole number",
        ),
        (
            Statechart("c").state("a", initial=True, payoff=float("nan")),
            r"state 'a' has payoff nan; use a finite number",
        ),
        (
            Statechart("c").state("a", initial=True).on("a", "e", "a", payoff=float("inf")),
            r"transition a --e--> a has payoff inf",
        ),
        (
            Statechart("c").state("a", initial=True).state("a"),
            r"state 'a' is declared twice",
        ),
        (  # an int past a float's range, echoed short rather than in all 401 digits
            Statechart("c").state("a", initial=True, payoff=10**400),
            r"state 'a' has payoff 100000000000000000\.\.\.0000000000000000000; use a finite",
        ),
        (  # past the digits Python turns into text: described, not a raw ValueError
            Statechart("c").state("a", initial=True).on("a", "e", "a", payoff=10**5000),
            r"transition a --e--> a has payoff an int too large to show; use a finite",
        ),
    ],
)
def test_validate_rejects_malformed_charts(chart: Statechart, message: str) -> None:
    """validate names the state or transition at fault and the fix."""
    with pytest.raises(ChartError, match=message) as caught:
        chart.validate()
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, GroundedDecisionError)


def test_to_mermaid_labels_states_and_rewards() -> None:
    """The Mermaid export shows priority and payoff per state and event / reward per arrow."""
    chart = (
        Statechart("i")
        .state("watch", initial=True)
        .state("mitigating", payoff=1.0)
        .on("watch", "alert", "mitigating")
    )
    assert chart.to_mermaid() == (
        "graph LR\n"
        '    s0["watch<br/>priority 0, payoff 0"]\n'
        '    s1["mitigating<br/>priority 0, payoff 1"]\n'
        '    s0 -- "alert / 1.0" --> s1'
    )


def test_compile_game_weights_edges_with_target_payoff() -> None:
    """An edge weighs the transition payoff plus the payoff of the state it enters."""
    chart = (
        Statechart("w")
        .state("a", initial=True, payoff=5.0)
        .state("b", payoff=-1.0, environment=True, priority=3)
        .on("a", "go", "b", payoff=2.0)
        .on("b", "back", "a")
    )
    game = compile_game(chart)
    assert game.names == ("a", "b")
    assert game.start == 0
    assert game.edges == (((1, "go", 1.0),), ((0, "back", 5.0),))
    assert game.priority == (0, 3)
    assert game.owner == (0, 1)


def test_compile_game_adds_self_loops_only_to_final_states() -> None:
    """Only states without outgoing transitions get the _final loop, at their own payoff."""
    chart = Statechart("f").state("a", initial=True).state("b", payoff=-1.0).on("a", "e", "b")
    game = compile_game(chart)
    assert game.edges == (((1, "e", -1.0),), ((1, FINAL_EVENT, -1.0),))


def test_compile_game_refuses_charts_above_the_limit() -> None:
    """A chart with more states than max_game_vertices raises GameTooLarge with the count."""
    with pytest.raises(GameTooLarge, match=r"^2 vertices exceed limit 1$") as caught:
        compile_game(_two_state(), Limits(max_game_vertices=1))
    assert (caught.value.vertices, caught.value.limit) == (2, 1)


def test_game_graph_rejects_a_vertex_without_successor() -> None:
    """A hand-built game must give every vertex an outgoing edge."""
    with pytest.raises(GameGraphError, match=r"vertex 1 \('b'\) has no outgoing edge"):
        GameGraph(
            names=("a", "b"), start=0, edges=(((1, "e", 0.0),), ()), priority=(0, 0), owner=(0, 0)
        )


def test_game_graph_rejects_mismatched_lengths() -> None:
    """Names, edges, priorities and owners must have one entry per vertex."""
    with pytest.raises(GameGraphError, match="give one of each per vertex"):
        GameGraph(names=("a",), start=0, edges=(((0, "e", 0.0),),), priority=(0, 1), owner=(0,))


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (
            Statechart("c", (State("a", initial=True, action=5),)),  # type: ignore[arg-type]
            "state 'a' has action 5 (int); give the action's name as a string, or None",
        ),
        (
            Statechart("c", (State(7, initial=True),)),  # type: ignore[arg-type]
            "state 7 has a name of type int; name each state with a string",
        ),
        (
            Statechart("c", (State("a", initial=1),)),  # type: ignore[arg-type]
            "state 'a' has initial=1; give True or False",
        ),
        (
            Statechart("c", (State("a", initial=True, environment="no"),)),  # type: ignore[arg-type]
            "state 'a' has environment='no'; give True or False",
        ),
        (
            Statechart("c", (State("a", initial=True),), (Transition("a", 3, "a"),)),  # type: ignore[arg-type]
            "has event 3 (int); name the event with a string",
        ),
    ],
)
def test_validate_refuses_fields_of_the_wrong_type(chart: Statechart, message: str) -> None:
    """Each of these built a module before, then broke the record's JSON round trip, a
    sort of state names or the Mermaid diagram."""
    with pytest.raises(ChartError, match=re.escape(message)):
        chart.validate()


def _one_vertex(**fields: object) -> GameGraph:
    kwargs: dict[str, object] = {
        "names": ("a",),
        "start": 0,
        "edges": (((0, "e", 0.0),),),
        "priority": (0,),
        "owner": (0,),
    }
    kwargs.update(fields)
    return GameGraph(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"owner": (True,)}, "owner True; use the int 0 or 1"),
        ({"owner": (1.0,)}, "owner 1.0; use the int 0 or 1"),
        ({"priority": (2.0,)}, "priority 2.0; give an int of 0 or more"),
        ({"priority": (1.5,)}, "priority 1.5; give an int of 0 or more"),
        ({"priority": (False,)}, "priority False; give an int of 0 or more"),
        ({"start": True}, "start vertex True is not in 0..0"),
        ({"edges": (((0, "e", Fraction(1, 3)),),)}, "weight Fraction.*give an int or a float"),
        ({"edges": (((0, "e", True),),)}, "weight True of type bool"),
        ({"edges": (((0, "e", "1"),),)}, "weight '1' of type str"),
    ],
)
def test_game_graph_refuses_values_of_the_wrong_type(
    fields: dict[str, object], message: str
) -> None:
    """A value that compares like a good one but is not (True, 2.0, a Fraction) is refused
    where the game is built, not by a solver's raw TypeError later."""
    with pytest.raises(GameGraphError, match=message):
        _one_vertex(**fields)


def test_int_weights_solve_as_their_floats_do() -> None:
    """A hand-built game may weigh its edges with ints (Python 3.11 has no int.is_integer)."""
    as_int = _one_vertex(edges=(((0, "e", 3),),))
    as_float = _one_vertex(edges=(((0, "e", 3.0),),))
    assert max_mean_payoff(as_int) == max_mean_payoff(as_float) == 3.0
    assert mean_payoff_value(as_int) == mean_payoff_value(as_float) == 3


def test_to_mermaid_escapes_names_that_would_add_nodes() -> None:
    """A state, action or event name holding quotes or brackets stays inside its label."""
    evil = 'a"]-->evil["b'
    chart = (
        Statechart("hostile")
        .state(evil, initial=True, action='x"<b>')
        .state("done")
        .on(evil, 'go"]-->x["', "done")
    )
    text = chart.to_mermaid()
    assert '"]-->' not in text
    assert "a#quot;]--#gt;evil[#quot;b" in text
    lines = text.splitlines()
    assert len(lines) == 4  # the header, two states, one arrow: nothing added


@pytest.mark.parametrize(("acting", "words"), [(1, "1 proposes an action"), (2, "2 propose")])
def test_the_shape_summary_counts_the_acting_states_in_good_english(
    acting: int, words: str
) -> None:
    """One state that acts "proposes"; two or more "propose"."""
    from grounded_decision.checks import shape_check

    chart = Statechart("c").state("a", initial=True, action="page")
    if acting == 2:
        chart = chart.state("b", action="call").on("a", "next", "b")
    assert shape_check(chart).summary.endswith(words + (" an action" if acting == 2 else ""))


def test_outgoing_and_shape_check_of_a_large_chart_are_linear() -> None:
    """Twenty thousand states: the shape check once scanned every transition per state."""
    from grounded_decision.checks import shape_check
    from grounded_decision.statechart.chart import State, Transition

    n = 20_000
    states = tuple(
        State(f"s{i}", initial=i == 0, action="go" if i == n - 1 else None) for i in range(n)
    )
    moves = tuple(Transition(f"s{i}", "next", f"s{i + 1}") for i in range(n - 1))
    chart = Statechart("big", states, moves)
    assert chart.outgoing("s5") == (moves[5],)
    assert chart.outgoing(f"s{n - 1}") == ()
    channel = shape_check(chart)
    assert channel.passed
    assert (channel.metrics["states"], channel.metrics["cycle_rank"]) == (n, 0)


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        (
            Statechart("c").state("a", initial=True).state("b", priority=-1).on("a", "go", "b"),
            "state 'b' has priority -1 (int); use a whole number >= 0",
        ),
        (
            Statechart("c")
            .state("a", initial=True)
            .state("b", payoff=1e308)
            .on("a", "go", "b", payoff=1e308),
            "transition a --go--> b and its target's payoff add up to more than a float holds",
        ),
        (Statechart("c").state("a", initial=True, payoff=10**400), "state 'a' has payoff"),
    ],
)
def test_validate_refuses_what_the_game_could_not_hold(chart: Statechart, message: str) -> None:
    """A negative priority, a game weight that overflows, and an int payoff too large for a
    float are the chart's errors, naming the state, not the game builder's later."""
    with pytest.raises(ChartError, match=re.escape(message)):
        chart.validate()
