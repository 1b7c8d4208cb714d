"""Module(payoff=...): the best case by default, the two-player value on request, and the record."""

from __future__ import annotations

import pytest

from grounded_decision import Event, Module, Statechart, parse
from grounded_decision.examples.common import well_corroborated_evidence
from grounded_decision.statechart import Limits


def customer_retries() -> Statechart:
    """A costly retry state the customer controls, with a paying way out they may never take."""
    return (
        Statechart("retries")
        .state("submitted", initial=True)
        .state("retrying", action="retry", payoff=-1.0, environment=True)
        .state("closed", action="close", payoff=1.0)
        .on("submitted", "fail", "retrying")
        .on("retrying", "fail", "retrying")
        .on("retrying", "give_up", "closed")
        .validate()
    )


def test_default_payoff_is_the_best_case_and_says_so() -> None:
    """Without payoff= the check passes on the best route and records payoff: best-case."""
    module = Module(name="retries", chart=customer_retries())
    game = module.decide(Event("fail"), well_corroborated_evidence()).channel("game")
    assert game.passed
    assert game.metrics["payoff"] == "best-case"
    assert game.metrics["game_value"] is None
    assert game.metrics["best_mean"] == 1.0
    assert game.refs == ("zielonka-1998", "karp-1978", "no-tropical-elimination")


def test_two_player_payoff_lets_the_environment_choose() -> None:
    """With payoff='two-player' the customer can keep failing, so the check fails."""
    module = Module(name="retries", chart=customer_retries(), payoff="two-player")
    record = module.decide(Event("fail"), well_corroborated_evidence())
    game = record.channel("game")
    assert record.verdict.value == "abstain"
    assert game.summary == "parity_win=True nonnegative_mean=False"
    assert (game.metrics["payoff"], game.metrics["game_value"]) == ("two-player", -1.0)
    assert game.metrics["best_mean"] == 1.0
    assert "mean-payoff-games" in game.refs
    assert "no-tropical-elimination" in game.refs


def test_text_policies_take_the_payoff_mode_too() -> None:
    """Module.from_expr passes payoff= through; text policies have all-zero payoffs."""
    module = Module.from_expr(
        "one_shot", parse("test(suspicious) ; act(block)"), payoff="two-player"
    )
    game = module.policy_channels[1]
    assert game.passed
    assert (game.metrics["payoff"], game.metrics["game_value"]) == ("two-player", 0.0)


def test_two_player_refusal_fails_the_check_with_the_limit_message() -> None:
    """Above max_karp_vertices the two-player mode refuses like the best case does."""
    module = Module(
        name="retries",
        chart=customer_retries(),
        limits=Limits(max_karp_vertices=1),
        payoff="two-player",
    )
    game = module.policy_channels[1]
    assert not game.passed
    assert game.summary == "3 vertices exceed the mean-payoff limit 1"
    assert (game.metrics["refused"], game.metrics["payoff"]) == (True, "two-player")


def test_unknown_payoff_is_refused_with_the_choices() -> None:
    """A misspelt payoff mode names both accepted values."""
    with pytest.raises(ValueError, match=r"payoff must be one of 'best-case', 'two-player'"):
        Module(name="retries", chart=customer_retries(), payoff="worst-case")
