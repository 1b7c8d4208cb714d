"""Properties of planning and `ask` on random catalogs.

A theme file, kept here because it crosses modules: the strategist, the flow and the
sync drivers (the scheduler's own property is in _run/test_scheduler.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from strategies import CatalogSpec, Log, build, catalogs, states, system_of

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(spec=catalogs(), state=states())
def test_flows_are_topological(spec: CatalogSpec, state: dict[str, int]) -> None:
    """Every step's inputs are request keys or facts of earlier steps; phases never go back."""
    cat, questions = build(spec, Log())
    flow = system_of(cat, questions).plan(state)
    seen = set(state)
    last_phase = 0
    for node in flow.nodes:
        assert all(i in seen for i in node.inputs)
        assert node.phase >= last_phase
        last_phase = node.phase
        seen.add(node.fact)
    rules_started = False
    for node in flow.nodes:
        if node.phase == 1 and node.is_rule:
            rules_started = True
        elif node.phase == 1 and rules_started:
            assert any(flow.nodes[d].is_rule for d in node.deps), (
                "a non-rule after a rule must read a rule"
            )


@SETTINGS
@given(spec=catalogs(), state=states())
def test_threads_give_identical_answers_and_hashes(
    spec: CatalogSpec, state: dict[str, int]
) -> None:
    """`workers=1` and `workers=4` produce the same answers and record hash."""
    cat, questions = build(spec, Log())
    system = system_of(cat, questions)
    one = system.ask(state)
    four = system.ask(state, workers=4)
    assert one.answers == four.answers
    assert one.hash == four.hash
    system.close()


@SETTINGS
@given(spec=catalogs(), state=states())
def test_early_exit_does_not_change_answers(spec: CatalogSpec, state: dict[str, int]) -> None:
    """Answers are identical with early exit on and off."""
    cat, questions = build(spec, Log())
    system = system_of(cat, questions)
    assert system.ask(state).answers == system.ask(state, early_exit=False).answers


@SETTINGS
@given(spec=catalogs(), state=states())
def test_nothing_runs_that_a_failed_hard_check_made_unnecessary(
    spec: CatalogSpec, state: dict[str, int]
) -> None:
    """After the hard checks, a part runs only if an open question needs it."""
    log = Log()
    cat, questions = build(spec, log)
    system = system_of(cat, questions)
    res = system.ask(state, workers=2)
    flow = res.flow
    settled = {
        q.index
        for q in flow.questions
        if res[q.name].guard in q.governing
        or (q.governing and res[q.name].reason.startswith("hard check"))
    }
    part_node = {p.name: node for node in flow.nodes for p in node.parts}
    for name in log.names:
        node = part_node[name]
        if node.phase == 1:
            assert node.questions - settled, f"{name} ran though its questions were settled"
    ran = {s.part for s in res.trace.steps}
    assert ran == set(log.names)
    for part, reason in res.trace.skipped:
        assert part not in ran
        assert reason.startswith(("not needed", "inputs missing"))
    system.close()
