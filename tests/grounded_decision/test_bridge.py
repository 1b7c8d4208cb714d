"""The solvi bridge: a chart that cannot keep going forces a solvi question."""

from __future__ import annotations

from grounded_decision import Event, Evidence, Module, Statechart
from grounded_decision.bridge import decision_check, progress_check
from grounded_decision.examples.common import (
    single_source_evidence,
    two_path_module,
    well_corroborated_evidence,
)
from solvi import Catalog, Question, System

STUCK = (
    Statechart("pager")
    .state("watch", initial=True)
    .state("paging", action="page_oncall", priority=1)
    .on("watch", "alert", "paging")
)


def _system(module: Module) -> System:
    cat = Catalog("claims")
    assert progress_check(cat, module, reads="claim", name="policy_ok") == "policy_ok"

    @cat.fn
    def amount(claim: dict[str, float]) -> float:
        return claim["amount"]

    @cat.rule
    def approve(amount: float, policy_ok: bool) -> bool:
        return amount < 1000.0 and policy_ok

    return System(cat, [Question("approve", forced=False)])


def test_stuck_chart_forces_the_question() -> None:
    """A chart whose game fails makes the hard check fail, so the answer is forced."""
    res = _system(Module(name="pager", chart=STUCK)).ask({"claim": {"amount": 10.0}})
    assert res["approve"].status == "forced"
    assert res["approve"].value is False


def test_passing_chart_lets_the_rule_decide() -> None:
    """A chart that can keep going passes the hard check and the rule decides."""
    res = _system(two_path_module()).ask({"claim": {"amount": 10.0}})
    assert res["approve"].status == "decided"
    assert res["approve"].value is True


def test_default_part_name_uses_the_module_name() -> None:
    """Without name=, the part is called <module>_keeps_going."""
    cat = Catalog("c")
    assert progress_check(cat, two_path_module(), reads="x") == "two_path_keeps_going"
    assert "two_path_keeps_going" in cat


def test_decision_check_acts_or_forces() -> None:
    """The whole decision as a hard check: act passes, abstain forces the question."""
    cat = Catalog("ops")
    module = two_path_module()
    gate = decision_check(cat, module, event="event", evidence="evidence")
    assert gate == "two_path_acts"

    @cat.rule
    def proceed(two_path_acts: bool) -> bool:
        return two_path_acts

    system = System(cat, [Question("proceed", forced=False)])
    good: Evidence = well_corroborated_evidence()
    res = system.ask({"event": Event("routine", entity="a"), "evidence": good})
    assert (res["proceed"].status, res["proceed"].value) == ("decided", True)
    thin = single_source_evidence()
    res = system.ask({"event": Event("escalation", entity="b"), "evidence": thin})
    assert (res["proceed"].status, res["proceed"].value) == ("forced", False)
