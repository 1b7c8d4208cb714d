"""Cost-based strategists and measured costs."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import Any, overload

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import CatalogSpec, Log, build, catalogs, states, system_of

import solvi._run.scheduler
import solvi._run.sync
from solvi import Catalog, Question, SolviError, System
from solvi.catalog import Part
from solvi.costs import MeasuredCosts
from solvi.strategy import (
    CostStrategist,
    _check_readers,
    _walk_back,
    each_reachable_facts,
    fact_cycles,
    reachable_facts,
)


def _score_catalog() -> Catalog:
    cat = Catalog("loans")

    @cat.fn(provides="score", cost=170.0)
    def bureau(ssn: str) -> int:
        return 700

    @cat.fn(provides="score", cost=20.0)
    def history(customer: str) -> int:
        return 650

    @cat.fn(provides="score", cost=500.0)
    def manual(ssn: str, customer: str, override: int) -> int:
        return override

    @cat.check(hard=True)
    def bureau_reachable(ssn: str, score: int) -> bool:
        return score > 0

    @cat.rule
    def approve(score: int) -> bool:
        return score > 600

    return cat


def test_cost_strategist_drops_producers_whose_inputs_are_never_given() -> None:
    """Producers with missing inputs leave the flow instead of blocking the fact."""
    deterministic = System(_score_catalog()).plan({"customer"})
    assert deterministic.question("approve").blocked is not None
    flow = System(_score_catalog(), strategist=CostStrategist()).plan({"customer"})
    assert flow.steps == ("history", "approve")
    assert flow.skipped["bureau"] == "inputs missing: ssn"
    assert flow.skipped["manual"] == "inputs missing: ssn, override"


def test_equivalent_producers_plan_only_the_cheapest_and_keep_governing_checks() -> None:
    """With several producers runnable, only the cheapest is planned; hard checks stay."""
    system = System(_score_catalog(), producers="equivalent")
    flow = system.plan({"ssn", "customer", "override"})
    assert "history" in flow.steps
    assert "bureau" not in flow.steps
    assert flow.skipped["bureau"] == "not needed: score comes from history"
    assert flow.choices["score"]["producer"] == "history"
    assert flow.choices["score"]["source"] == "declared"
    assert flow.question("approve").governing == ("bureau_reachable",)
    res = system.ask({"ssn": "1", "customer": "c", "override": 1})
    assert res.values["score"] == 650
    assert res.trace.plan["score"]["producer"] == "history"


def test_a_hard_check_on_a_dropped_route_still_governs() -> None:
    """A hard check that governs under all producers is kept when a cheaper one is planned."""
    cat = Catalog("kept")

    @cat.fn
    def bureau_file(ssn: str) -> dict[str, int]:
        return {"score": 700, "valid": 0}

    @cat.fn(provides="score", cost=170.0)
    def bureau(bureau_file: dict[str, int]) -> int:
        return bureau_file["score"]

    @cat.fn(provides="score", cost=20.0)
    def history(ssn: str) -> int:
        return 650

    @cat.check(hard=True)
    def file_valid(bureau_file: dict[str, int]) -> bool:
        return bool(bureau_file["valid"])

    @cat.rule
    def approve(score: int) -> bool:
        return score > 600

    system = System(cat, [Question("approve", forced=False)], producers="equivalent")
    flow = system.plan({"ssn"})
    assert flow.steps == ("bureau_file", "file_valid", "history", "approve")
    assert flow.question("approve").governing == ("file_valid",)
    res = system.ask({"ssn": "1"})
    assert (res["approve"].status, res["approve"].guard) == ("forced", "file_valid")


def test_ties_go_to_the_first_declared() -> None:
    """Equal costs choose by declaration order, so plans are deterministic."""
    cat = Catalog("tie")

    @cat.fn(provides="x", cost=1.0)
    def first(k: int) -> int:
        return 1

    @cat.fn(provides="x", cost=1.0)
    def second(k: int) -> int:
        return 2

    @cat.rule
    def answer(x: int) -> int:
        return x

    assert System(cat, producers="equivalent").ask({"k": 0})["answer"].value == 1


def test_bad_cost_options_are_rejected() -> None:
    """Measured costs need equivalent producers; strategist and producers exclude each other."""
    cat = _score_catalog()
    with pytest.raises(ValueError, match='add producers="equivalent"'):
        System(cat, cost_policy="measured")
    with pytest.raises(ValueError, match="either strategist= or producers="):
        System(cat, strategist=CostStrategist(), producers="all")
    with pytest.raises(ValueError, match="min_samples"):
        MeasuredCosts(min_samples=0)
    with pytest.raises(SolviError, match="freeze_costs"):
        System(cat).freeze_costs()


class Latency:
    """Simulated latencies that a test can change mid-run, on a clock of its own.

    A part's call moves the clock on by its latency and nothing else moves it, so
    each measured run time is exactly the latency however loaded the machine is (a
    real 0.5 ms sleep can take longer than a 5 ms one on a busy machine).
    """

    def __init__(self, monkeypatch: pytest.MonkeyPatch, **ms: float) -> None:
        self.ms = dict(ms)
        self.now = 0.0
        for module in (solvi._run.sync, solvi._run.scheduler):
            monkeypatch.setattr(module, "perf_counter", self.clock)

    def clock(self) -> float:
        """The time in seconds, as the drivers read it."""
        return self.now

    def wait(self, name: str) -> None:
        """Let the part's current latency pass on the clock."""
        self.now += self.ms[name] / 1000.0


def _measured(latency: Latency, **settings: object) -> System:
    cat = Catalog("feed")

    @cat.fn(provides="rate")
    def local_table(pair: str) -> float:
        latency.wait("local_table")
        return 1.1

    @cat.fn(provides="rate", cost=300.0)
    def live_feed(pair: str) -> float:
        latency.wait("live_feed")
        return 1.1

    @cat.rule
    def quote(rate: float) -> float:
        return rate

    return System(
        cat,
        [Question("quote")],
        producers="equivalent",
        cost_policy="measured",
        costs=MeasuredCosts(**settings),  # type: ignore[arg-type]  # test settings
    )


def _sources(system: System, n: int) -> list[tuple[str, str]]:
    out = []
    for _ in range(n):
        plan = system.ask({"pair": "EURUSD"}).trace.plan["rate"]
        out.append((plan["producer"], plan["source"]))
    return out


def test_warm_up_then_fastest_then_switch_when_it_slows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each producer is measured min_samples times, then the fastest wins until it slows."""
    latency = Latency(monkeypatch, local_table=1.0, live_feed=8.0)
    system = _measured(latency, min_samples=2, recheck=1000, alpha=0.5)
    warm = _sources(system, 4)
    assert warm == [
        ("local_table", "warm-up"),
        ("local_table", "warm-up"),
        ("live_feed", "warm-up"),
        ("live_feed", "warm-up"),
    ]
    assert _sources(system, 3) == [("local_table", "measured")] * 3
    latency.ms["local_table"] = 20.0
    later = _sources(system, 4)
    assert later[0] == ("local_table", "measured")
    assert later[-1] == ("live_feed", "measured")


def test_recheck_gives_an_unused_producer_one_more_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    """A producer unused for `recheck` asks is tried once again."""
    latency = Latency(monkeypatch, local_table=0.5, live_feed=5.0)
    system = _measured(latency, min_samples=1, recheck=5)
    sources = _sources(system, 12)
    assert sources[:2] == [("local_table", "warm-up"), ("live_feed", "warm-up")]
    assert ("live_feed", "recheck") in sources
    first = sources.index(("live_feed", "recheck"))
    assert first == 6
    assert all(s == ("local_table", "measured") for s in sources[2:first])


def test_freeze_keeps_the_choice_and_unfreeze_resumes(monkeypatch: pytest.MonkeyPatch) -> None:
    """While frozen, a slowdown does not switch producers."""
    latency = Latency(monkeypatch, local_table=0.5, live_feed=5.0)
    system = _measured(latency, min_samples=1, recheck=1000, alpha=1.0)
    _sources(system, 3)
    system.freeze_costs()
    latency.ms["local_table"] = 15.0
    assert _sources(system, 3) == [("local_table", "frozen")] * 3
    system.unfreeze_costs()
    assert _sources(system, 1) == [("live_feed", "measured")]


def test_flow_cache_follows_the_producer_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed choice plans another flow; the old choice's flow is reused when it returns."""
    latency = Latency(monkeypatch, local_table=0.5, live_feed=5.0)
    system = _measured(latency, min_samples=1, recheck=1000)
    flows = [system.ask({"pair": "x"}).flow for _ in range(4)]
    assert flows[0].steps == ("local_table", "quote")
    assert flows[1].steps == ("live_feed", "quote")
    assert flows[2] is flows[0]
    assert flows[3] is flows[0]


def test_cost_book_records_every_part_of_every_request(claims: System) -> None:
    """Each ask folds each part's run time into the cost book."""
    claims.ask({"policy_id": "P1", "claim": {}})
    claims.ask({"policy_id": "P2", "claim": {}})
    book = claims.cost_book
    assert book["policy"].samples == 2
    assert book["fraud_model"].samples == 2
    assert "fraud_rules" not in book
    assert book["policy"].mean_ms >= 0.0


# -- the walk and the cycle search ----------------------------------------------------


def _producers(cat: Catalog) -> dict[str, list[Part]]:
    producers: dict[str, list[Part]] = {}
    for p in cat.parts:
        producers.setdefault(p.provides, []).append(p)
    return producers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=catalogs(), state=states())
def test_reachable_facts_are_the_planners_facts(spec: CatalogSpec, state: dict[str, int]) -> None:
    """With the request's keys, the walk gives exactly the facts the planner puts in the flow."""
    cat, questions = build(spec, Log())
    flow = system_of(cat, questions).plan(state)
    for q in questions:
        plan = flow.question(q.name)
        if plan.blocked is None:
            assert reachable_facts(q, cat.parts, keys=set(state)) == plan.facts


def test_reachable_facts_by_default_walk_back_to_every_request_key() -> None:
    """Without keys the walk goes through every producer, and adds checks of what it computed."""
    cat = _score_catalog()
    facts = reachable_facts(Question("approve"), cat.parts)
    assert facts == {"approve", "score", "bureau_reachable"}
    assert reachable_facts(Question("everything", uses=("score",)), cat.parts) == {
        "score",
        "bureau_reachable",
    }


def test_reachable_facts_of_a_ruleless_question_are_its_fn_and_check_facts() -> None:
    """A question with no rule and no uses reports fn and check facts; rules are not walked."""
    cat = _score_catalog()
    assert reachable_facts(Question("report"), cat.parts) == {"score", "bureau_reachable"}


def _walk_back_scanning_every_check(
    start: Iterable[str],
    producers: Mapping[str, Sequence[Part]],
    keys: Set[str],
    checks: Sequence[Part],
) -> set[str]:
    """The walk as it was: every check of the catalog looked at again after each one joins."""
    facts: set[str] = set()

    def closure(todo: Iterable[str]) -> None:
        stack = [f for f in todo if f not in keys]
        while stack:
            f = stack.pop()
            if f in facts:
                continue
            facts.add(f)
            for p in producers.get(f, ()):
                stack.extend(i for i in p.inputs if i not in keys and i not in facts)

    closure(start)
    grew = True
    while grew:
        grew = False
        for c in checks:
            f = c.provides
            if f in facts or f in keys or c not in producers.get(f, ()):
                continue
            if all(i in keys or i in facts for i in c.inputs) and any(
                i not in keys for i in c.inputs
            ):
                closure((f,))
                grew = True
    return facts


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=catalogs(), state=states(), data=st.data())
def test_the_walk_finds_what_scanning_every_check_finds(
    spec: CatalogSpec, state: dict[str, int], data: st.DataObject
) -> None:
    """Against brute force: from any start, with any producers kept (as a strategist
    keeps some), looking only at the checks of reached facts finds the same facts."""
    cat, _ = build(spec, Log())
    parts = list(cat.parts)
    kept = [p for p in parts if data.draw(st.booleans())]
    producers: dict[str, list[Part]] = {}
    for p in kept:
        producers.setdefault(p.provides, []).append(p)
    facts = sorted({p.provides for p in parts} | set(state))
    start = data.draw(st.lists(st.sampled_from(facts), max_size=4))
    checks = [p for p in parts if p.kind == "check"]
    assert _walk_back(start, producers, set(state), _check_readers(parts)) == (
        _walk_back_scanning_every_check(start, producers, set(state), checks)
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=catalogs(), state=states())
def test_each_node_names_the_questions_whose_facts_hold_it(
    spec: CatalogSpec, state: dict[str, int]
) -> None:
    """A node's questions are exactly the plans whose facts hold the node's fact."""
    cat, questions = build(spec, Log())
    flow = system_of(cat, questions).plan(state)
    for node in flow.nodes:
        assert node.questions == {q.index for q in flow.questions if node.fact in q.facts}


class _CountedParts(Sequence[Part]):
    """Parts that count how often they are gone through."""

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = list(parts)
        self.passes = 0

    def __iter__(self) -> Iterator[Part]:
        self.passes += 1
        return iter(self.parts)

    def __len__(self) -> int:
        return len(self.parts)

    @overload
    def __getitem__(self, index: int) -> Part: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Part]: ...
    def __getitem__(self, index: int | slice) -> Part | Sequence[Part]:
        return self.parts[index]


def test_each_reachable_facts_go_through_the_parts_once_for_all_questions() -> None:
    """Many questions cost one pass over the parts, not one each (3,000 rules over 9,000
    parts took 9 s to build a System that way), and each gets its own walk."""
    cat = Catalog("many")
    for i in range(50):
        ns: dict[str, Any] = {}
        exec(f"def f{i}(k{i}):\n    return k{i}\ndef r{i}(f{i}):\n    return f{i}", ns)
        cat.fn(ns[f"f{i}"])
        cat.rule(ns[f"r{i}"])
    parts = _CountedParts(cat.parts)
    questions = [Question(f"r{i}") for i in range(50)]
    reached = each_reachable_facts(questions, parts)
    assert parts.passes == 1
    assert reached == tuple(reachable_facts(q, cat.parts) for q in questions)
    assert reached[7] == {"r7", "f7"}


def test_fact_cycles_give_each_fact_its_shortest_cycle() -> None:
    """Two cycles through one fact: each fact gets the shortest path back to itself."""
    cat = Catalog("loops")

    @cat.fn
    def a(b: int, c: int) -> int:
        return b + c

    @cat.fn
    def b(a: int) -> int:
        return a

    @cat.fn
    def c(d: int) -> int:
        return d

    @cat.fn
    def d(a: int, x: int) -> int:
        return a + x

    @cat.fn
    def e(a: int) -> int:
        return a

    cycles = fact_cycles(_producers(cat))
    assert cycles == {
        "a": ("a", "b", "a"),
        "b": ("b", "a", "b"),
        "c": ("c", "a", "d", "c"),
        "d": ("d", "c", "a", "d"),
    }
    assert fact_cycles(_producers(cat), among={"a", "c", "d", "e"}) == {
        "a": ("a", "d", "c", "a"),
        "c": ("c", "a", "d", "c"),
        "d": ("d", "c", "a", "d"),
    }


def test_planner_reports_the_shortest_cycle_through_a_blocked_fact() -> None:
    """The planner's skip reasons are the cycle search's paths."""
    cat = Catalog("loops")

    @cat.fn
    def a(b: int, c: int) -> int:
        return b + c

    @cat.fn
    def b(a: int) -> int:
        return a

    @cat.fn
    def c(a: int) -> int:
        return a

    @cat.rule
    def answer(a: int) -> bool:
        return a > 0

    skipped = System(cat).plan([]).skipped
    assert skipped["a"] == "on a cycle: a -> b -> a"
    assert skipped["c"] == "on a cycle: c -> a -> c"


def test_a_producer_that_closes_a_cycle_is_dropped_not_its_question() -> None:
    """`a` from a key or from `b`, where `b` reads `a`: the producer reading `b` can
    never run first. Planning all producers dropped the whole cycle and answered `r`
    "decided" with no value; it now drops that producer and decides from the key."""
    cat = Catalog("cyc")

    @cat.fn(provides="a")
    def a_from_key(k: int) -> int:
        return k

    @cat.fn(provides="a")
    def a_from_b(b: int) -> int:
        return b

    @cat.fn
    def b(a: int) -> int:
        return a + 200

    @cat.rule
    def r(b: int) -> bool:
        return b > 100

    res = System(cat, strategist=CostStrategist()).ask({"k": 1})
    assert (res["r"].status, res["r"].value) == ("decided", True)
    assert "a_from_b" not in res.flow.steps


def test_a_long_cycle_is_named_short_in_every_reason() -> None:
    """Every part of a cycle of 300 facts got all 300 names in its reason (a cycle of
    5,000 held 220 million characters); the reason now names a dozen and the length."""
    cat = Catalog("ring")
    for i in range(300):
        name, reads = f"c{i}", f"c{(i + 1) % 300}"
        func = _reader(name, reads)
        cat.fn(func)

    @cat.rule
    def r(c0: int) -> bool:
        return c0 > 0

    res = System(cat).ask({})
    assert res["r"].guard == "cycle"
    assert "... (300 facts in all) -> c0" in res["r"].reason
    assert len(res["r"].reason) < 300
    assert all(len(text) < 300 for text in res.flow.skipped.values())


def _reader(name: str, reads: str) -> Any:
    """A part called `name` that reads the fact `reads`."""
    namespace: dict[str, Any] = {}
    exec(f"def {name}({reads}):\n    return 1\n", namespace)  # a test's own code
    return namespace[name]
