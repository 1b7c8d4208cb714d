"""The six checks behind every decision, and the report (channel) each one writes.

Four look at the evidence of one decision (``sources``, ``freshness``, ``agreement``,
``provenance``); two look at the policy and are computed once per module (``shape`` and
the progress check ``game``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from grounded_decision._listing import listed, shown
from grounded_decision.errors import GameTooLarge, ParityUnsolved
from grounded_decision.evidence import Evidence, EvidenceRules
from grounded_decision.policy.automata import cycle_rank
from grounded_decision.policy.parse import Expr, star_height
from grounded_decision.refs import (
    REF_EGGAN,
    REF_KARP,
    REF_MEAN_PAYOFF_GAMES,
    REF_TRUFFET_BAN,
    REF_ZIELONKA,
)
from grounded_decision.statechart.chart import Statechart
from grounded_decision.statechart.game import Limits, compile_game
from grounded_decision.statechart.mean_payoff import MEAN_TOLERANCE, max_mean_payoff
from grounded_decision.statechart.parity import controller_wins_from_start
from grounded_decision.statechart.two_player import mean_payoff_value

__all__ = [
    "CHECK_NAMES",
    "PAYOFFS",
    "PAYOFF_BEST_CASE",
    "PAYOFF_TWO_PLAYER",
    "QUESTIONS",
    "TRUST_ALGORITHM",
    "TRUST_EXACT",
    "TRUST_OPERATIONAL",
    "Channel",
    "Progress",
    "evidence_checks",
    "game_check",
    "is_metric",
    "shape_check",
    "solve_progress",
]

Metric = int | float | bool | str | None

TRUST_OPERATIONAL = "operational"
"""A threshold applied to the data supplied: only as good as that data and the thresholds."""
TRUST_EXACT = "exact"
"""An exhaustive computation over the policy's own graph (reachability, cycle rank)."""
TRUST_ALGORITHM = "algorithm"
"""Published algorithms (cited in ``refs``) whose implementation the tests check by brute force."""

PAYOFF_BEST_CASE = "best-case"
"""Payoff part of the progress check: the best reachable cycle mean, owners ignored (default)."""
PAYOFF_TWO_PLAYER = "two-player"
"""Payoff part of the progress check: the game value, the environment choosing in its states."""
PAYOFFS = (PAYOFF_BEST_CASE, PAYOFF_TWO_PLAYER)
"""The payoff modes a ``Module`` accepts."""

CHECK_NAMES = ("sources", "freshness", "agreement", "provenance", "shape", "game")
"""The six checks, in the order records list them."""

QUESTIONS: Mapping[str, str] = MappingProxyType(
    {
        "sources": "do enough independent sources support the event?",
        "freshness": "is the supporting evidence recent enough?",
        "agreement": "do the observations agree?",
        "provenance": "can every observation be traced to a known origin?",
        "shape": "is every state reachable, with an action to propose?",
        "game": "can the policy keep making progress (parity win, nonnegative mean)?",
    }
)
"""One line per check: the question it answers."""


def is_metric(value: object) -> bool:
    """Whether `value` is a JSON scalar a record may hold: no NaN or infinity, which JSON
    cannot write, and no list or object."""
    if isinstance(value, float):
        return math.isfinite(value)
    return value is None or isinstance(value, bool | int | str)


def _freeze(metrics: Mapping[str, Metric]) -> Mapping[str, Metric]:
    """The metrics, read-only; refused when one is no JSON scalar a record can write
    (a NaN or an infinity would make `Decision.to_json` write bare ``NaN``)."""
    frozen = dict(metrics)
    for key, value in frozen.items():
        if not isinstance(key, str) or not is_metric(value):
            msg = (
                f"check metric {shown(key)} is {shown(value)}; a metric is named by a string "
                f"and is a finite number, a string, true, false or None"
            )
            raise ValueError(msg)
    return MappingProxyType(frozen)


@attrs.frozen
class Channel:
    """The report of one check inside a decision record.

    Parameters:
        name: one of ``CHECK_NAMES``.
        passed: whether the check passed.
        summary: one line saying what was found.
        metrics: the numbers behind the summary (JSON scalars).
        trust: what backs a pass: ``operational``, ``exact`` or ``algorithm``.
        refs: keys of ``grounded_decision.refs.REFS`` the report cites.
    """

    name: str
    passed: bool
    summary: str
    metrics: Mapping[str, Metric] = attrs.field(converter=_freeze, hash=False)
    trust: str
    refs: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "name": self.name,
            "passed": self.passed,
            "summary": self.summary,
            "metrics": dict(self.metrics),
            "trust": self.trust,
            "refs": list(self.refs),
        }


def evidence_checks(evidence: Evidence, rules: EvidenceRules) -> tuple[Channel, ...]:
    """Run the four evidence checks on one decision's evidence."""
    observations = evidence.observations
    supporting = [obs for obs in observations if obs.supports]
    sources = sorted({obs.source for obs in supporting})
    enough = len(sources) >= rules.min_sources
    sources_channel = Channel(
        name="sources",
        passed=enough,
        summary=(
            f"{len(sources)} independent source{'' if len(sources) == 1 else 's'}"
            f" support{'s' if len(sources) == 1 else ''} the event (need {rules.min_sources})"
        ),
        metrics={"supporting_sources": len(sources), "min_sources": rules.min_sources},
        trust=TRUST_OPERATIONAL,
    )
    oldest = max((obs.age_s for obs in supporting), default=None)
    fresh = oldest is not None and oldest <= rules.max_age_s
    freshness = Channel(
        name="freshness",
        passed=fresh,
        summary=(
            "no supporting observation to date"
            if oldest is None
            else f"oldest supporting observation is {oldest:g} s old (limit {rules.max_age_s:g} s)"
        ),
        metrics={"oldest_age_s": oldest, "max_age_s": rules.max_age_s},
        trust=TRUST_OPERATIONAL,
    )
    share = len(supporting) / len(observations) if observations else 0.0
    agreement = Channel(
        name="agreement",
        passed=bool(observations) and share >= rules.min_agreement,
        summary=(
            f"{len(supporting)} of {len(observations)} observations support the event"
            f" (need {rules.min_agreement:.0%})"
        ),
        metrics={
            "supporting": len(supporting),
            "observations": len(observations),
            "min_agreement": rules.min_agreement,
        },
        trust=TRUST_OPERATIONAL,
    )
    untraced = sorted({obs.source for obs in observations if not obs.provenance})
    unknown = (
        []
        if rules.known_sources is None
        else sorted({obs.source for obs in observations} - rules.known_sources)
    )
    problems = [f"no provenance from {listed(untraced)}"] if untraced else []
    problems += [f"unknown sources: {listed(unknown)}"] if unknown else []
    traced = bool(observations) and not problems
    provenance = Channel(
        name="provenance",
        passed=traced,
        summary=(
            "; ".join(problems)
            if problems
            else (
                f"all {len(observations)} observations carry a provenance"
                if observations
                else "no observations"
            )
        ),
        metrics={"untraced": len(untraced), "unknown": len(unknown)},
        trust=TRUST_OPERATIONAL,
    )
    return sources_channel, freshness, agreement, provenance


def shape_check(chart: Statechart, expr: Expr | None = None) -> Channel:
    """Check the policy's shape: every state reachable from the start, an action reachable.

    Also reports the expression's star height (text policies) and the cycle rank of the
    chart's graph, which bounds the star height of the language it accepts.
    """
    start = chart.initial
    reached = [start]
    seen = {start}
    for state in reached:
        for move in chart.outgoing(state):
            if move.target not in seen:
                seen.add(move.target)
                reached.append(move.target)
    unreachable = [name for name in chart.states() if name not in seen]
    actions = sum(1 for name in reached if chart.action_of(name) is not None)
    rank = cycle_rank({name: [m.target for m in chart.outgoing(name)] for name in reached})
    height = None if expr is None else star_height(expr)
    problems = []
    if unreachable:
        problems.append(f"unreachable from {start!r}: {listed([repr(n) for n in unreachable])}")
    if actions == 0:
        problems.append("no reachable state proposes an action")
    summary = (
        "; ".join(problems)
        if problems
        else f"{len(reached)} states, all reachable; {actions} "
        f"{'proposes' if actions == 1 else 'propose'} an action"
    )
    return Channel(
        name="shape",
        passed=not problems,
        summary=summary,
        metrics={
            "states": len(chart.states()),
            "unreachable": len(unreachable),
            "action_states": actions,
            "star_height": height,
            "cycle_rank": rank,
        },
        trust=TRUST_EXACT,
        refs=(REF_EGGAN.key, REF_TRUFFET_BAN.key),
    )


@attrs.frozen
class Progress:
    """The progress check's result, computed once per module.

    Parameters:
        parity_win: the controller wins the parity game from the start.
        nonnegative_mean: the best reachable cycle mean is at least ``-1e-12``.
        best_mean: that best cycle mean, or ``None`` when a solver refused.
        vertices: number of game vertices.
        summary: ``parity_win=... nonnegative_mean=...``, or the refusal's message.
        refused: whether a solver refused (too large or too deep).
        limit: the ``Limits`` field a refusal reached (raise it, or pass ``None``), else
            ``None``.
        payoff: which payoff answer ``nonnegative_mean`` is: ``"best-case"`` (``best_mean``)
            or ``"two-player"`` (``game_value``).
        game_value: the two-player value from the start, rounded to a float; ``None`` in
            best-case mode or when a solver refused.
    """

    parity_win: bool
    nonnegative_mean: bool
    best_mean: float | None
    vertices: int
    summary: str
    refused: bool
    payoff: str = PAYOFF_BEST_CASE
    game_value: float | None = None
    limit: str | None = None

    @property
    def passed(self) -> bool:
        """Both parts hold."""
        return self.parity_win and self.nonnegative_mean


def solve_progress(
    chart: Statechart, limits: Limits, *, payoff: str = PAYOFF_BEST_CASE
) -> Progress:
    """Compile the chart's game and solve both parts; a solver refusal fails both.

    With ``payoff="two-player"`` the payoff part is the exact game value from the start
    (``mean_payoff_value``), with the environment choosing in its states; the default,
    ``"best-case"``, is the best reachable cycle mean with owners ignored.

    Raises:
        ValueError: when ``payoff`` is not one of ``PAYOFFS``.
    """
    if payoff not in PAYOFFS:
        msg = f"payoff must be one of {', '.join(map(repr, PAYOFFS))}, got {payoff!r}"
        raise ValueError(msg)
    value: float | None = None
    try:
        game = compile_game(chart, limits)
        parity_win = controller_wins_from_start(game, limits)
        best = max_mean_payoff(game, limits)
        if payoff == PAYOFF_TWO_PLAYER:
            value = float(mean_payoff_value(game, limits))
    except (GameTooLarge, ParityUnsolved) as exc:
        return Progress(
            False,
            False,
            None,
            len(chart.states()),
            str(exc),
            refused=True,
            payoff=payoff,
            limit=exc.setting,
        )
    nonnegative = (best if value is None else value) >= -MEAN_TOLERANCE
    summary = f"parity_win={parity_win} nonnegative_mean={nonnegative}"
    return Progress(
        parity_win,
        nonnegative,
        best,
        len(game),
        summary,
        refused=False,
        payoff=payoff,
        game_value=value,
    )


def game_check(progress: Progress) -> Channel:
    """Turn a ``Progress`` into the ``game`` channel."""
    return Channel(
        name="game",
        passed=progress.passed,
        summary=progress.summary,
        metrics={
            "parity_win": progress.parity_win,
            "nonnegative_mean": progress.nonnegative_mean,
            "best_mean": progress.best_mean,
            "vertices": progress.vertices,
            "refused": progress.refused,
            "limit": progress.limit,
            "certified": not progress.refused,
            "payoff": progress.payoff,
            "game_value": progress.game_value,
        },
        trust=TRUST_ALGORITHM if progress.passed else TRUST_OPERATIONAL,
        refs=(REF_ZIELONKA.key, REF_KARP.key, REF_TRUFFET_BAN.key)
        if progress.payoff == PAYOFF_BEST_CASE
        else (REF_ZIELONKA.key, REF_KARP.key, REF_MEAN_PAYOFF_GAMES.key, REF_TRUFFET_BAN.key),
    )
