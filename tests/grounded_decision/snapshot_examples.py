"""Collect, and write with ``make snapshots``, every shipped example's verdicts and game metrics.

The snapshot is the baseline that a change to priorities, owners or solvers is compared with:
``tests/grounded_decision/test_snapshots.py`` fails when the examples say anything else. After
an intended change, run ``make snapshots`` and review the diff of ``snapshots/examples.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from grounded_decision import Module, parse
from grounded_decision.examples import EXAMPLES, step_json_roundtrip
from grounded_decision.examples.common import two_path_chart
from grounded_decision.examples.incident_response import incident_chart
from grounded_decision.examples.payment import payment_chart
from grounded_decision.examples.retry_loop import retry_chart

SNAPSHOT = Path(__file__).resolve().parent / "snapshots" / "examples.json"


def collect() -> dict[str, Any]:
    """Run every example and keep, per decision, the verdict and the game check's report.

    Also keeps each example policy's game report with the two-player payoff, so a change to
    either answer shows in the diff.
    """
    examples: dict[str, list[dict[str, Any]]] = {}
    for name, run in EXAMPLES.items():
        rows = []
        for decision in run():
            game = decision.channel("game")
            rows.append(
                {
                    "event": decision.event,
                    "entity": decision.entity,
                    "from_state": decision.from_state,
                    "state": decision.extras["state"],
                    "verdict": decision.verdict.value,
                    "proposed_action": decision.proposed_action,
                    "game": {
                        "passed": game.passed,
                        "summary": game.summary,
                        "trust": game.trust,
                        "refs": list(game.refs),
                        "metrics": dict(game.metrics),
                    },
                }
            )
        examples[name] = rows
    return {"examples": examples, "two_player": two_player_reports()}


def two_player_reports() -> dict[str, dict[str, Any]]:
    """Return the game report of every example's policy built with ``payoff="two-player"``."""
    modules = {
        "two_path_module": Module("two_path", two_path_chart(), payoff="two-player"),
        "incident_response": Module("incident_response", incident_chart(), payoff="two-player"),
        "step_json_roundtrip": Module.from_expr(
            "access_requests", parse(step_json_roundtrip.POLICY), payoff="two-player"
        ),
        "retry_loop": Module("retry_loop", retry_chart(), payoff="two-player"),
        "payment": Module("payment", payment_chart(), payoff="two-player"),
    }
    return {
        name: {
            "passed": game.passed,
            "summary": game.summary,
            "trust": game.trust,
            "refs": list(game.refs),
            "metrics": dict(game.metrics),
        }
        for name, module in modules.items()
        for game in module.policy_channels
        if game.name == "game"
    }


def render(data: dict[str, Any]) -> str:
    """Return the snapshot text: sorted keys, two-space indent, one final newline."""
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def main() -> int:
    """Write the snapshot file and say where."""
    SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT.write_text(render(collect()), encoding="utf-8")
    print(f"wrote {SNAPSHOT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
