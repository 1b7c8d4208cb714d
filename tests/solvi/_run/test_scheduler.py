"""The scheduler on its own: a Run driven by hand, with no part ever called.

The driver here is a few lines over `drives`, `readiness`, `attempts` and
`release` (what `solvi._run.sync` is made of): it answers each call the
scheduler asks for from a table of outcomes. That is the whole contract of a
pure state machine: ready steps out, outcomes in, answers out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from time import perf_counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import CatalogSpec, PartSpec, catalogs, declare, states, system_of

from solvi import Catalog, Question, System
from solvi._run.scheduler import (
    CALL,
    FAILED,
    NOT_RUN,
    OK,
    PENDING,
    PRIOR_CALLS,
    START,
    Drive,
    Run,
    attempts,
    by_declaration,
    drives,
    order_policy,
    readiness,
    release,
    take_prior_calls,
)
from solvi._run.steps import NOT_IN_DRIVE, Node, Program, cause_of, compile_flow
from solvi.order import OrderModel
from solvi.response import Response

#: part name -> what its call gives: a value, or an exception it raised
Outcomes = Mapping[str, Any]
#: from the ready nodes (never empty), the position of the one to run next
Pick = Callable[[Sequence[int]], int]


def _never_called(*_args: Any) -> Any:
    raise AssertionError("the hand driver answers every call itself")


def gate_catalog() -> tuple[Catalog, list[Question]]:
    """Two hard checks, a fact with two producers, and a question no check governs."""
    cat = Catalog("gate")

    @cat.fn
    def account(account_id: str) -> Any:
        return _never_called(account_id)

    @cat.check(hard=True)
    def active(account: Any) -> Any:
        return _never_called(account)

    @cat.check(hard=True)
    def allowed(region: str) -> Any:
        return _never_called(region)

    @cat.fn(provides="score")
    def score_model(account: Any) -> Any:
        return _never_called(account)

    @cat.fn(provides="score")
    def score_rules(account: Any) -> Any:
        return _never_called(account)

    @cat.fn
    def limit(score: Any) -> Any:
        return _never_called(score)

    @cat.rule
    def approve(active: Any, allowed: Any, limit: Any) -> Any:
        return _never_called(active, allowed, limit)

    @cat.fn
    def note(account_id: str) -> Any:
        return _never_called(account_id)

    @cat.rule
    def report(note: Any) -> Any:
        return _never_called(note)

    return cat, [Question("approve", forced=False), Question("report")]


KEYS = ("account_id", "region")
PASSING: dict[str, Any] = {
    "account": {"id": "A1"},
    "active": True,
    "allowed": True,
    "score_model": 0.25,
    "score_rules": 0.5,
    "limit": 900,
    "approve": True,
    "note": "A1",
    "report": "A1 ok",
}


@pytest.fixture(scope="module")
def gate() -> tuple[System, Program]:
    """The gate System and its compiled flow for requests bringing both keys."""
    cat, questions = gate_catalog()
    system = System(cat, questions)
    return system, compile_flow(system.plan(KEYS))


def new_run(program: Program, *, early_exit: bool = True) -> Run:
    """A fresh Run of `program` for the request {account_id: A1, region: eu}."""
    return Run(
        program,
        {"account_id": "A1", "region": "eu"},
        early_exit=early_exit,
        timeout=None,
        started=perf_counter(),
    )


class HandDriver:
    """Carries out what the scheduler asks, answering calls from `outcomes`."""

    def __init__(self, outcomes: Outcomes) -> None:
        self.outcomes = outcomes
        #: (part, its arguments) in the order the scheduler asked for them
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def answer(self, part: str, fact: str) -> tuple[Any, Any]:
        """The reply to one CALL: (value, None) or (None, the Cause of its raise)."""
        outcome = self.outcomes[part]
        if isinstance(outcome, Exception):
            return None, cause_of(outcome, part, fact)
        return outcome, None

    def node(self, run: Run, node: Node) -> None:
        """Run one node: every request its `attempts` yields, answered."""
        plan = attempts(run, node)
        try:
            action, arg = next(plan)
            while True:
                if action == START:
                    reply: Any = run.starting(node, arg)
                else:
                    part, args, _ = arg
                    self.calls.append((part.name, args))
                    reply = self.answer(part.name, node.fact)
                action, arg = plan.send(reply)
        except StopIteration:
            return

    def drive(self, run: Run, drive: Drive, pick: Pick = lambda ready: 0) -> None:
        """Run one drive to its end, in a ready order `pick` chooses."""
        nodes = run.program.nodes
        waiting, first, _ = readiness(run, drive)
        ready = list(first)
        while ready:
            index = ready.pop(pick(ready))
            self.node(run, nodes[index])
            ready.extend(release(waiting, nodes[index].dependents))

    def run(self, run: Run, pick: Pick = lambda ready: 0) -> list[Drive]:
        """Drive the whole request; the drives it was given."""
        seen: list[Drive] = []
        for drive in drives(run):
            seen.append(drive)
            self.drive(run, drive, pick)
        return seen


def facts(program: Program, indices: Sequence[int]) -> list[str]:
    """The facts of these nodes."""
    return [program.nodes[i].fact for i in indices]


def test_phases_put_hard_checks_and_what_they_read_first(gate: tuple[System, Program]) -> None:
    """Phase 0 holds the hard checks and their inputs; everything else waits for phase 1."""
    _, program = gate
    phase0, phase1 = program.phases
    assert facts(program, phase0) == ["account", "active", "allowed"]
    assert facts(program, phase1) == ["score", "limit", "note", "approve", "report"]


def test_readiness_of_a_fresh_phase_and_release_of_its_dependents(
    gate: tuple[System, Program],
) -> None:
    """A phase starts with the nodes that wait for none of it; each finished node frees
    exactly the dependents it was the last wait of."""
    _, program = gate
    run = new_run(program)
    first = next(drives(run))
    assert first == Drive(program.phases[0], phase=0)
    waiting, ready, count = readiness(run, first)
    assert count == 3
    assert facts(program, ready) == ["account", "allowed"]
    account = program.nodes[0]
    assert facts(program, release(waiting, account.dependents)) == ["active"]
    assert waiting[:3] == [0, 0, 0]
    # nodes of the other phase were never in the drive: nothing counts them down to 0
    assert all(left > NOT_IN_DRIVE - len(program.nodes) for left in waiting[3:])
    # the phase's own counts are copied, never worn down
    assert program.phase_waiting[0][:3] == (0, 1, 0)


def test_release_counts_down_only_the_nodes_of_the_drive() -> None:
    """A dependent outside the drive is ignored; one waiting for two is ready after both."""
    waiting = [NOT_IN_DRIVE] * 10
    waiting[4:6] = [2, 1]
    assert release(waiting, (4, 9)) == []
    assert release(waiting, (4, 5)) == [4, 5]
    assert waiting[4:6] == [0, 0]
    assert waiting[9] == NOT_IN_DRIVE - 1


def test_all_checks_passing_runs_every_node_and_answers(gate: tuple[System, Program]) -> None:
    """Passing checks: two drives (phase 0, then all of phase 1), every rule decides, and
    the second producer of score is skipped because the first answered."""
    system, program = gate
    run = new_run(program)
    hand = HandDriver(PASSING)
    seen = hand.run(run)
    assert seen == [
        Drive(program.phases[0], phase=0),
        Drive(program.phases[1], filter_wanted=False, phase=1),
    ]
    assert [name for name, _ in hand.calls] == [
        "account",
        "allowed",
        "active",
        "score_model",
        "note",
        "limit",
        "report",
        "approve",
    ]
    assert dict(hand.calls)["approve"] == (True, True, 900)
    assert run.status == [OK] * len(program.nodes)
    assert run.skip_reasons == {"score_rules": "not needed: score came from score_model"}
    response = Response(run, system.name, system.version)
    assert {n: (a.status, a.value) for n, a in response.answers.items()} == {
        "approve": ("decided", True),
        "report": ("decided", "A1 ok"),
    }


def test_a_failed_hard_check_settles_its_question_and_skips_what_only_it_needed(
    gate: tuple[System, Program],
) -> None:
    """Early exit: once `active` is False the approve question is settled, the second
    drive filters, and score, limit and approve never run; report still does."""
    system, program = gate
    run = new_run(program)
    hand = HandDriver({**PASSING, "active": False})
    seen = hand.run(run)
    assert seen[1] == Drive(program.phases[1], filter_wanted=True, phase=1)
    assert [name for name, _ in hand.calls] == ["account", "allowed", "active", "note", "report"]
    assert run.settled == {0: (1, "failed")}
    assert run.open_mask == 0b10
    not_needed = "not needed: hard check active failed"
    assert run.skip_reasons == {
        "score_model": not_needed,
        "score_rules": not_needed,
        "limit": not_needed,
        "approve": not_needed,
    }
    assert run.status == [OK, OK, OK, NOT_RUN, NOT_RUN, OK, NOT_RUN, OK]
    answer = Response(run, system.name, system.version)["approve"]
    assert (answer.status, answer.value, answer.guard, answer.reason) == (
        "forced",
        False,
        "active",
        "hard check active failed",
    )


def test_a_hard_check_that_raises_is_unevaluated_and_never_forces(
    gate: tuple[System, Program],
) -> None:
    """A raising hard check settles its question as could-not-be-evaluated: it abstains
    naming the error, and the nodes only it needed are skipped saying so."""
    system, program = gate
    run = new_run(program)
    HandDriver({**PASSING, "allowed": ConnectionError("registry down")}).run(run)
    assert run.settled == {0: (2, "unevaluated")}
    assert run.status[2] == FAILED
    assert run.skip_reasons["limit"] == "not needed: hard check allowed could not be evaluated"
    answer = Response(run, system.name, system.version)["approve"]
    assert (answer.status, answer.guard, answer.reason) == (
        "abstained",
        "error",
        "hard check allowed could not be evaluated: allowed: allowed raised ConnectionError: "
        "registry down",
    )


def test_the_first_declared_failing_check_settles_whichever_finished_first(
    gate: tuple[System, Program],
) -> None:
    """Both checks fail: the question is settled by the first declared, active."""
    _, program = gate
    run = new_run(program)
    HandDriver({**PASSING, "active": False, "allowed": False}).run(run, lambda ready: -1)
    assert run.settled == {0: (1, "failed")}


def test_a_failing_producer_falls_back_to_the_next(gate: tuple[System, Program]) -> None:
    """score_model raising makes the scheduler ask for score_rules on the same inputs."""
    _, program = gate
    run = new_run(program)
    hand = HandDriver({**PASSING, "score_model": TimeoutError("slow")})
    hand.run(run)
    assert [c for c in hand.calls if c[0].startswith("score")] == [
        ("score_model", ({"id": "A1"},)),
        ("score_rules", ({"id": "A1"},)),
    ]
    assert run.vals["score"] == 0.5
    assert run.failures == 1
    assert "score_rules" not in run.skip_reasons


def test_a_missing_input_blocks_the_node_without_a_call(gate: tuple[System, Program]) -> None:
    """Every producer of score failing leaves limit blocked (never asked for) and approve
    abstaining with the first failure's cause."""
    system, program = gate
    run = new_run(program)
    hand = HandDriver(
        {**PASSING, "score_model": ValueError("no model"), "score_rules": ValueError("no rule")}
    )
    hand.run(run)
    assert "limit" not in dict(hand.calls)
    assert (
        run.skip_reasons["limit"]
        == "inputs missing: score (score_rules raised ValueError: no rule)"
    )
    answer = Response(run, system.name, system.version)["approve"]
    assert (answer.status, answer.guard, answer.reason) == (
        "abstained",
        "error",
        "score: score_rules raised ValueError: no rule",
    )


def test_without_early_exit_every_node_runs_and_settling_comes_last(
    gate: tuple[System, Program],
) -> None:
    """early_exit=False: phase 1 is driven whole, and the question is settled only after."""
    system, program = gate
    run = new_run(program, early_exit=False)
    hand = HandDriver({**PASSING, "active": False})
    plan = drives(run)
    hand.drive(run, next(plan))
    second = next(plan)
    assert second == Drive(program.phases[1], phase=1)
    assert run.settled == {}
    hand.drive(run, second)
    assert next(plan, None) is None
    assert run.settled == {0: (1, "failed")}
    assert "approve" in dict(hand.calls)
    assert Response(run, system.name, system.version)["approve"].status == "forced"


class _Journal:
    """A journal that notes what the scheduler tells it, and may refuse a start."""

    def __init__(self, refuse: str | None = None) -> None:
        self.refuse = refuse
        self.told: list[tuple[Any, ...]] = []

    def start(self, node: int, part: str) -> None:
        self.told.append(("start", node, part))
        if part == self.refuse:
            raise OSError("disk full")

    def settled(self, node: int, part: str, value: Any, cause: Any) -> None:
        self.told.append(("settled", node, part, value, None if cause is None else cause.kind))


def test_with_a_journal_each_start_is_asked_for_before_its_call(
    gate: tuple[System, Program],
) -> None:
    """A journaled run yields START before CALL, and the outcome is told after it."""
    _, program = gate
    run = new_run(program)
    run.journal = journal = _Journal()
    plan = attempts(run, program.nodes[0])
    assert next(plan) == (START, 0)
    assert run.starting(program.nodes[0], 0) is None
    action, (part, args, _) = plan.send(None)
    assert (action, part.name, args) == (CALL, "account", ("A1",))
    with pytest.raises(StopIteration):
        plan.send(({"id": "A1"}, None))
    assert journal.told == [
        ("start", 0, "account"),
        ("settled", 0, "account", {"id": "A1"}, None),
    ]


def test_a_start_the_journal_refuses_is_never_called(gate: tuple[System, Program]) -> None:
    """A refused start fails that producer with the journal's error and moves on to the
    next producer, which is called."""
    _, program = gate
    run = new_run(program)
    run.journal = _Journal(refuse="score_model")
    hand = HandDriver(PASSING)
    hand.node(run, program.nodes[0])
    hand.node(run, program.nodes[3])
    assert [name for name, _ in hand.calls] == ["account", "score_rules"]
    assert run.attempts[1][5:] == (
        "error",
        "was not started: journal could not record the start: OSError: disk full",
    )
    assert run.vals["score"] == 0.5


class _Policy:
    """An order policy with fixed chances of failing per check."""

    features: tuple[str, ...] = ()

    def __init__(self, p_fail: Mapping[str, float]) -> None:
        self.p = p_fail

    def row(self, vals: Mapping[str, Any], keys: Any) -> dict[str, float]:
        return {}

    def p_fail(self, check: str, row: Mapping[str, float]) -> float:
        return self.p[check]


def test_a_learned_order_runs_the_likeliest_failure_first(gate: tuple[System, Program]) -> None:
    """Under an order policy each drive is one hard check and what it reads, best score
    first; once a later-declared check failed, the earlier-declared one of its question
    runs next (it decides under declared guards), and the order lines say why."""
    _, program = gate
    run = new_run(program)
    hand = HandDriver({**PASSING, "allowed": False})
    policy = _Policy({"active": 0.1, "allowed": 0.9})
    seen = []
    for drive in drives(run, policy, lambda node: 1.0):
        seen.append(facts(program, drive.indices))
        for i in run.still_to_run(drive.indices, drive.filter_wanted):
            hand.node(run, program.nodes[i])
    assert seen == [
        ["allowed"],
        ["account", "active"],
        ["score", "limit", "note", "approve", "report"],
    ]
    assert [str(line) for line in run.order_lines] == [
        "allowed: P(fail) 0.90 × saves 5.0 ms ÷ costs 1.0 ms = 4.5 → failed",
        "active: P(fail) 0.10 × saves 3.0 ms ÷ costs 2.0 ms = 0.15 [unblocks approve "
        "(already decided by a failed check)] → passed; settles approve",
    ]
    assert run.settled == {0: (2, "failed")}
    assert [name for name, _ in hand.calls] == ["allowed", "account", "active", "note", "report"]
    assert run.skip_reasons["approve"] == "not needed: hard check allowed failed"


# -- the scheduler by hand against System.ask, on random catalogs ------------------------


def _outcome(part: PartSpec) -> st.SearchStrategy[Any]:
    value = st.booleans() if part.kind == "check" else st.integers(0, 9)
    return st.one_of(value, st.just(("raise", part.name)))


def _table(spec: CatalogSpec) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({p.name: _outcome(p) for p in spec.parts})


def _tabled(spec: CatalogSpec, table: Mapping[str, Any]) -> tuple[Catalog, list[Question]]:
    """The spec's catalog, each part answering from `table` (a raise is a ValueError)."""
    funcs = []
    for p in spec.parts:
        namespace: dict[str, Any] = {"table": table, "name": p.name}
        source = (
            f"def {p.name}({', '.join(p.inputs)}):\n"
            "    out = table[name]\n"
            "    if type(out) is tuple:\n"
            "        raise ValueError(f'{name} refused')\n"
            "    return out\n"
        )
        exec(source, namespace)
        funcs.append(namespace[p.name])
    return declare(spec, funcs)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=catalogs(max_facts=6), state=states(), early_exit=st.booleans(), data=st.data())
def test_driven_by_hand_in_any_ready_order_it_answers_as_ask_does(
    spec: CatalogSpec, state: dict[str, int], early_exit: bool, data: st.DataObject
) -> None:
    """Random catalogs and outcomes: the scheduler driven by hand, ready nodes taken in a
    random order, gives `ask`'s answers, record hash and calls."""
    table = data.draw(_table(spec), label="outcomes")
    cat, questions = _tabled(spec, table)
    system = system_of(cat, questions)
    asked = system.ask(state, early_exit=early_exit)
    hand_outcomes = {
        name: ValueError(f"{name} refused") if type(out) is tuple else out
        for name, out in table.items()
    }
    run = Run(
        compile_flow(system.plan(state)),
        dict(state),
        early_exit=early_exit,
        timeout=None,
        started=perf_counter(),
    )
    hand = HandDriver(hand_outcomes)
    hand.run(run, lambda ready: data.draw(st.integers(0, len(ready) - 1), label="next"))
    by_hand = Response(run, system.name, system.version)
    assert by_hand.answers == asked.answers
    assert by_hand.hash == asked.hash
    assert sorted(name for name, _ in hand.calls) == sorted(s.part for s in asked.trace.steps)
    assert PENDING not in run.status
    system.close()


def test_order_policy_resolves_default_learned_and_an_object_of_ones_own() -> None:
    model = OrderModel()

    class Oracle:
        def row(self, vals: Any, init_keys: Any) -> dict[str, float]:
            return {}

        def p_fail(self, check: str, row: dict[str, float]) -> float:
            return 0.5

    oracle = Oracle()
    assert order_policy(None, "default", model) is None
    assert order_policy(None, "learned", model) is model
    assert order_policy("default", "learned", model) is None
    assert order_policy(oracle, "default", model) is oracle
    with pytest.raises(TypeError, match='order must be "default", "learned"'):
        order_policy("fastest", "default", model)
    assert by_declaration(model, model, "declared")
    assert not by_declaration(model, model, "found")
    assert not by_declaration(oracle, model, "declared")  # ranked by its own odds


def test_the_calls_before_a_request_are_taken_once() -> None:
    """The request that starts first takes them; one its part makes finds none."""
    prior = (("amount", "amount", 1.0, 2.0, "ok", None),)
    token = PRIOR_CALLS.set(prior)
    try:
        assert take_prior_calls() == prior
        assert take_prior_calls() == ()
    finally:
        PRIOR_CALLS.reset(token)
    assert take_prior_calls() == ()
