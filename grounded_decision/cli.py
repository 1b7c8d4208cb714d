"""The ``grounded-decision`` command: run the examples, check a policy, solve a parity game."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from grounded_decision.checks import QUESTIONS, Channel
from grounded_decision.errors import GroundedDecisionError, PolicySyntaxError
from grounded_decision.examples import EXAMPLES, TITLES
from grounded_decision.module import Decision, Module
from grounded_decision.policy.parse import parse
from grounded_decision.statechart.certificate import check_certificate
from grounded_decision.statechart.game import NO_LIMITS
from grounded_decision.statechart.parity import ALGORITHMS, solve_parity
from grounded_decision.statechart.pgsolver import read_pgsolver, write_solution

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


def _solve_game(
    path: str, *, algorithm: str, solution: str | None, verify: bool, as_json: bool
) -> int:
    game = read_pgsolver(Path(path).read_text(encoding="utf-8"))
    started = time.perf_counter()
    solved = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    seconds = time.perf_counter() - started
    if solution is not None:
        Path(solution).write_text(write_solution(solved.winner, solved.strategy), encoding="utf-8")
    verdict = check_certificate(game, solved.winner, solved.strategy) if verify else None
    even = sum(1 for side in solved.winner if side == 0)
    report = {
        "game": path,
        "vertices": len(game),
        "algorithm": solved.algorithm,
        "seconds": round(seconds, 6),
        "steps": solved.steps,
        "even_wins": even,
        "odd_wins": len(game) - even,
        "start_winner": solved.winner[game.start],
        "verified": None if verdict is None else verdict.valid,
        "problem": None if verdict is None else verdict.problem,
    }
    if as_json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print(
            f"{path}: {len(game)} vertices, {solved.algorithm} in {seconds:.3f} s;"
            f" Even wins {even}, Odd wins {len(game) - even};"
            f" vertex {game.start} is won by {'Even' if solved.winner[game.start] == 0 else 'Odd'}"
        )
        if verdict is not None:
            print("certificate: verified" if verdict.valid else f"certificate: {verdict.problem}")
    return 0 if verdict is None or verdict.valid else 3


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
    solve = commands.add_parser("solve", help="solve a parity game in PGSolver format")
    solve.add_argument("path", help="a PGSolver game file (parity N; then one line per vertex)")
    solve.add_argument(
        "--algorithm", choices=ALGORITHMS, default="auto", help="the solver (default: auto)"
    )
    solve.add_argument("--solution", metavar="OUT", help="write the solution (paritysol) here")
    solve.add_argument(
        "--verify", action="store_true", help="check the strategies with the independent checker"
    )
    solve.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 bad input, 2 usage, 3 check failed).

    ``solve`` exits 3 when ``--verify`` rejects the solution.
    """
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
        if args.command == "solve":
            return _solve_game(
                args.path,
                algorithm=args.algorithm,
                solution=args.solution,
                verify=args.verify,
                as_json=args.json,
            )
        return _check_policy(args.path, as_json=args.json, mermaid=args.mermaid)
    except OSError as exc:
        print(f"{PROG}: cannot read {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 1
    except GroundedDecisionError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
