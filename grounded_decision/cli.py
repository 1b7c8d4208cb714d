"""The ``grounded-decision`` command: run the examples, check a text policy, draw a chart."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from grounded_decision.checks import QUESTIONS, Channel
from grounded_decision.errors import GroundedDecisionError, PolicySyntaxError
from grounded_decision.examples import EXAMPLES, TITLES
from grounded_decision.module import Decision, Module
from grounded_decision.policy.parse import parse

__all__ = ["format_channel", "format_decision", "main"]

PROG = "grounded-decision"


def format_channel(channel: Channel) -> str:
    """Return a check's two lines: name, PASS/FAIL and question; then its summary."""
    status = "PASS" if channel.passed else "FAIL"
    question = QUESTIONS.get(channel.name, "")
    return f"         {channel.name:16} {status}  {question}\n{'':32}{channel.summary}"


def format_decision(number: int, decision: Decision) -> str:
    """Return a readable view of one decision with its six checks."""
    proposal = decision.proposed_action or "nothing"
    lines = [
        f"request {number}: {decision.event!r} for {decision.entity!r},"
        f" {decision.from_state} -> {decision.extras['state']}",
        f"  verdict   {decision.verdict.value} (proposed: {proposal})",
        f"  reason    {decision.reason}",
        *(format_channel(channel) for channel in decision.channels),
    ]
    return "\n".join(lines)


def _run_examples(names: Sequence[str], as_json: bool) -> int:
    results = {name: EXAMPLES[name]() for name in names}
    if as_json:
        payload = {name: [d.to_dict() for d in decisions] for name, decisions in results.items()}
        print(json.dumps(payload, indent=2, sort_keys=True))
        return 0
    for name, decisions in results.items():
        print(f"== {name}: {TITLES[name]}")
        for number, decision in enumerate(decisions, start=1):
            print(format_decision(number, decision))
        print()
    return 0


def _check_policy(path: str, *, as_json: bool, mermaid: bool) -> int:
    text = Path(path).read_text(encoding="utf-8")
    try:
        expr = parse(text)
    except PolicySyntaxError as exc:
        print(f"{PROG}: {path}:{exc.line}:{exc.column}: {exc}", file=sys.stderr)
        return 1
    module = Module.from_expr(Path(path).stem, expr)
    if mermaid:
        print(module.chart.to_mermaid())
        return 0
    channels = module.policy_channels
    if as_json:
        print(json.dumps([c.to_dict() for c in channels], indent=2, sort_keys=True))
    else:
        print(f"policy {path}: {expr}")
        for channel in channels:
            print(format_channel(channel))
    return 0 if all(c.passed for c in channels) else 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Workflow policies whose decisions carry their own checks."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    examples = commands.add_parser("examples", help="run a shipped example and print decisions")
    examples.add_argument("name", nargs="?", help=f"one of: {', '.join(EXAMPLES)}")
    examples.add_argument("--all", action="store_true", help="run every example")
    examples.add_argument("--list", action="store_true", help="list the examples")
    examples.add_argument("--json", action="store_true", help="print the records as JSON")
    check = commands.add_parser("check", help="parse a text policy and run its policy checks")
    check.add_argument("path", help="a file holding the policy text")
    check.add_argument("--json", action="store_true", help="print the reports as JSON")
    check.add_argument("--mermaid", action="store_true", help="print the chart as Mermaid")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 bad input, 2 usage, 3 check failed)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "examples":
            if args.list:
                for name in EXAMPLES:
                    print(f"{name:22} {TITLES[name]}")
                return 0
            if args.all:
                return _run_examples(list(EXAMPLES), args.json)
            if args.name is None:
                parser.error("examples needs a NAME or --all (see --list)")
            if args.name not in EXAMPLES:
                known = ", ".join(EXAMPLES)
                print(
                    f"{PROG}: no example named {args.name!r}; choose one of: {known}",
                    file=sys.stderr,
                )
                return 2
            return _run_examples([args.name], args.json)
        return _check_policy(args.path, as_json=args.json, mermaid=args.mermaid)
    except OSError as exc:
        print(f"{PROG}: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    except GroundedDecisionError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
