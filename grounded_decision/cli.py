"""The ``grounded-decision`` command: run the examples, check a policy, solve a parity game."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from grounded_decision.checks import QUESTIONS, Channel
from grounded_decision.errors import GroundedDecisionError, PgsolverFormatError, PolicySyntaxError
from grounded_decision.examples import EXAMPLES, TITLES
from grounded_decision.module import Decision, Module
from grounded_decision.policy.parse import parse
from grounded_decision.statechart.certificate import check_certificate
from grounded_decision.statechart.game import NO_LIMITS, GameGraph
from grounded_decision.statechart.parity import ALGORITHMS, solve_parity
from grounded_decision.statechart.pgsolver import read_pgsolver_with_ids, write_solution

__all__ = ["BROKEN_PIPE", "MAX_INPUT_BYTES", "format_channel", "format_decision", "main"]

PROG = "grounded-decision"

BROKEN_PIPE = 141
"""Exit code when the reader of standard output went away (``| head``): 128 + SIGPIPE,
what a shell reports for a tool that the signal ended."""

MAX_INPUT_BYTES = 16 * 2**20
"""Largest policy or game file the command reads (16 MiB); a bigger one is refused."""

_BOM = b"\xef\xbb\xbf"


class _Failure(Exception):
    """A one-line error for the user: a file that cannot be read or written."""


def _out(text: str) -> None:
    """Print to standard output; a full disk or closed terminal is a ``_Failure``."""
    _on_stdout(lambda: print(text))


def _flush() -> None:
    """Flush standard output inside ``main``, so its errors are reported, not left to exit."""
    _on_stdout(sys.stdout.flush)


def _on_stdout(write: Callable[[], None]) -> None:
    """Run a write to standard output; a broken pipe passes through for ``main`` to end."""
    try:
        write()
    except BrokenPipeError:
        raise
    except OSError as exc:
        msg = f"cannot write standard output: {exc.strerror or exc}"
        raise _Failure(msg) from exc


def _read_text(path: str) -> str:
    """The file's text as UTF-8 (a leading byte order mark is skipped)."""
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        msg = f"cannot read {path}: {exc.strerror or exc}"
        raise _Failure(msg) from exc
    if len(data) > MAX_INPUT_BYTES:
        msg = f"cannot read {path}: larger than {MAX_INPUT_BYTES // 2**20} MiB, the most read"
        raise _Failure(msg)
    skip = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skip:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skip + exc.start
        line = data.count(b"\n", 0, offset) + 1
        msg = (
            f"{path}:{line}: not UTF-8 text: byte 0x{data[offset]:02x} at offset {offset};"
            " save the file as UTF-8"
        )
        raise _Failure(msg) from exc


def _check_writable(path: str) -> None:
    """Refuse an output path that cannot be written, before any work is spent on it."""
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        reason = "it is a directory"
    elif not folder.is_dir():
        reason = f"there is no directory {folder}"
    elif not os.access(target if target.exists() else folder, os.W_OK):
        reason = "permission denied"
    else:
        return
    msg = f"cannot write {path}: {reason}; choose another --solution path"
    raise _Failure(msg)


def _write_text(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write {path}: {exc.strerror or exc}"
        raise _Failure(msg) from exc


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
        _out(json.dumps(payload, indent=2, sort_keys=True))
        return 0
    for name, decisions in results.items():
        _out(f"== {name}: {TITLES[name]}")
        for number, decision in enumerate(decisions, start=1):
            _out(format_decision(number, decision))
        _out("")
    return 0


#: the exit code of a check whose game a cap of `Limits` refused (not a failed check)
REFUSED = 4


def _check_policy(path: str, *, as_json: bool, mermaid: bool, no_limits: bool = False) -> int:
    text = _read_text(path)
    try:
        expr = parse(text)
    except PolicySyntaxError as exc:
        where = f"policy line {exc.line}, column {exc.column}: "
        text = str(exc).removeprefix(where)
        print(f"{PROG}: {path}:{exc.line}:{exc.column}: {text}", file=sys.stderr)
        return 1
    module = Module.from_expr(Path(path).stem, expr, NO_LIMITS if no_limits else None)
    if mermaid:
        _out(module.chart.to_mermaid())
        return 0
    channels = module.policy_channels
    if as_json:
        _out(json.dumps([c.to_dict() for c in channels], indent=2, sort_keys=True))
    else:
        _out(f"policy {path}: {expr}")
        for channel in channels:
            _out(format_channel(channel))
    limit = next((c.metrics.get("limit") for c in channels if c.metrics.get("limit")), None)
    if limit is not None:
        print(
            f"{PROG}: {path}: the game check was refused by Limits.{limit}, not failed; "
            f"run with --no-limits to solve it whatever its size",
            file=sys.stderr,
        )
        return REFUSED
    return 0 if all(c.passed for c in channels) else 3


def _read_game(path: str) -> tuple[GameGraph, tuple[int, ...]]:
    """The game in the file and each vertex's id there; format errors name file and line."""
    try:
        return read_pgsolver_with_ids(_read_text(path))
    except PgsolverFormatError as exc:
        msg = f"{path}:{exc.line}: {exc}"
        raise _Failure(msg) from exc


def _solve_game(
    path: str, *, algorithm: str, solution: str | None, verify: bool, as_json: bool
) -> int:
    if solution is not None:
        _check_writable(solution)
    game, ids = _read_game(path)
    started = time.perf_counter()
    solved = solve_parity(game, NO_LIMITS, algorithm=algorithm)
    seconds = time.perf_counter() - started
    if solution is not None:
        _write_text(solution, write_solution(solved.winner, solved.strategy, ids=ids))
    verdict = check_certificate(game, solved.winner, solved.strategy) if verify else None
    even = sum(1 for side in solved.winner if side == 0)
    start_winner = solved.winner[game.start]
    report = {
        "game": path,
        "vertices": len(game),
        "algorithm": solved.algorithm,
        "seconds": round(seconds, 6),
        "steps": solved.steps,
        "even_wins": even,
        "odd_wins": len(game) - even,
        "start": ids[game.start],
        "start_winner": start_winner,
        "verified": None if verdict is None else verdict.valid,
        "problem": None if verdict is None else verdict.problem,
    }
    if as_json:
        _out(json.dumps(report, indent=2, sort_keys=True))
    else:
        _out(
            f"{path}: {len(game)} vertices, {solved.algorithm} in {seconds:.3f} s;"
            f" Even wins {even}, Odd wins {len(game) - even};"
            f" vertex {ids[game.start]} is won by {'Even' if start_winner == 0 else 'Odd'}"
        )
        if verdict is not None:
            _out("certificate: verified" if verdict.valid else f"certificate: {verdict.problem}")
    return 0 if verdict is None or verdict.valid else 3


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Workflow policies whose decisions carry their own checks."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    examples = commands.add_parser("examples", help="run a shipped example and print decisions")
    examples.add_argument("name", nargs="?", help=f"one of: {', '.join(EXAMPLES)}")
    which = examples.add_mutually_exclusive_group()
    which.add_argument("--all", action="store_true", help="run every example")
    which.add_argument("--list", action="store_true", help="list the examples")
    examples.add_argument("--json", action="store_true", help="print the records as JSON")
    check = commands.add_parser("check", help="parse a text policy and run its policy checks")
    check.add_argument("path", help="a file holding the policy text")
    output = check.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the reports as JSON")
    output.add_argument("--mermaid", action="store_true", help="print the chart as Mermaid")
    check.add_argument(
        "--no-limits",
        action="store_true",
        help="solve the game whatever its size (every cap of Limits off)",
    )
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


def _run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Run the parsed command; return its exit code."""
    if args.command == "examples":
        if args.name is not None and (args.all or args.list):
            option = "--all" if args.all else "--list"
            print(f"{PROG}: give an example's name or {option}, not both", file=sys.stderr)
            return 2
        if args.list:
            for name in EXAMPLES:
                _out(f"{name:22} {TITLES[name]}")
            return 0
        if args.all:
            return _run_examples(list(EXAMPLES), args.json)
        if args.name is None:
            parser.error("examples needs a NAME or --all (see --list)")
        if args.name not in EXAMPLES:
            known = ", ".join(EXAMPLES)
            print(
                f"{PROG}: no example named {args.name!r}; choose one of: {known}", file=sys.stderr
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
    return _check_policy(
        args.path, as_json=args.json, mermaid=args.mermaid, no_limits=args.no_limits
    )


def _quiet_broken_pipe() -> int:
    """Point standard output at the null device, so the exit's final flush cannot fail."""
    # ValueError or OSError: standard output has no file descriptor (a test's capture).
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (0 ok, 1 bad input, 2 usage, 3 check
    failed, 4 a check's game refused by a cap of ``Limits``: `REFUSED`).

    ``solve`` exits 3 when ``--verify`` rejects the solution. A file that cannot be read
    or written is 1, with one line naming it; when the reader of standard output goes
    away (``| head``) the command stops quietly with ``BROKEN_PIPE`` (141).
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        code = _run(parser, args)
        _flush()
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except _Failure as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except GroundedDecisionError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
