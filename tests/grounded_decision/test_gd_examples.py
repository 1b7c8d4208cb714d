"""The shipped examples: the documents' example charts and every example's game check."""

from __future__ import annotations

import pytest

from grounded_decision import Decision, Verdict
from grounded_decision.examples import EXAMPLES
from grounded_decision.examples.common import two_path_chart
from grounded_decision.examples.incident_response import incident_chart
from grounded_decision.statechart import (
    compile_game,
    even_wins,
    max_mean_payoff,
    min_mean_payoff,
    nonnegative_mean,
)


def test_two_path_game_edges() -> None:
    """two_path compiles to the documented edges, with the only self-loop on hold."""
    game = compile_game(two_path_chart())
    assert game.names == ("intake", "auto", "review", "hold")
    assert game.edges == (
        ((1, "routine", 1.0), (2, "escalation", 0.5)),
        ((3, "hold", 0.0),),
        ((3, "hold", 0.0),),
        ((3, "_final", 0.0),),
    )
    assert even_wins(game) == (True, True, True, True)
    assert max_mean_payoff(game) == 0.0
    assert nonnegative_mean(game)


def test_incident_response_best_mean_is_one_and_a_half() -> None:
    """The best cycle is mitigating <-> resolved (1.5); the paging cycle averages 0.4."""
    game = compile_game(incident_chart())
    assert max_mean_payoff(game) == 1.5
    assert min_mean_payoff(game) == pytest.approx(0.4)
    assert all(even_wins(game))


def test_incident_response_mermaid_shows_rewards() -> None:
    """The incident diagram labels each arrow with its event and reward."""
    diagram = incident_chart().to_mermaid()
    assert 's1 -- "still_bad / -0.2" --> s2' in diagram
    assert 's1 -- "clear / 2.0" --> s3' in diagram
    assert 's2["paging<br/>priority 2, payoff -0.2, action page_oncall"]' in diagram


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_example_passes_its_game_check(name: str) -> None:
    """Each shipped example's decisions all report a passing game check."""
    decisions = EXAMPLES[name]()
    assert decisions
    assert all(d.channel("game").passed for d in decisions)
    assert all(Decision.from_json(d.to_json()) == d for d in decisions)


def test_step_json_roundtrip_request_three() -> None:
    """The third request is an approval before any request: nothing is proposed."""
    decisions = EXAMPLES["step_json_roundtrip"]()
    assert [d.verdict for d in decisions] == [Verdict.ABSTAIN, Verdict.ACT, Verdict.ABSTAIN]
    assert decisions[1].proposed_action == "grant_access"
    assert decisions[2].reason == (
        "event 'manager_approved' is not handled in state 's0'; nothing proposed"
    )


def test_incident_example_abstains_on_stale_evidence_but_moves() -> None:
    """The escalation on stale data abstains, and the incident still reaches paging."""
    decisions = EXAMPLES["incident_response"]()
    assert [d.verdict.value for d in decisions] == ["act", "abstain", "act", "act", "act"]
    assert decisions[1].extras == {"state": "paging"}
    assert decisions[1].proposed_action == "page_oncall"


def test_payment_customer_state_still_passes() -> None:
    """The customer-owned challenge cannot trap the payment: the service can capture."""
    decisions = EXAMPLES["payment"]()
    assert decisions[1].channel("game").summary == "parity_win=True nonnegative_mean=True"
    assert decisions[2].reason == "no provenance from hallway_chat"
